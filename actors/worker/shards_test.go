package worker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// TestWorkerPullsFromEveryShard: one worker on a route over two shards
// registers with both masters and drains both: shard 0 gets a backlog
// first, shard 1 gets work only while the worker is busy with shard 0's
// (it learns of it from shard 1's WorkIsReady). A worker bound to one
// master would leave the other's work pending for ever.
func TestWorkerPullsFromEveryShard(t *testing.T) {
	const shards = 2
	sys := testkit.NewSystem(t)
	mem := journal.NewMemory()
	t.Cleanup(func() { _ = mem.Close() })
	routes := make([]route.Master, shards)
	for k := range shards {
		props, err := master.Props(mem, master.WithLeaseTTL(0), master.WithStream(route.ShardName(master.DefaultStream, k, shards)))
		require.NoError(t, err)
		routes[k] = route.Fixed(sys.Root.Spawn(props))
	}
	sharded, err := route.Sharded(routes...)
	require.NoError(t, err)
	client, err := frontend.NewClient(sys, sharded, frontend.WithAskTimeout(testkit.Timeout()))
	require.NoError(t, err)

	reg := worker.NewRegistry()
	require.NoError(t, reg.Register("nap", func(ctx context.Context, p []byte) ([]byte, error) {
		select {
		case <-time.After(5 * time.Millisecond): // real time: the jobs must overlap the second submission
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return p, nil
	}))
	props, err := worker.Props(sharded, reg, worker.WithWorkerID("w"), worker.WithWindow(2))
	require.NoError(t, err)
	sys.Root.Spawn(props)

	// ids of each shard.
	idsOf := func(k, n int) []string {
		var ids []string
		for i := 0; len(ids) < n; i++ {
			if id := fmt.Sprintf("k%d-%d", k, i); route.ShardOf(id, shards) == k {
				ids = append(ids, id)
			}
		}
		return ids
	}
	ctx := context.Background()
	busy, idle := idsOf(0, 20), idsOf(1, 3)
	for _, id := range busy {
		require.NoError(t, client.Submit(ctx, &messages.Work{WorkId: id, JobType: "nap"}))
	}
	for _, id := range idle {
		require.NoError(t, client.Submit(ctx, &messages.Work{WorkId: id, JobType: "nap"}))
	}
	want := []int64{int64(len(busy)), int64(len(idle))}
	require.Eventually(t, func() bool {
		for _, st := range client.ShardStatus(ctx) {
			if st.Err != nil || st.Status.GetDone() != want[st.Shard] {
				return false
			}
		}
		return true
	}, testkit.Timeout(), 10*time.Millisecond, "both shards drain with one worker")
	for _, st := range client.ShardStatus(ctx) {
		require.EqualValues(t, 1, st.Status.GetIdleWorkers()+st.Status.GetBusyWorkers(), "shard %d: the worker registered with it", st.Shard)
	}
}

// TestWorkerSaysItsShards: a worker on a route over three shards tells each
// master so when it registers, so a master of another number of shards can
// say that the worker's node has the wrong --shards.
func TestWorkerSaysItsShards(t *testing.T) {
	sys := testkit.NewSystem(t)
	probes := []*testkit.Probe{testkit.NewProbe(t, sys), testkit.NewProbe(t, sys), testkit.NewProbe(t, sys)}
	routes := make([]route.Master, len(probes))
	for k, p := range probes {
		routes[k] = route.Fixed(p.PID())
	}
	sharded, err := route.Sharded(routes...)
	require.NoError(t, err)
	props, err := worker.Props(sharded, worker.NewRegistry(), worker.WithWorkerID("w"))
	require.NoError(t, err)
	pid := sys.Root.Spawn(props)
	t.Cleanup(func() { _ = sys.Root.StopFuture(pid).Wait() })
	for k, p := range probes {
		reg := testkit.ExpectMsgType[*messages.RegisterWorker](p, testkit.Timeout())
		require.EqualValues(t, len(probes), reg.GetShards(), "shard %d", k)
	}
}
