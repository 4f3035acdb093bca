package master_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/messages"
)

// batchOf returns works b-from .. b-(to-1).
func batchOf(from, to int) []*messages.Work {
	var ws []*messages.Work
	for i := from; i < to; i++ {
		ws = append(ws, &messages.Work{WorkId: fmt.Sprint("b-", i), JobType: "square", Payload: []byte("2")})
	}
	return ws
}

func TestWorkBatch(t *testing.T) {
	t.Parallel()

	t.Run("OneJournalWriteOneReplyEachItemJudgedAlone", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithMaxPayload(8))
		b.submit(t, "b-3") // accepted before: acked again, no second event
		before := len(events(t, b.mem))
		b.register(t, b.worker, "w1")
		got := b.requestWork(t, b.worker, "w1", 1)
		require.Len(t, got, 1)
		require.Equal(t, "b-3", got[0].GetWorkId())
		b.worker.Send(b.master, &messages.WorkIsDone{WorkerId: "w1", WorkId: "b-3", Result: []byte("4")})
		b.worker.ExpectMsg(&messages.Ack{WorkId: "b-3"}, testkit.Timeout())
		require.Empty(t, b.requestWork(t, b.worker, "w1", 5), "nothing ready: the worker now waits to be told")

		works := batchOf(0, 500)
		works = append(works,
			&messages.Work{WorkId: "b-7", JobType: "square", Payload: []byte("2")}, // repeated inside the batch
			&messages.Work{WorkId: "no-type"},
			&messages.Work{WorkId: "big", JobType: "square", Payload: []byte(strings.Repeat("9", 9))},
		)
		b.j.HoldWrites()
		b.front.Request(b.master, &messages.WorkBatch{Works: works})
		require.Eventually(t, func() bool { return b.j.HeldWrites() > 0 }, testkit.Timeout(), time.Millisecond, "the batch reaches the journal")
		b.front.ExpectNoMsg(20 * time.Millisecond) // nothing acked before it is durable
		require.Equal(t, 1, b.j.ReleaseWrites(), "the batch's new works are one journal write")
		ack := testkit.ExpectMsgType[*messages.WorkBatchAck](b.front, testkit.Timeout())
		require.Len(t, ack.GetOutcomes(), len(works))
		for i, o := range ack.GetOutcomes() {
			require.Equal(t, works[i].GetWorkId(), o.GetWorkId(), "outcomes in the batch's order")
			switch o.GetWorkId() {
			case "no-type":
				require.False(t, o.GetAccepted())
				require.Equal(t, messages.RejectCode_REJECT_CODE_INVALID, o.GetCode())
				require.Contains(t, o.GetReason(), "job type is empty")
			case "big":
				require.False(t, o.GetAccepted())
				require.Equal(t, messages.RejectCode_REJECT_CODE_TOO_LARGE, o.GetCode())
			default:
				require.True(t, o.GetAccepted(), o.GetWorkId())
			}
		}
		var accepted []string
		groups := 0
		for _, ev := range events(t, b.mem)[before:] {
			switch g := ev.(type) {
			case *messages.WorksAccepted:
				groups++
				for _, w := range g.GetWorks() {
					accepted = append(accepted, w.GetWorkId())
				}
			case *messages.WorkAccepted:
				t.Fatalf("a batch's work recorded alone: %s", g.GetWork().GetWorkId())
			}
		}
		require.Equal(t, 1, groups, "the batch's new works are one WorksAccepted record")
		require.Len(t, accepted, 499, "b-0..b-499 once each; b-3 was accepted before, b-7 is repeated")
		require.Equal(t, "b-0", accepted[0], "in the batch's order")
		require.Equal(t, "b-499", accepted[498])
		testkit.ExpectMsgType[*messages.WorkIsReady](b.worker, testkit.Timeout())
		b.worker.ExpectNoMsg(50 * time.Millisecond) // one WorkIsReady for the whole batch
		require.Equal(t, int64(499), b.status(t).GetPending())
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, b.workStatus(t, "b-3").GetStatus(), "b-3 done before, not queued again")

		// The same batch again: every valid item acked, nothing written.
		b.j.HoldWrites()
		b.front.Request(b.master, &messages.WorkBatch{Works: works[:500]})
		again := testkit.ExpectMsgType[*messages.WorkBatchAck](b.front, testkit.Timeout())
		require.Zero(t, b.j.ReleaseWrites(), "duplicates are not written again")
		for _, o := range again.GetOutcomes() {
			require.True(t, o.GetAccepted(), o.GetWorkId())
		}

		// A restarted master knows every item of the batch.
		require.NoError(t, b.sys.Root.StopFuture(b.master).Wait())
		b.master = b.start(t)
		require.Equal(t, int64(499), b.status(t).GetPending())
		require.Equal(t, messages.WorkStatus_WORK_STATUS_ACCEPTED, b.workStatus(t, "b-499").GetStatus())
		require.Equal(t, messages.WorkStatus_WORK_STATUS_UNKNOWN, b.workStatus(t, "big").GetStatus())
	})

	t.Run("HeldWhileRecoveringThenAcked", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithLeaseTTL(master.DefaultLeaseTTL))
		b.submit(t, "first")
		waiting := b.sys.Root.Spawn(mustProps(t, b.j, b.opts...)) // waits for the first's lease
		b.front.Send(waiting, &messages.WorkBatch{Works: batchOf(0, 3)})
		b.front.ExpectNoMsg(20 * time.Millisecond)
		require.NoError(t, b.sys.Root.StopFuture(b.master).Wait()) // hands the lease over
		b.advance(t, 1, leaseStep)
		ack := testkit.ExpectMsgType[*messages.WorkBatchAck](b.front, testkit.Timeout())
		require.Len(t, ack.GetOutcomes(), 3)
		for _, o := range ack.GetOutcomes() {
			require.True(t, o.GetAccepted(), o.GetWorkId())
		}
	})

	t.Run("LargeBatchesInGroupsSnapshottedByWorks", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithMaxPayload(200_000), master.WithSnapshotEvery(2000))
		groupSizes := func(evs []any) []int {
			var n []int
			for _, ev := range evs {
				if g, ok := ev.(*messages.WorksAccepted); ok {
					n = append(n, len(g.GetWorks()))
				}
			}
			return n
		}
		b.front.Request(b.master, &messages.WorkBatch{Works: batchOf(0, 2500)})
		testkit.ExpectMsgType[*messages.WorkBatchAck](b.front, testkit.Timeout())
		require.Equal(t, []int{1024, 1024, 452}, groupSizes(events(t, b.mem)), "at most 1024 works a record")
		// 3 records but 2500 works: past WithSnapshotEvery, and as many as
		// the state holds, so the busy policy takes the snapshot.
		require.Eventually(t, func() bool {
			snap, ok, err := b.mem.LoadSnapshot(context.Background(), master.DefaultStream)
			return err == nil && ok && snap.Seq >= 3
		}, testkit.Timeout(), 5*time.Millisecond, "the grouped works count toward the snapshot")

		big := make([]*messages.Work, 5)
		for i := range big {
			big[i] = &messages.Work{WorkId: fmt.Sprint("big-", i), JobType: "square", Payload: []byte(strings.Repeat("7", 100_000))}
		}
		before := len(events(t, b.mem))
		b.front.Request(b.master, &messages.WorkBatch{Works: big})
		testkit.ExpectMsgType[*messages.WorkBatchAck](b.front, testkit.Timeout())
		require.Equal(t, []int{2, 2, 1}, groupSizes(events(t, b.mem)[before:]), "at most 256 KiB of works a record")

		require.NoError(t, b.sys.Root.StopFuture(b.master).Wait())
		b.master = b.start(t)
		require.Equal(t, int64(2505), b.status(t).GetPending())
		require.Equal(t, messages.WorkStatus_WORK_STATUS_ACCEPTED, b.workStatus(t, "b-2499").GetStatus())
		require.Equal(t, messages.WorkStatus_WORK_STATUS_ACCEPTED, b.workStatus(t, "big-4").GetStatus())
		b.register(t, b.worker, "w1")
		testkit.ExpectMsgType[*messages.WorkIsReady](b.worker, testkit.Timeout())
		got := b.requestWork(t, b.worker, "w1", 3)
		require.Equal(t, []string{"b-0", "b-1", "b-2"}, []string{got[0].GetWorkId(), got[1].GetWorkId(), got[2].GetWorkId()},
			"replayed in the batch's order")
	})

	t.Run("TurnedAwayWhenTheStashIsFull", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithLeaseTTL(master.DefaultLeaseTTL))
		b.submit(t, "first")
		waiting := b.sys.Root.Spawn(mustProps(t, b.j, append(b.opts, master.WithRecoveryStash(0))...))
		b.front.Send(waiting, &messages.WorkBatch{Works: batchOf(0, 2)})
		ack := testkit.ExpectMsgType[*messages.WorkBatchAck](b.front, testkit.Timeout())
		require.Len(t, ack.GetOutcomes(), 2)
		for i, o := range ack.GetOutcomes() {
			require.Equal(t, fmt.Sprint("b-", i), o.GetWorkId())
			require.False(t, o.GetAccepted())
			require.Equal(t, messages.RejectCode_REJECT_CODE_UNAVAILABLE, o.GetCode())
		}
	})
}
