package master_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
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
			b.front.Send(second, &messages.Work{WorkId: id, JobType: "square"}) // held: it waits for the lease
			b.submit2(t, b.master, id)                                          // acked, so not fenced; no Terminated came first
			// The first: cleanup, fence check, renewal, lease deadline;
			// the second: its next look at the lease.
			b.advance(t, 5, leaseStep)
		}
		// Three ttls of waiting while the first keeps the lease: the second
		// is a stray, yields, and turns away what it held.
		b.advance(t, 5, leaseStep)
		got := b.front.ReceiveN(9, testkit.Timeout()) // the rejections and Terminated, in any order
		require.Len(t, got, 9)
		var rejected []string
		terminated := false
		for _, env := range got {
			switch m := env.(type) {
			case *messages.WorkRejected:
				require.Equal(t, messages.RejectCode_REJECT_CODE_UNAVAILABLE, m.GetCode())
				rejected = append(rejected, m.GetWorkId())
			case *actor.Terminated:
				terminated = m.GetWho().Equal(second)
			}
		}
		require.True(t, terminated, "the stray stopped")
		require.Equal(t, []string{"w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7"}, rejected, "what it held, in order")
		b.submit2(t, b.master, "still")
		recovered := 0
		for _, ev := range events(t, b.mem) {
			if _, ok := ev.(*messages.MasterRecovered); ok {
				recovered++
			}
		}
		require.Equal(t, 1, recovered, "the second never took an epoch")

		// A graceful stop hands over at once to a master waiting for the
		// lease (activated again, as the cluster does on the next request),
		// which acks what it held as soon as it serves.
		third := b.sys.Root.Spawn(mustProps(t, journaltest.NewFaulty(b.mem), b.opts...))
		b.front.Send(third, &messages.Work{WorkId: "early", JobType: "square"})
		b.front.ExpectNoMsg(20 * time.Millisecond)
		require.NoError(t, b.sys.Root.StopFuture(b.master).Wait())
		b.front.ExpectTerminated(b.master, testkit.Timeout())
		b.advance(t, 1, leaseStep)
		b.front.ExpectMsg(&messages.Ack{WorkId: "early"}, testkit.Timeout())
		b.submit2(t, third, "after")
		st, err := b.sys.Root.RequestFuture(third, &messages.GetMasterStatus{}, testkit.Timeout()).Result()
		require.NoError(t, err)
		require.Equal(t, int64(12), st.(*messages.MasterStatus).GetPending(), "first, w0..w7, still, early and after, each once")
	})

	t.Run("SubmissionsHeldWhileWaitingAreBounded", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			stash int
			held  []string
		}{{stash: 0}, {stash: 2, held: []string{"s0", "s1"}}} {
			b := setup(t, master.WithLeaseTTL(master.DefaultLeaseTTL))
			b.submit(t, "first")
			waiting := b.sys.Root.Spawn(mustProps(t, journaltest.NewFaulty(b.mem), append(b.opts, master.WithRecoveryStash(tc.stash))...))
			for i := range 3 {
				b.front.Send(waiting, &messages.Work{WorkId: fmt.Sprint("s", i), JobType: "square"})
			}
			for i := len(tc.held); i < 3; i++ {
				r := testkit.ExpectMsgType[*messages.WorkRejected](b.front, testkit.Timeout())
				require.Equal(t, fmt.Sprint("s", i), r.GetWorkId(), "stash %d", tc.stash)
				require.Equal(t, messages.RejectCode_REJECT_CODE_UNAVAILABLE, r.GetCode())
			}
			b.front.ExpectNoMsg(20 * time.Millisecond)
			// The holder hands over; the waiting master acks what it held.
			require.NoError(t, b.sys.Root.StopFuture(b.master).Wait())
			b.advance(t, 1, leaseStep)
			for _, id := range tc.held {
				b.front.ExpectMsg(&messages.Ack{WorkId: id}, testkit.Timeout())
			}
		}
	})

	t.Run("GuardKeepsAMasterFromServing", func(t *testing.T) {
		t.Parallel()
		var connected atomic.Bool
		b := setup(t, master.WithLeaseTTL(master.DefaultLeaseTTL), master.WithLeaseGuard(connected.Load))
		b.front.Send(b.master, &messages.Work{WorkId: "a", JobType: "square"})
		b.front.ExpectNoMsg(20 * time.Millisecond) // held: no lease, so no recovery
		require.Empty(t, events(t, b.mem), "no epoch taken while the guard says no")
		connected.Store(true)
		b.advance(t, 1, leaseStep)
		b.front.ExpectMsg(&messages.Ack{WorkId: "a"}, testkit.Timeout())
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
		b.front.ExpectNoMsg(20 * time.Millisecond) // a master with the default options waits for the lease
		b.submit(t, "b")                           // and the first is not fenced
	})
}
