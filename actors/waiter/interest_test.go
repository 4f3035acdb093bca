package waiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/waiter"
	"github.com/foreman-actors/foreman/messages"
)

func TestInterest(t *testing.T) {
	t.Parallel()

	t.Run("AnswersStillInterestedWhileTheCallerWaits", func(t *testing.T) {
		t.Parallel()
		sys := testkit.NewSystem(t)
		i := waiter.NewInterest(context.Background(), sys)
		t.Cleanup(i.Close)
		still, err := waiter.AskStillInterested(context.Background(), sys, i.PID(), "job-1")
		require.NoError(t, err)
		require.True(t, still)
	})

	t.Run("TellsWorkersToldYesWhenTheCallerGoesThenStops", func(t *testing.T) {
		t.Parallel()
		sys := testkit.NewSystem(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		i := waiter.NewInterest(ctx, sys)
		t.Cleanup(i.Close)
		worker := testkit.NewProbe(t, sys)
		worker.Watch(i.PID())

		worker.Request(i.PID(), &messages.AreYouStillInterested{WorkId: "w1"})
		worker.ExpectMsg(&messages.IAmStillInterested{WorkId: "w1"}, testkit.Timeout())
		cancel()
		cancelled := messages.NoLongerInterestedReason_NO_LONGER_INTERESTED_REASON_CANCELLED
		worker.ExpectMsg(&messages.IAmNoLongerInterested{WorkId: "w1", Reason: cancelled}, testkit.Timeout()) // names the work it asked about

		// While it lingers, later askers are told no.
		still, err := waiter.AskStillInterested(context.Background(), sys, i.PID(), "w2")
		require.NoError(t, err)
		require.False(t, still)
		worker.Request(i.PID(), &messages.AreYouStillInterested{WorkId: "w3"})
		worker.ExpectMsg(&messages.IAmNoLongerInterested{WorkId: "w3", Reason: cancelled}, testkit.Timeout())

		// Once gone, asking gets a dead letter: also not interested.
		i.Close()
		worker.ExpectTerminated(i.PID(), testkit.Timeout())
		still, err = waiter.AskStillInterested(context.Background(), sys, i.PID(), "w4")
		require.False(t, still)
		require.ErrorIs(t, err, waiter.ErrNotInterested)
		require.ErrorContains(t, err, "is gone")
	})

	t.Run("AnswersFromTheCallersContextWhenAsked", func(t *testing.T) {
		t.Parallel()
		// A worker asking right after the caller left must hear no, even
		// before the ctx's AfterFunc goroutine has told the Interest: the
		// job would start for a caller who is gone. Each round asks at
		// once after cancel, so without the check the question often
		// overtakes the callerGone message.
		sys := testkit.NewSystem(t)
		worker := testkit.NewProbe(t, sys)
		for round := range 50 {
			ctx, cancel := context.WithCancel(context.Background())
			i := waiter.NewInterest(ctx, sys)
			cancel()
			worker.Request(i.PID(), &messages.AreYouStillInterested{WorkId: "w"})
			got := worker.ReceiveN(1, testkit.Timeout())[0]
			require.IsType(t, &messages.IAmNoLongerInterested{}, got, "round %d: asked after the caller left", round)
			i.Close()
		}
	})

	t.Run("CloseStopsWithoutTellingAnyone", func(t *testing.T) {
		t.Parallel()
		sys := testkit.NewSystem(t)
		ctx, cancel := context.WithCancel(context.Background())
		i := waiter.NewInterest(ctx, sys)
		worker := testkit.NewProbe(t, sys)
		worker.Watch(i.PID())
		worker.Request(i.PID(), &messages.AreYouStillInterested{})
		worker.ExpectMsg(&messages.IAmStillInterested{}, testkit.Timeout())
		i.Close()
		i.Close()
		worker.ExpectTerminated(i.PID(), testkit.Timeout())
		cancel()
		worker.ExpectNoMsg(50 * time.Millisecond)
	})

	t.Run("NoAnswerInTimeIsNotInterested", func(t *testing.T) {
		t.Parallel()
		sys := testkit.NewSystem(t)
		silent := testkit.NewProbe(t, sys) // records the question, never answers
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		still, err := waiter.AskStillInterested(ctx, sys, silent.PID(), "job-9")
		require.False(t, still)
		require.ErrorIs(t, err, waiter.ErrNotInterested)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		silent.ExpectMsg(&messages.AreYouStillInterested{WorkId: "job-9"}, testkit.Timeout())
	})

	t.Run("NilPID", func(t *testing.T) {
		t.Parallel()
		sys := testkit.NewSystem(t)
		_, err := waiter.AskStillInterested(context.Background(), sys, nil, "")
		require.ErrorIs(t, err, waiter.ErrNotInterested)
	})
}

// TestInterestAcrossNodes is the distributed use: a worker on one member
// asks the caller's Interest on another member over protoactor remote.
func TestInterestAcrossNodes(t *testing.T) {
	callerNode := testkit.NewSystem(t)
	workerNode := testkit.NewSystem(t)
	testkit.StartRemote(t, callerNode)
	testkit.StartRemote(t, workerNode)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	i := waiter.NewInterest(ctx, callerNode)
	t.Cleanup(i.Close)

	askCtx, askCancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer askCancel()
	still, err := waiter.AskStillInterested(askCtx, workerNode, i.PID(), "remote-1")
	require.NoError(t, err)
	require.True(t, still)

	// A worker actor on the worker node that was told yes hears about the
	// caller leaving, across the network.
	worker := testkit.NewProbe(t, workerNode)
	worker.Request(i.PID(), &messages.AreYouStillInterested{WorkId: "remote-2"})
	worker.ExpectMsg(&messages.IAmStillInterested{WorkId: "remote-2"}, testkit.Timeout())
	cancel()
	worker.ExpectMsg(&messages.IAmNoLongerInterested{
		WorkId: "remote-2",
		Reason: messages.NoLongerInterestedReason_NO_LONGER_INTERESTED_REASON_CANCELLED,
	}, testkit.Timeout())
}

func TestInterestResultAndRelease(t *testing.T) {
	t.Parallel()

	t.Run("ResultDeliversTheFirstOutcome", func(t *testing.T) {
		t.Parallel()
		sys := testkit.NewSystem(t)
		i := waiter.NewInterest(context.Background(), sys)
		t.Cleanup(i.Close)
		done := messages.WorkStatus_WORK_STATUS_DONE
		sys.Root.Send(i.PID(), &messages.WorkResult{WorkId: "a", Result: []byte("1"), Status: done})
		sys.Root.Send(i.PID(), &messages.WorkResult{WorkId: "a", Result: []byte("2"), Status: done})
		select {
		case r := <-i.Result():
			require.Equal(t, "1", string(r.GetResult()))
		case <-time.After(testkit.Timeout()):
			t.Fatal("no result")
		}
		select {
		case r := <-i.Result():
			t.Fatalf("a second outcome was delivered: %v", r)
		case <-time.After(20 * time.Millisecond):
		}
	})

	t.Run("ReleasedKeepsSayingYesAndNeverCancels", func(t *testing.T) {
		t.Parallel()
		sys := testkit.NewSystem(t)
		ctx, cancel := context.WithCancel(context.Background())
		i := waiter.NewInterest(ctx, sys)
		t.Cleanup(i.Close)
		worker := testkit.NewProbe(t, sys)
		worker.Request(i.PID(), &messages.AreYouStillInterested{WorkId: "w1"})
		worker.ExpectMsg(&messages.IAmStillInterested{WorkId: "w1"}, testkit.Timeout())
		i.Release()
		cancel() // the caller's request ends: the job goes on
		worker.ExpectNoMsg(50 * time.Millisecond)
		still, err := waiter.AskStillInterested(context.Background(), sys, i.PID(), "w1")
		require.NoError(t, err)
		require.True(t, still)
	})
}
