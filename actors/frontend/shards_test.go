package frontend_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// TestShardedClient: with three masters (streams master/0..2 of one
// journal) behind route.Sharded, the client sends each work to the master
// route.ShardOf picks, asks that one about it, merges the lists of all,
// shows every shard's status, and reads the result feed of all three with
// one cursor: every result once, and nothing after the last cursor.
func TestShardedClient(t *testing.T) {
	const shards, jobs = 3, 30
	sys := testkit.NewSystem(t)
	mem := journal.NewMemory()
	t.Cleanup(func() { _ = mem.Close() })
	reg := worker.NewRegistry()
	require.NoError(t, reg.Register("echo", func(_ context.Context, p []byte) ([]byte, error) { return p, nil }))
	routes := make([]route.Master, shards)
	pids := make([]*actor.PID, shards)
	for k := range shards {
		props, err := master.Props(mem, master.WithLeaseTTL(0), master.WithStream(route.ShardName(master.DefaultStream, k, shards)))
		require.NoError(t, err)
		pids[k] = sys.Root.Spawn(props)
		routes[k] = route.Fixed(pids[k])
		wprops, err := worker.Props(routes[k], reg, worker.WithWorkerID(fmt.Sprintf("w%d", k)))
		require.NoError(t, err)
		sys.Root.Spawn(wprops)
	}
	sharded, err := route.Sharded(routes...)
	require.NoError(t, err)
	client, err := frontend.NewClient(sys, sharded, frontend.WithAskTimeout(testkit.Timeout()))
	require.NoError(t, err)
	require.Equal(t, shards, client.Shards())

	ctx := context.Background()
	perShard := make([]int64, shards)
	for i := range jobs {
		id := fmt.Sprintf("job-%02d", i)
		require.NoError(t, client.Submit(ctx, &messages.Work{WorkId: id, JobType: "echo", Payload: []byte(id)}))
		perShard[route.ShardOf(id, shards)]++
	}
	for i := range jobs {
		id := fmt.Sprintf("job-%02d", i)
		require.Eventually(t, func() bool {
			st, err := client.WorkStatus(ctx, id)
			return err == nil && st.GetStatus() == messages.WorkStatus_WORK_STATUS_DONE
		}, testkit.Timeout(), 10*time.Millisecond, "work %s not done", id)
	}
	for _, st := range client.ShardStatus(ctx) {
		require.NoError(t, st.Err)
		require.Equal(t, perShard[st.Shard], st.Status.GetAcceptedTotal(), "shard %d accepted other works than its own", st.Shard)
	}
	list, err := client.ListWork(ctx, messages.WorkStatus_WORK_STATUS_DONE, 0)
	require.NoError(t, err)
	require.EqualValues(t, jobs, list.GetTotal())
	require.Len(t, list.GetWorks(), jobs)

	seen := map[string]int{}
	var cursor frontend.Cursor
	for len(seen) < jobs {
		page, err := client.ReadFeed(ctx, cursor, 7, time.Second)
		require.NoError(t, err)
		require.NotEmpty(t, page.Entries, "the feed stopped at %s with %d of %d results", cursor, len(seen), jobs)
		for _, e := range page.Entries {
			seen[e.GetWorkId()]++
		}
		cursor = page.Entries[len(page.Entries)-1].Cursor
	}
	for id, n := range seen {
		require.Equal(t, 1, n, "result of %s read %d times", id, n)
	}
	require.Equal(t, shards, cursor.Shards(), "the cursor names every shard: %s", cursor)
	page, err := client.ReadFeed(ctx, cursor, 0, 0)
	require.NoError(t, err)
	require.Empty(t, page.Entries, "entries after the last cursor")

	_, err = client.ReadFeed(ctx, cursor.With(shards, 0), 0, 0)
	require.ErrorIs(t, err, frontend.ErrInvalidCursor, "a cursor naming a fourth shard")
}
