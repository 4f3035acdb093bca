package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// TestWorkStateHeld: work accepted while its event is not durable is known
// (a duplicate is recognised, it counts as pending) but is not handed out
// until Release, and keeps its FIFO place; the state after the releases is
// the one replay gives.
func TestWorkStateHeld(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)

	t.Run("HeldIsKnownButNotReady", func(t *testing.T) {
		t.Parallel()
		s := NewWorkState()
		s.AcceptHeld(accepted("a", "square", 0))
		require.True(t, s.IsAccepted("a"))
		require.Equal(t, 1, s.Counts().Pending)
		require.Nil(t, s.NextReady(now, nil))
		_, ok := s.NextReadyAt(t0)
		require.False(t, ok, "held work sets no wake-up")
		s.AcceptHeld(accepted("a", "square", time.Second)) // a duplicate
		require.Equal(t, int64(1), s.Counts().AcceptedTotal)
		s.Release("a")
		require.Equal(t, "a", s.NextReady(now, nil).GetWorkId())
		require.Equal(t, 1, s.Counts().Pending)
		checkInvariants(t, s)
	})

	t.Run("ReleaseKeepsArrivalOrder", func(t *testing.T) {
		t.Parallel()
		s := NewWorkState()
		s.AcceptHeld(accepted("a", "square", 0))
		s.AcceptHeld(accepted("b", "square", 0))
		s.Release("b")
		require.Equal(t, "b", s.NextReady(now, nil).GetWorkId(), "only b is durable")
		s.Release("a")
		require.Equal(t, "a", s.NextReady(now, nil).GetWorkId(), "a arrived first")
	})

	t.Run("ReleaseOfUnknownOrReleasedDoesNothing", func(t *testing.T) {
		t.Parallel()
		s := build(t, accepted("a", "square", 0))
		s.Release("a")
		s.Release("nope")
		require.Equal(t, 1, s.Counts().Pending)
		checkInvariants(t, s)
	})

	t.Run("LiveEqualsReplay", func(t *testing.T) {
		t.Parallel()
		live := NewWorkState()
		var journal []proto.Message
		persist := func(ev proto.Message) {
			require.NoError(t, live.Apply(ev))
			journal = append(journal, ev)
		}
		for _, id := range []string{"a", "b", "c"} {
			ev := accepted(id, "square", 0)
			live.AcceptHeld(ev)
			journal = append(journal, ev)
		}
		live.Release("a")
		persist(started("a", "w1", time.Second))
		live.Release("b")
		live.Release("c")
		persist(completed("a", "w1", "1", 2*time.Second))
		persist(started("b", "w1", 3*time.Second))
		replayed := build(t, journal...)
		require.True(t, proto.Equal(replayed.Snapshot(), live.Snapshot()), "replay differs from the live state")
		restored, err := RestoreWorkState(live.Snapshot())
		require.NoError(t, err)
		require.Equal(t, "c", restored.NextReady(now, nil).GetWorkId())
	})
}
