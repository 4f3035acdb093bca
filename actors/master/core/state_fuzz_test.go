package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

// genEvents turns fuzz bytes into a plausible event history, deciding the
// way the master does (FailureEvent, TimeoutEvent, NextReady), plus some
// events that do not fit the state, which replay must tolerate.
func genEvents(data []byte) []proto.Message {
	p := Policy{MaxAttempts: 3, BackoffBase: time.Second, BackoffMax: 4 * time.Second}
	s := NewWorkState()
	now := t0
	var evs []proto.Message
	emit := func(ev proto.Message) {
		if s.Apply(ev) == nil {
			evs = append(evs, ev)
		}
	}
	types := []string{"sq", "sleep"}
	for i := 0; i+1 < len(data); i += 2 {
		op, arg := data[i]%10, int(data[i+1])
		now = now.Add(time.Duration(arg%7) * 300 * time.Millisecond)
		id := fmt.Sprintf("w%d", arg%12)
		worker := fmt.Sprintf("k%d", arg%3)
		switch op {
		case 0:
			w := &messages.Work{WorkId: id, JobType: types[arg%2], Payload: []byte{byte(arg)}}
			if arg%3 == 1 {
				w.Waiter = &messages.PID{Address: "fe", Id: fmt.Sprintf("c%d", arg%5)}
			}
			if p := w.GetWaiter(); p != nil && s.WaiterJoins(id, p) {
				emit(&messages.WaiterAdded{WorkId: id, Waiter: p}) // a retried wait (issue 34 item 1)
			} else {
				emit(&messages.WorkAccepted{Work: w, AtUnixNano: now.UnixNano()})
			}
		case 1: // a batch: one WorksAccepted, an id in it maybe twice
			g := &messages.WorksAccepted{AtUnixNano: now.UnixNano()}
			for k := range 1 + arg%4 {
				g.Works = append(g.Works, &messages.Work{WorkId: fmt.Sprintf("w%d", (arg+k*5)%12), JobType: types[(arg+k)%2], Payload: []byte{byte(k)}})
			}
			emit(g)
		case 2:
			if w := s.NextReady(now, nil); w != nil {
				emit(&messages.WorkStarted{WorkId: w.GetWorkId(), WorkerId: worker, AtUnixNano: now.UnixNano()})
			}
		case 3: // a request for several: one WorksStarted (planDispatch applies it)
			evs = append(evs, planDispatch(s, nil, nil, worker, 1+arg%4, now).events...)
		case 4:
			if r := s.InProgress(); len(r) > 0 {
				x := r[arg%len(r)]
				emit(&messages.WorkCompleted{WorkId: x.WorkID, WorkerId: x.WorkerID, Result: []byte(id), AtUnixNano: now.UnixNano()})
			}
		case 5:
			if r := s.InProgress(); len(r) > 0 {
				x := r[arg%len(r)]
				if left, ok := s.WaiterLeftEvent(x.WorkID, x.WorkerID, "gone", now); ok && arg%3 == 0 {
					emit(left) // the asked caller left, another waits
				} else if ev, ok := s.FailureEvent(p, x.WorkID, x.WorkerID, "err", now); ok {
					if arg%3 == 0 { // the caller left: cancelled (issue 15)
						ev.Cancelled, ev.Dead, ev.NotBeforeUnixNano = true, false, 0
					}
					emit(ev)
				}
				if arg%5 == 0 {
					emit(&messages.WaiterDetached{WorkId: id})
				}
			}
		case 6:
			for _, x := range s.Overdue(now, 2*time.Second) {
				if ev, ok := s.TimeoutEvent(p, x.WorkID, x.WorkerID, now); ok {
					emit(ev)
				}
			}
		case 7:
			emit(&messages.WorkExpired{WorkId: id, Reason: "late", AtUnixNano: now.UnixNano()})
		case 8:
			emit(&messages.FinishedForgotten{BeforeUnixNano: now.Add(-3 * time.Second).UnixNano()})
		case 9:
			if arg%4 == 0 {
				emit(&messages.MasterRecovered{AtUnixNano: now.UnixNano()})
			} else {
				// Stale reports and a completion of whatever id, fitting or not.
				emit(&messages.WorkStarted{WorkId: id, WorkerId: worker, AtUnixNano: now.UnixNano()})
				emit(&messages.WorkCompleted{WorkId: id, WorkerId: worker, AtUnixNano: now.UnixNano()})
			}
		}
	}
	return evs
}

// anyMoreWaiters reports whether a work of s has further callers' waiters.
func anyMoreWaiters(s *WorkState) bool {
	for _, e := range s.entries {
		if len(e.moreWaiters()) > 0 {
			return true
		}
	}
	return false
}

// roundTrip marshals and unmarshals m, as the journal does.
func roundTrip[T proto.Message](t testing.TB, m T) T {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	require.NoError(t, err)
	out := m.ProtoReflect().New().Interface().(T)
	require.NoError(t, proto.Unmarshal(b, out))
	return out
}

// FuzzReplay checks that replaying a history (every event through the
// journal's encoding) rebuilds the same state, that a snapshot taken at any
// point plus the tail rebuilds it too, and that the counts always add up.
func FuzzReplay(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 2, 0, 4, 0, 8, 9})
	f.Add([]byte{0, 1, 0, 5, 1, 9, 2, 1, 2, 2, 5, 0, 2, 3, 5, 1, 6, 6, 2, 4, 9, 4, 8, 6, 0, 1})
	f.Add([]byte{1, 3, 1, 4, 1, 5, 2, 6, 2, 6, 6, 6, 6, 6, 7, 5, 9, 8, 9, 0, 2, 2, 4, 3, 8, 6, 8, 6})
	// Waiters joining (retried waits) and the asked one leaving.
	f.Add([]byte{0, 1, 0, 13, 0, 25, 2, 0, 5, 0, 2, 0, 5, 12, 0, 37, 2, 1, 5, 24, 4, 0, 9, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		evs := genEvents(data)
		live := NewWorkState()
		for _, ev := range evs {
			require.NoError(t, live.Apply(ev))
			checkInvariants(t, live)
		}
		replayed := NewWorkState()
		for _, ev := range evs {
			require.NoError(t, replayed.Apply(roundTrip(t, ev)))
		}
		want := live.Snapshot()
		require.True(t, proto.Equal(want, replayed.Snapshot()), "replay differs")
		require.Equal(t, live.PendingIDs(), replayed.PendingIDs())

		cut := 0
		if len(data) > 0 && len(evs) > 0 {
			cut = int(data[0]) % (len(evs) + 1)
		}
		head := NewWorkState()
		for _, ev := range evs[:cut] {
			require.NoError(t, head.Apply(ev))
		}
		restored, err := RestoreWorkState(roundTrip(t, head.Snapshot()))
		require.NoError(t, err)
		for _, ev := range evs[cut:] {
			require.NoError(t, restored.Apply(roundTrip(t, ev)))
		}
		checkInvariants(t, restored)
		require.True(t, proto.Equal(want, restored.Snapshot()), "snapshot at %d + tail differs", cut)
		require.True(t, proto.Equal(legacySnapshot(live), legacySnapshot(restored)), "snapshot at %d + tail differs field by field", cut)
		// A snapshot written before the packed encoding restores the same
		// (one that had no further waiters: the WorkEntry form has none).
		if !anyMoreWaiters(head) {
			upgraded, err := RestoreWorkState(roundTrip(t, legacySnapshot(head)))
			require.NoError(t, err)
			for _, ev := range evs[cut:] {
				require.NoError(t, upgraded.Apply(roundTrip(t, ev)))
			}
			require.True(t, proto.Equal(want, upgraded.Snapshot()), "legacy snapshot at %d + tail differs", cut)
		}
		require.Equal(t, live.Counts(), restored.Counts())
		require.Equal(t, live.PendingIDs(), restored.PendingIDs())
		require.Equal(t, live.InProgress(), restored.InProgress())
	})
}
