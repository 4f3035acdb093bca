package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

// pidsOf names pids by their ids, for comparing.
func pidsOf(pids []*messages.PID) []string {
	out := make([]string, 0, len(pids))
	for _, p := range pids {
		out = append(out, p.GetId())
	}
	return out
}

// TestWaitersJoin: a duplicate submission whose caller waits adds its
// waiter, and the work is skipped as cancelled only once every caller that
// waits for it has gone (issue 34 item 1; on main a duplicate changed
// nothing, and the first caller's leaving cancelled the work).
func TestWaitersJoin(t *testing.T) {
	t.Parallel()
	pol := Policy{MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: time.Second}
	now := time.Unix(100, 0)
	a := &messages.PID{Address: "fe1:1", Id: "a"}
	b := &messages.PID{Address: "fe2:1", Id: "b"}
	accept := func(t *testing.T, s *WorkState, w *messages.PID) {
		t.Helper()
		require.NoError(t, s.Apply(&messages.WorkAccepted{Work: &messages.Work{WorkId: "x", JobType: "j", Waiter: w}, AtUnixNano: 1}))
	}
	join := func(t *testing.T, s *WorkState, p *messages.PID) {
		t.Helper()
		require.True(t, s.WaiterJoins("x", p))
		require.NoError(t, s.Apply(&messages.WaiterAdded{WorkId: "x", Waiter: p}))
	}
	start := func(t *testing.T, s *WorkState) {
		t.Helper()
		require.NoError(t, s.Apply(&messages.WorkStarted{WorkId: "x", WorkerId: "w1", AtUnixNano: now.UnixNano()}))
		require.Equal(t, messages.WorkStatus_WORK_STATUS_RUNNING, s.Status("x").GetStatus())
	}
	// callerLeft is what the master does when the worker reports that
	// the waiter it asked said no (WorkFailed.cancelled).
	callerLeft := func(t *testing.T, s *WorkState) {
		t.Helper()
		if ev, ok := s.WaiterLeftEvent("x", "w1", "caller gone", now); ok {
			require.NoError(t, s.Apply(ev))
			return
		}
		ev, ok := s.FailureEvent(pol, "x", "w1", "caller gone", now)
		require.True(t, ok)
		ev.Cancelled, ev.Dead, ev.NotBeforeUnixNano = true, false, 0
		require.NoError(t, s.Apply(ev))
	}

	t.Run("APendingWorkIsAskedAboutThroughTheNewestCaller", func(t *testing.T) {
		t.Parallel()
		s := NewWorkState()
		accept(t, s, a)
		join(t, s, b)
		require.Equal(t, "b", s.Waiter("x").GetId(), "the retry's waiter is asked")
		require.Equal(t, []string{"b", "a"}, pidsOf(s.Waiters("x")))
		require.Equal(t, "b", s.NextReady(now, nil).GetWaiter().GetId(), "the hand-out carries it")
		// The same caller again (a Submit's own retry) adds nothing.
		require.False(t, s.WaiterJoins("x", a))
		require.False(t, s.WaiterJoins("x", &messages.PID{Address: "fe2:1", Id: "b", RequestId: 9}))
		require.False(t, s.WaiterJoins("x", nil))
		require.False(t, s.WaiterJoins("unknown", b))
	})

	t.Run("SkippedOnlyOnceEveryCallerLeft", func(t *testing.T) {
		t.Parallel()
		s := NewWorkState()
		accept(t, s, a)
		join(t, s, b)
		start(t, s)
		callerLeft(t, s) // b, the asked one, left: a still waits
		require.Equal(t, messages.WorkStatus_WORK_STATUS_ACCEPTED, s.Status("x").GetStatus(), "back in its queue, not cancelled")
		require.Equal(t, []string{"a"}, pidsOf(s.Waiters("x")))
		require.Equal(t, []string{"x"}, s.PendingIDs())
		require.Equal(t, "a", s.NextReady(now, nil).GetWaiter().GetId())
		start(t, s)
		callerLeft(t, s) // a left too: no one waits
		require.Equal(t, messages.WorkStatus_WORK_STATUS_CANCELLED, s.Status("x").GetStatus())
		res, waiter, more, ok := s.Outcome("x")
		require.True(t, ok)
		require.Equal(t, "a", waiter.GetId())
		require.Empty(t, more)
		require.Equal(t, messages.WorkStatus_WORK_STATUS_CANCELLED, res.GetStatus())
		require.False(t, s.WaiterJoins("x", b), "a finished work takes no waiter (a re-submission runs it anew)")
	})

	t.Run("ARunningWorkAsksTheNewCallerIfTheAskedOneLeaves", func(t *testing.T) {
		t.Parallel()
		s := NewWorkState()
		accept(t, s, a)
		start(t, s)
		join(t, s, b)
		require.Equal(t, "a", s.Waiter("x").GetId(), "the worker asked a already")
		require.Equal(t, []string{"a", "b"}, pidsOf(s.Waiters("x")))
		callerLeft(t, s)
		require.Equal(t, messages.WorkStatus_WORK_STATUS_ACCEPTED, s.Status("x").GetStatus())
		require.Equal(t, "b", s.Waiter("x").GetId())
		h := s.Status("x").GetHistory()
		require.Equal(t, messages.WorkHistoryKind_WORK_HISTORY_KIND_REQUEUED, h[len(h)-1].GetKind())
		start(t, s)
		require.NoError(t, s.Apply(&messages.WorkCompleted{WorkId: "x", WorkerId: "w1", Result: []byte("r"), AtUnixNano: now.UnixNano()}))
		_, waiter, more, ok := s.Outcome("x")
		require.True(t, ok)
		require.Equal(t, "b", waiter.GetId())
		require.Empty(t, more)
	})

	t.Run("AWorkACallerDoesNotWaitForRunsWhoeverLeaves", func(t *testing.T) {
		t.Parallel()
		for _, detach := range []bool{false, true} {
			s := NewWorkState()
			if detach {
				accept(t, s, a)
				require.NoError(t, s.Apply(&messages.WaiterDetached{WorkId: "x"}))
			} else {
				accept(t, s, nil)
			}
			join(t, s, b)
			require.Nil(t, s.Waiter("x"), "no one is asked: a caller wants it run whatever happens")
			start(t, s)
			_, ok := s.WaiterLeftEvent("x", "w1", "gone", now)
			require.False(t, ok)
			require.NoError(t, s.Apply(&messages.WorkCompleted{WorkId: "x", WorkerId: "w1", AtUnixNano: now.UnixNano()}))
			_, waiter, more, ok := s.Outcome("x")
			require.True(t, ok)
			require.Nil(t, waiter)
			require.Equal(t, []string{"b"}, pidsOf(more), "the joined caller is told the outcome")
		}
	})

	t.Run("Bounded", func(t *testing.T) {
		t.Parallel()
		s := NewWorkState()
		accept(t, s, a)
		for i := range 3 * maxWaiters {
			join(t, s, &messages.PID{Address: "fe", Id: string(rune('A' + i))})
		}
		require.Len(t, s.Waiters("x"), maxWaiters)
		require.Equal(t, string(rune('A'+3*maxWaiters-1)), s.Waiter("x").GetId(), "the newest is asked")
	})

	t.Run("SnapshotAndReplayKeepThem", func(t *testing.T) {
		t.Parallel()
		events := []proto.Message{
			&messages.WorkAccepted{Work: &messages.Work{WorkId: "x", JobType: "j", Waiter: a}, AtUnixNano: 1},
			&messages.WorkAccepted{Work: &messages.Work{WorkId: "y", JobType: "j"}, AtUnixNano: 2},
			&messages.WaiterAdded{WorkId: "x", Waiter: b},
			&messages.WaiterAdded{WorkId: "x", Waiter: &messages.PID{Address: "fe3:1", Id: "c", RequestId: 4}},
		}
		s := NewWorkState()
		for _, ev := range events {
			require.NoError(t, s.Apply(ev))
		}
		wire, _ := s.PackedWire(SnapshotSize{})
		var snap messages.PackedMasterSnapshot
		require.NoError(t, proto.Unmarshal(wire, &snap))
		require.Equal(t, byte(packedFormat), snap.GetSnapshot().GetChunks()[0][0], "further waiters need format 3")
		r, err := RestoreSnapshot(&snap)
		require.NoError(t, err)
		require.Equal(t, []string{"c", "a", "b"}, pidsOf(r.Waiters("x")))
		require.True(t, proto.Equal(s.Waiters("x")[0], r.Waiters("x")[0]))
		require.True(t, proto.Equal(s.Snapshot(), r.Snapshot()), "restore then snapshot changes the bytes")

		// Without further waiters the chunk stays in format 2, which a
		// master from before them reads.
		plain := NewWorkState()
		require.NoError(t, plain.Apply(events[0]))
		require.Equal(t, byte(packedFormatV2), plain.Snapshot().GetChunks()[0][0])

		// Format 2 has no further waiters.
		bad := s.Snapshot()
		bad.Chunks[0][0] = packedFormatV2
		_, err = RestoreWorkState(bad)
		require.ErrorIs(t, err, ErrBadSnapshot)
	})
}
