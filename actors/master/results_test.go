package master_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/messages"
)

// Issue 15: the caller's waiter is told the outcome, cancelled work, the
// waiter detached, and the durable result feed.

// submitWaited submits id with waiter as its Work.waiter.
func (b *bundle) submitWaited(t *testing.T, id string, waiter *testkit.Probe) {
	t.Helper()
	b.front.Send(b.master, &messages.Work{WorkId: id, JobType: "square", Payload: []byte(id), Waiter: pids.Wire(waiter.PID())})
	b.front.ExpectMsg(&messages.Ack{WorkId: id}, testkit.Timeout())
}

// restart stops the master and starts another on the same journal.
func (b *bundle) restart(t *testing.T) {
	t.Helper()
	require.NoError(t, b.sys.Root.StopFuture(b.master).Wait())
	b.master = b.start(t)
}

// take asks for work as worker w1 until n works are handed out: the Ack of
// a submission leaves once the work is durable, a moment before the master
// releases it to workers.
func (b *bundle) take(t *testing.T, n int) []*messages.Work {
	t.Helper()
	var works []*messages.Work
	require.Eventually(t, func() bool {
		works = append(works, b.requestWork(t, b.worker, "w1", n-len(works))...)
		return len(works) >= n
	}, testkit.Timeout(), time.Millisecond)
	return works
}

func (b *bundle) readResults(t *testing.T, after int64, limit int32, wait time.Duration) *messages.ResultsPage {
	t.Helper()
	b.front.Request(b.master, &messages.ReadResults{AfterSeq: after, Limit: limit, WaitMs: wait.Milliseconds()})
	return testkit.ExpectMsgType[*messages.ResultsPage](b.front, testkit.Timeout()+wait)
}

func TestWaiterAndCancelled(t *testing.T) {
	t.Parallel()

	t.Run("WaiterToldTheResultOnceDurable", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		waiter := testkit.NewProbe(t, b.sys)
		b.submitWaited(t, "a", waiter)
		b.register(t, b.worker, "w1")
		works := b.take(t, 1)
		require.Len(t, works, 1)
		require.NotNil(t, works[0].GetWaiter(), "the worker must be able to ask the caller")
		b.worker.Send(b.master, &messages.WorkIsDone{WorkerId: "w1", WorkId: "a", Result: []byte("42")})
		res := testkit.ExpectMsgType[*messages.WorkResult](waiter, testkit.Timeout())
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, res.GetStatus())
		require.Equal(t, "42", string(res.GetResult()))
		require.Equal(t, "square", res.GetJobType())
		// A caller that submits the finished id again with a new waiter
		// hears the outcome at once.
		again := testkit.NewProbe(t, b.sys)
		b.submitWaited(t, "a", again)
		res = testkit.ExpectMsgType[*messages.WorkResult](again, testkit.Timeout())
		require.Equal(t, "42", string(res.GetResult()))
	})

	t.Run("CancelledIsFinalNotDeadAndRerunnable", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		waiter := testkit.NewProbe(t, b.sys)
		b.submitWaited(t, "c", waiter)
		b.register(t, b.worker, "w1")
		require.Len(t, b.take(t, 1), 1)
		b.worker.Send(b.master, &messages.WorkFailed{WorkerId: "w1", WorkId: "c", Error: "caller gone", Permanent: true, Cancelled: true})
		res := testkit.ExpectMsgType[*messages.WorkResult](waiter, testkit.Timeout())
		require.Equal(t, messages.WorkStatus_WORK_STATUS_CANCELLED, res.GetStatus())
		require.Equal(t, "caller gone", res.GetError())

		check := func() {
			st := b.workStatus(t, "c")
			require.Equal(t, messages.WorkStatus_WORK_STATUS_CANCELLED, st.GetStatus())
			require.Equal(t, int32(1), st.GetAttempts(), "not retried")
			ms := b.status(t)
			require.Equal(t, int64(1), ms.GetCancelled())
			require.Zero(t, ms.GetDead())
			require.Zero(t, ms.GetPending())
		}
		check()
		b.restart(t) // replay from the journal agrees
		check()

		b.submit(t, "c") // re-submitting runs it again
		require.Equal(t, messages.WorkStatus_WORK_STATUS_ACCEPTED, b.workStatus(t, "c").GetStatus())
		ms := b.status(t)
		require.Zero(t, ms.GetCancelled())
		require.Equal(t, int64(1), ms.GetPending())
	})

	t.Run("CancelledSurvivesASnapshot", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithSnapshotEvery(1), master.WithFeedRetention(0))
		b.submit(t, "c")
		b.register(t, b.worker, "w1")
		require.Len(t, b.take(t, 1), 1)
		b.worker.Send(b.master, &messages.WorkFailed{WorkerId: "w1", WorkId: "c", Error: "caller gone", Cancelled: true})
		n := 0
		require.Eventually(t, func() bool {
			n++
			b.submit(t, fmt.Sprint("x", n)) // more events: a snapshot after the cancel
			snap, ok, err := b.mem.LoadSnapshot(context.Background(), master.DefaultStream)
			if err != nil || !ok {
				return false
			}
			st, err := master.RestoreSnapshot(snap.Msg)
			return err == nil && st.Status("c").GetStatus() == messages.WorkStatus_WORK_STATUS_CANCELLED
		}, testkit.Timeout(), 5*time.Millisecond)
		b.restart(t)
		require.Equal(t, messages.WorkStatus_WORK_STATUS_CANCELLED, b.workStatus(t, "c").GetStatus())
		require.Equal(t, int64(1), b.status(t).GetCancelled())
	})

	t.Run("DetachedWaiterIsNotAsked", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		waiter := testkit.NewProbe(t, b.sys)
		b.submitWaited(t, "d", waiter)
		b.front.Request(b.master, &messages.DetachWaiter{WorkId: "d"})
		b.front.ExpectMsg(&messages.Ack{WorkId: "d"}, testkit.Timeout())
		b.restart(t) // the detach is journaled
		b.register(t, b.worker, "w1")
		works := b.take(t, 1)
		require.Len(t, works, 1)
		require.Nil(t, works[0].GetWaiter())
		b.worker.Send(b.master, &messages.WorkIsDone{WorkerId: "w1", WorkId: "d", Result: []byte("1")})
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, b.workStatus(t, "d").GetStatus())
		waiter.ExpectNoMsg(50 * time.Millisecond)
	})
}

func TestResultFeed(t *testing.T) {
	t.Parallel()

	t.Run("FinishedWorkInJournalOrder", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithMaxAttempts(1))
		for _, id := range []string{"a", "b", "c", "d"} {
			b.submit(t, id)
		}
		b.register(t, b.worker, "w1")
		require.Len(t, b.take(t, 4), 4)
		b.worker.Send(b.master, &messages.WorkIsDone{WorkerId: "w1", WorkId: "b", Result: []byte("4")})
		b.worker.Send(b.master, &messages.WorkFailed{WorkerId: "w1", WorkId: "a", Error: "boom"})
		b.worker.Send(b.master, &messages.WorkFailed{WorkerId: "w1", WorkId: "c", Error: "gone", Cancelled: true})
		b.status(t) // all three handled

		page := b.readResults(t, 0, 0, 0)
		require.Empty(t, page.GetError())
		require.Len(t, page.GetEntries(), 3)
		got := page.GetEntries()
		require.Equal(t, "b", got[0].GetWorkId())
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, got[0].GetStatus())
		require.Equal(t, "4", string(got[0].GetResult()))
		require.Equal(t, "square", got[0].GetJobType())
		require.Equal(t, "a", got[1].GetWorkId())
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DEAD, got[1].GetStatus())
		require.Equal(t, "c", got[2].GetWorkId())
		require.Equal(t, messages.WorkStatus_WORK_STATUS_CANCELLED, got[2].GetStatus())
		require.Less(t, got[0].GetSeq(), got[1].GetSeq())
		require.Equal(t, got[2].GetSeq(), page.GetNextSeq())

		// A limit pages, and the cursor resumes after the last entry read.
		p1 := b.readResults(t, 0, 1, 0)
		require.Len(t, p1.GetEntries(), 1)
		p2 := b.readResults(t, p1.GetNextSeq(), 5, 0)
		require.Equal(t, []string{"a", "c"}, ids(p2))

		// A long poll is answered when the next result is durable.
		b.front.Request(b.master, &messages.ReadResults{AfterSeq: page.GetNextSeq(), WaitMs: testkit.Timeout().Milliseconds()})
		b.front.ExpectNoMsg(50 * time.Millisecond)
		b.worker.Send(b.master, &messages.WorkIsDone{WorkerId: "w1", WorkId: "d", Result: []byte("16")})
		held := testkit.ExpectMsgType[*messages.ResultsPage](b.front, testkit.Timeout())
		require.Equal(t, []string{"d"}, ids(held))

		// The feed outlives the master: a new activation serves it.
		b.restart(t)
		require.Equal(t, []string{"b", "a", "c", "d"}, ids(b.readResults(t, 0, 0, 0)))
		// A cursor past the journal is reported, not waited on.
		ahead := b.readResults(t, 10_000, 0, time.Second)
		require.True(t, ahead.GetAhead())
	})

	t.Run("PastTheRetentionIsGone", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithSnapshotEvery(4), master.WithFeedRetention(2))
		// The master snapshots once the events since outnumber its works:
		// run the works to make events without new works.
		b.register(t, b.worker, "w1")
		for i := range 10 {
			b.submit(t, fmt.Sprint("w", i))
			require.Len(t, b.take(t, 1), 1)
			b.worker.Send(b.master, &messages.WorkIsDone{WorkerId: "w1", WorkId: fmt.Sprint("w", i)})
		}
		require.Eventually(t, func() bool {
			snap, ok, err := b.mem.LoadSnapshot(context.Background(), master.DefaultStream)
			return err == nil && ok && snap.Seq >= 12
		}, testkit.Timeout(), 5*time.Millisecond)
		var page *messages.ResultsPage
		require.Eventually(t, func() bool { // the deletion follows the snapshot
			page = b.readResults(t, 1, 0, 0)
			return page.GetGone()
		}, testkit.Timeout(), 10*time.Millisecond)
		require.Greater(t, page.GetOldestSeq(), int64(1))
		// The oldest cursor reads on (unless a later snapshot moved the
		// oldest on meanwhile: then the next one does).
		require.Eventually(t, func() bool {
			p := b.readResults(t, 1, 0, 0)
			return p.GetGone() && !b.readResults(t, p.GetOldestSeq(), 0, 0).GetGone()
		}, testkit.Timeout(), 10*time.Millisecond)
		// ReadFeed says the same to a tool reading the journal itself.
		_, err := master.ReadFeed(context.Background(), b.mem, master.DefaultStream, 1, 100, 10)
		require.True(t, errors.Is(err, master.ErrFeedGone), "got %v", err)
	})
}

func ids(p *messages.ResultsPage) []string {
	out := []string{}
	for _, e := range p.GetEntries() {
		out = append(out, e.GetWorkId())
	}
	return out
}

// A re-submission (the dashboard's Re-submit) is a new request: the caller
// whose waiter ended the work cancelled is gone, so the re-run must not
// carry that waiter, or the worker asks it, hears "no longer interested"
// and the re-run ends cancelled without ever running.
func TestResubmitDropsTheGoneCallersWaiter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	waiter := testkit.NewProbe(t, b.sys)
	b.submitWaited(t, "c", waiter)
	b.register(t, b.worker, "w1")
	require.Len(t, b.take(t, 1), 1)
	b.worker.Send(b.master, &messages.WorkFailed{WorkerId: "w1", WorkId: "c", Error: "caller gone", Permanent: true, Cancelled: true})
	testkit.ExpectMsgType[*messages.WorkResult](waiter, testkit.Timeout())

	b.front.Request(b.master, &messages.ResubmitWork{WorkId: "c"})
	require.True(t, testkit.ExpectMsgType[*messages.ResubmitReply](b.front, testkit.Timeout()).GetAccepted())
	b.restart(t) // the journal's record of the re-submission, replayed
	works := b.take(t, 1)
	require.Len(t, works, 1)
	require.Nil(t, works[0].GetWaiter(), "the re-run carries the gone caller's waiter: a worker would skip it as cancelled")
}
