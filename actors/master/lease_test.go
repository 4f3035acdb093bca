package master_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/journal/journaltest"
	"github.com/foreman-actors/foreman/messages"
)

// leaseStep is a third of the default lease: the holder renews once per
// step, and a waiting master looks at the lease once per step.
const leaseStep = master.DefaultLeaseTTL / 3

// Reference: issue 12 (two backends in a partition both activate the
// master; without a lease each activation fences the other in turn).
func TestMasterLease(t *testing.T) {
	t.Parallel()

	t.Run("TwoMastersOnOneJournalNeverBothAcceptWork", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithLeaseTTL(master.DefaultLeaseTTL))
		b.submit(t, "first") // the first master serves
		// The second, as on the far side of a partition: same journal, its
		// own connection to it.
		second := b.sys.Root.Spawn(mustProps(t, journaltest.NewFaulty(b.mem), b.opts...))
		b.front.Watch(b.master)
		b.front.Watch(second)
		for i := range 8 { // 800 ms: more than two ttls, less than the three a stray waits
			id := fmt.Sprint("w", i)
			b.front.Send(second, &messages.Work{WorkId: id, JobType: "square"})
			r := testkit.ExpectMsgType[*messages.WorkRejected](b.front, testkit.Timeout())
			require.Equal(t, messages.RejectCode_REJECT_CODE_UNAVAILABLE, r.GetCode(), "step %d", i)
			b.submit2(t, b.master, id) // acked, so not fenced; no Terminated came first
			// The first: cleanup, fence check, renewal, lease deadline;
			// the second: its next look at the lease.
			b.advance(t, 1, leaseStep)
		}
		// Three ttls of waiting while the first keeps the lease: the second
		// is a stray and yields.
		b.advance(t, 2, leaseStep)
		b.front.ExpectTerminated(second, testkit.Timeout())
		b.submit2(t, b.master, "still")
		recovered := 0
		for _, ev := range events(t, b.mem) {
			if _, ok := ev.(*messages.MasterRecovered); ok {
				recovered++
			}
		}
		require.Equal(t, 1, recovered, "the second never took an epoch")

		// A graceful stop hands over at once to a master waiting for the
		// lease (activated again, as the cluster does on the next request).
		third := b.sys.Root.Spawn(mustProps(t, journaltest.NewFaulty(b.mem), b.opts...))
		b.front.Send(third, &messages.Work{WorkId: "early", JobType: "square"})
		r := testkit.ExpectMsgType[*messages.WorkRejected](b.front, testkit.Timeout())
		require.Equal(t, messages.RejectCode_REJECT_CODE_UNAVAILABLE, r.GetCode())
		require.NoError(t, b.sys.Root.StopFuture(b.master).Wait())
		b.front.ExpectTerminated(b.master, testkit.Timeout())
		b.advance(t, 1, leaseStep)
		b.submit2(t, third, "after")
		st, err := b.sys.Root.RequestFuture(third, &messages.GetMasterStatus{}, testkit.Timeout()).Result()
		require.NoError(t, err)
		require.Equal(t, int64(11), st.(*messages.MasterStatus).GetPending(), "first, w0..w7, still and after, each once")
	})

	t.Run("GuardKeepsAMasterFromServing", func(t *testing.T) {
		t.Parallel()
		var connected atomic.Bool
		b := setup(t, master.WithLeaseTTL(master.DefaultLeaseTTL), master.WithLeaseGuard(connected.Load))
		b.front.Send(b.master, &messages.Work{WorkId: "a", JobType: "square"})
		r := testkit.ExpectMsgType[*messages.WorkRejected](b.front, testkit.Timeout())
		require.Equal(t, messages.RejectCode_REJECT_CODE_UNAVAILABLE, r.GetCode())
		connected.Store(true)
		b.advance(t, 1, leaseStep)
		b.submit(t, "a")
		b.front.Watch(b.master)
		connected.Store(false)
		b.advance(t, 1, leaseStep) // the next renewal asks the guard
		b.front.ExpectTerminated(b.master, testkit.Timeout())
	})

	t.Run("DefaultIsOn", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithLeaseTTL(master.DefaultLeaseTTL))
		b.submit(t, "a")
		// Props without WithLeaseTTL: the default.
		p, err := master.Props(journaltest.NewFaulty(b.mem), master.WithClock(b.clk))
		require.NoError(t, err)
		other := b.sys.Root.Spawn(p)
		b.front.Send(other, &messages.Work{WorkId: "b", JobType: "square"})
		r := testkit.ExpectMsgType[*messages.WorkRejected](b.front, testkit.Timeout())
		require.Equal(t, messages.RejectCode_REJECT_CODE_UNAVAILABLE, r.GetCode(), "a master with the default options waits for the lease")
		b.submit(t, "b") // and the first is not fenced
	})
}
