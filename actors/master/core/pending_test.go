package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

// queued is a WorkAccepted of a work with the queueing fields (issue 37).
func queued(id, jobType string, d time.Duration, runAt time.Duration, prio int32, key string) *messages.WorkAccepted {
	w := &messages.Work{WorkId: id, JobType: jobType, Payload: []byte(id), FairnessKey: key}
	if runAt != 0 {
		w.RunAtUnixNano = at(runAt)
	}
	if prio >= 0 {
		w.Priority = proto.Int32(prio)
	}
	return &messages.WorkAccepted{Work: w, AtUnixNano: at(d)}
}

// drain hands out every work ready at d, one at a time as a worker would
// (NextReady, then its WorkStarted), and returns their ids in order.
func drain(t *testing.T, s *WorkState, d time.Duration) []string {
	t.Helper()
	var ids []string
	for {
		w := s.NextReady(t0.Add(d), nil)
		if w == nil {
			return ids
		}
		ids = append(ids, w.GetWorkId())
		require.NoError(t, s.Apply(started(w.GetWorkId(), "w", d)))
	}
}

// restored returns s through its packed snapshot, as a new master reads it.
func restored(t *testing.T, s *WorkState) *WorkState {
	t.Helper()
	wire, _ := s.PackedWire(SnapshotSize{})
	var snap messages.PackedMasterSnapshot
	require.NoError(t, proto.Unmarshal(wire, &snap))
	r, err := RestoreSnapshot(&snap)
	require.NoError(t, err)
	checkInvariants(t, r)
	return r
}

func TestDelayedWork(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		evs   []proto.Message
		check func(t *testing.T, s *WorkState)
	}{
		{
			name: "NeverBeforeRunAtThenAtOnce",
			evs:  []proto.Message{queued("later", "sq", 0, 10*time.Second, -1, ""), accepted("now", "sq", time.Second)},
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, []string{"now"}, drain(t, s, 9*time.Second), "the delayed work waits; the other does not")
				next, ok := s.NextReadyAt(t0.Add(9 * time.Second))
				require.True(t, ok)
				require.True(t, t0.Add(10*time.Second).Equal(next), "one wake, at the run_at: %v", next)
				require.Nil(t, s.NextReady(t0.Add(10*time.Second-1), nil))
				require.Equal(t, []string{"later"}, drain(t, s, 10*time.Second))
				st := s.Status("later")
				require.Equal(t, at(0), st.GetHistory()[0].GetAtUnixNano(), "accepted when submitted, not at its run_at")
				require.Equal(t, at(10*time.Second), st.GetHistory()[1].GetAtUnixNano())
			},
		},
		{
			name: "CostsNoAllocationWhileWaiting",
			evs:  []proto.Message{queued("later", "sq", 0, time.Hour, -1, "")},
			check: func(t *testing.T, s *WorkState) {
				e := s.entries["later"]
				require.Nil(t, e.cold, "a delayed plain work keeps its run_at in readyAt and its acceptance in finishedAt")
				require.True(t, e.delayed)
				require.Equal(t, at(time.Hour), s.Work("later").GetRunAtUnixNano(), "the hand-out carries the run_at")
			},
		},
		{
			name: "RunAtInThePastIsAtOnce",
			evs:  []proto.Message{queued("past", "sq", time.Minute, time.Second, -1, "")},
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, []string{"past"}, drain(t, s, time.Minute))
			},
		},
		{
			name: "FallsDueDuringAFailoverRunsRightAfter",
			evs:  []proto.Message{queued("later", "sq", 0, 10*time.Second, -1, ""), accepted("x", "sq", time.Second)},
			check: func(t *testing.T, s *WorkState) {
				r := restored(t, s)
				require.Equal(t, at(10*time.Second), r.Work("later").GetRunAtUnixNano())
				require.NoError(t, r.Apply(&messages.MasterRecovered{AtUnixNano: at(30 * time.Second)}))
				require.Equal(t, []string{"x", "later"}, drain(t, r, 30*time.Second))
				require.Equal(t, at(0), r.Status("later").GetHistory()[0].GetAtUnixNano(), "its acceptance time survives the snapshot")
			},
		},
		{
			name: "SnapshotKeepsItWaiting",
			evs:  []proto.Message{queued("later", "sq", 0, 10*time.Second, -1, "")},
			check: func(t *testing.T, s *WorkState) {
				r := restored(t, s)
				require.Nil(t, r.NextReady(t0.Add(5*time.Second), nil))
				next, ok := r.NextReadyAt(t0.Add(5 * time.Second))
				require.True(t, ok)
				require.True(t, t0.Add(10*time.Second).Equal(next))
			},
		},
		{
			name: "FailedDelayedWorkKeepsItsRunAt",
			evs: []proto.Message{queued("later", "sq", 0, 10*time.Second, -1, ""), started("later", "w", 10*time.Second),
				failed("later", "w", 11*time.Second, 13*time.Second, false)},
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, at(10*time.Second), s.Work("later").GetRunAtUnixNano())
				require.Nil(t, s.NextReady(t0.Add(12*time.Second), nil), "the backoff waits in the timer heap too")
				require.Equal(t, []string{"later"}, drain(t, s, 13*time.Second))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.check(t, build(t, tt.evs...))
		})
	}
}

func TestPriority(t *testing.T) {
	t.Parallel()
	evs := []proto.Message{
		queued("low", "sq", 0, 0, 0, ""), accepted("mid1", "sq", time.Second), queued("high", "sq", 2*time.Second, 0, 9, ""),
		accepted("mid2", "sq", 3*time.Second), queued("seven", "sq", 4*time.Second, 0, 7, ""),
	}
	t.Run("HigherFirstThenArrival", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, []string{"high", "seven", "mid1", "mid2", "low"}, drain(t, build(t, evs...), time.Minute))
	})
	t.Run("SurvivesASnapshot", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, []string{"high", "seven", "mid1", "mid2", "low"}, drain(t, restored(t, build(t, evs...)), time.Minute))
	})
	t.Run("AgingBoundsTheWait", func(t *testing.T) {
		t.Parallel()
		// With aging A a work of priority p is handed out before any that
		// gets due more than (9-p)·A after it: low (0) got due at 0, so
		// a 9 due at 9 s ties it (and arrived later), one due at 8 s goes
		// first.
		s := NewWorkState()
		s.SetQueueing(time.Second, nil)
		for _, ev := range []proto.Message{queued("low", "sq", 0, 0, 0, ""), queued("nine-at-8s", "sq", 8*time.Second, 0, 9, ""),
			queued("nine-at-9s", "sq", 9*time.Second, 0, 9, ""), queued("nine-at-10s", "sq", 10*time.Second, 0, 9, "")} {
			require.NoError(t, s.Apply(ev))
		}
		require.Equal(t, []string{"nine-at-8s", "low", "nine-at-9s", "nine-at-10s"}, drain(t, s, time.Minute))
	})
	t.Run("DelayedHighPriorityDoesNotBlockDueWork", func(t *testing.T) {
		t.Parallel()
		s := build(t, queued("later", "sq", 0, time.Hour, 9, ""), accepted("now", "sq", time.Second))
		require.Equal(t, []string{"now"}, drain(t, s, time.Minute))
	})
}

func TestFairness(t *testing.T) {
	t.Parallel()
	var flood []proto.Message
	for _, id := range []string{"a1", "a2", "a3", "a4", "a5"} {
		flood = append(flood, queued(id, "sq", 0, 0, -1, "A"))
	}
	flood = append(flood, queued("b1", "sq", time.Second, 0, -1, "B"), queued("b2", "sq", time.Second, 0, -1, "B"),
		accepted("n1", "sq", 2*time.Second))
	t.Run("RotatesOverTheKeys", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, []string{"a1", "b1", "n1", "a2", "b2", "a3", "a4", "a5"}, drain(t, build(t, flood...), time.Minute))
	})
	t.Run("Weights", func(t *testing.T) {
		t.Parallel()
		s := NewWorkState()
		s.SetQueueing(0, map[string]int{"A": 3})
		for _, ev := range flood {
			require.NoError(t, s.Apply(ev))
		}
		require.Equal(t, []string{"a1", "a2", "a3", "b1", "n1", "a4", "a5", "b2"}, drain(t, s, time.Minute))
	})
	t.Run("PriorityWithinAKey", func(t *testing.T) {
		t.Parallel()
		s := build(t, queued("a1", "sq", 0, 0, -1, "A"), queued("a2", "sq", 0, 0, 9, "A"), queued("b1", "sq", 0, 0, -1, "B"))
		require.Equal(t, []string{"a2", "b1", "a1"}, drain(t, s, time.Minute))
	})
}

func TestPausedQueue(t *testing.T) {
	t.Parallel()
	pause := func(jt string, p bool) *messages.QueuePaused {
		return &messages.QueuePaused{JobType: jt, Paused: p, AtUnixNano: at(time.Second)}
	}
	s := build(t, accepted("a", "sq", 0), accepted("b", "other", 0), pause("sq", true), accepted("c", "sq", 2*time.Second))
	require.True(t, s.Paused("sq"))
	require.Equal(t, []string{"b"}, drain(t, s, time.Minute), "a paused type hands nothing out")
	_, ok := s.NextReadyAt(t0)
	require.False(t, ok, "and arms no wake")
	r := restored(t, s)
	require.Equal(t, []string{"sq"}, r.PausedTypes(), "the pause survives a snapshot")
	require.Nil(t, r.NextReady(t0.Add(time.Minute), nil))
	qs := r.QueueStates(t0.Add(time.Minute))
	require.Len(t, qs, 2, "other (running) and sq")
	require.Equal(t, int64(1), qs[0].GetRunning())
	require.True(t, qs[1].GetPaused())
	require.Equal(t, int64(2), qs[1].GetPending())
	require.NoError(t, r.Apply(pause("sq", false)))
	require.Equal(t, []string{"a", "c"}, drain(t, r, time.Minute), "resumed: in its order")
}
