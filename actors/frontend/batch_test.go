package frontend_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// TestSubmitMany: 3 shards (masters on streams master/0..2 of one journal,
// each behind a write-counting journal); SubmitMany sends each work to its
// shard's master in chunks and answers every work in order: a batch of
// 2,500 becomes one journal write per shard, not 2,500; repeats
// are acked once; a bad work is refused alone; a second SubmitMany of the
// same works writes nothing.
func TestSubmitMany(t *testing.T) {
	t.Parallel()
	const shards, jobs = 3, 2500
	sys := testkit.NewSystem(t)
	mem := journal.NewMemory()
	t.Cleanup(func() { _ = mem.Close() })
	routes := make([]route.Master, shards)
	counted := make([]*countingJournal, shards)
	for k := range shards {
		counted[k] = &countingJournal{Journal: mem}
		props, err := master.Props(counted[k], master.WithLeaseTTL(0), master.WithMaxPayload(64),
			master.WithStream(route.ShardName(master.DefaultStream, k, shards)))
		require.NoError(t, err)
		routes[k] = route.Fixed(sys.Root.Spawn(props))
	}
	sharded, err := route.Sharded(routes...)
	require.NoError(t, err)
	client, err := frontend.NewClient(sys, sharded, frontend.WithAskTimeout(testkit.Timeout()))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Timeout())
	defer cancel()
	for k := range shards { // every master serving before writes are counted
		require.NoError(t, client.Submit(ctx, &messages.Work{WorkId: fmt.Sprint("warm-", k), JobType: "echo"}))
	}

	works := make([]*messages.Work, 0, jobs+4)
	perShard := make([]int, shards)
	for i := range jobs {
		id := fmt.Sprintf("job-%04d", i)
		works = append(works, &messages.Work{WorkId: id, JobType: "echo", Payload: []byte("1")})
		perShard[route.ShardOf(id, shards)]++
	}
	works = append(works,
		&messages.Work{WorkId: "job-0001", JobType: "echo", Payload: []byte("1")}, // a repeat
		&messages.Work{WorkId: "too-big", JobType: "echo", Payload: []byte(strings.Repeat("x", 65))},
		nil,
		&messages.Work{JobType: "echo"}, // no id
	)
	before := make([]int64, shards)
	for k, c := range counted {
		before[k] = c.appends.Load()
	}
	errs := client.SubmitMany(ctx, works)
	require.Len(t, errs, len(works))
	for i := range jobs + 1 {
		require.NoError(t, errs[i], works[i].GetWorkId())
	}
	require.ErrorIs(t, errs[jobs+1], frontend.ErrRejected)
	require.Contains(t, errs[jobs+1].Error(), "over the limit of 64")
	require.ErrorIs(t, errs[jobs+2], frontend.ErrInvalidWork)
	require.ErrorIs(t, errs[jobs+3], frontend.ErrInvalidWork)
	for k, c := range counted {
		// perShard[k] is about 833, under the 1,000 works of one chunk:
		// one journal write, where one Submit per work would make hundreds.
		require.EqualValues(t, 1, c.appends.Load()-before[k], "shard %d's journal writes for %d works", k, perShard[k])
		require.EqualValues(t, perShard[k]+1, acceptedOn(t, client, k))
		before[k] = c.appends.Load()
	}

	// The same works again: acked, nothing new written.
	errs = client.SubmitMany(ctx, works[:jobs])
	for i, err := range errs {
		require.NoError(t, err, works[i].GetWorkId())
	}
	for k, c := range counted {
		require.Equal(t, before[k], c.appends.Load(), "shard %d wrote duplicates", k)
		require.EqualValues(t, perShard[k]+1, acceptedOn(t, client, k))
	}
}

// countingJournal counts the appends that reach the journal.
type countingJournal struct {
	persistence.Journal
	appends atomic.Int64
}

func (c *countingJournal) Append(ctx context.Context, stream string, epoch int64, events []persistence.Event) error {
	c.appends.Add(1)
	return c.Journal.Append(ctx, stream, epoch, events)
}

func (c *countingJournal) AppendAsync(stream string, epoch int64, events []persistence.Event, done func(error)) {
	c.appends.Add(1)
	c.Journal.AppendAsync(stream, epoch, events, done)
}

// acceptedOn returns shard k's accepted total.
func acceptedOn(t *testing.T, c *frontend.Client, k int) int64 {
	t.Helper()
	for _, st := range c.ShardStatus(t.Context()) {
		if st.Shard == k && st.Err == nil {
			return st.Status.GetAcceptedTotal()
		}
	}
	return -1
}
