package core_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/actors/persistence/core"
)

// visible drops the log lines and timer stops, which every recovery
// emits, so that a test lists what it is about.
func visible(out []effect.Effect) []effect.Effect {
	var keep []effect.Effect
	for _, e := range out {
		switch e.(type) {
		case effect.Log, effect.StopTimer:
		default:
			keep = append(keep, e)
		}
	}
	return keep
}

func events(n int) []proto.Message {
	out := make([]proto.Message, n)
	for i := range out {
		out[i] = wrapperspb.Int64(int64(i))
	}
	return out
}

var cfg = core.Config{RetryMin: 100 * time.Millisecond, RetryMax: 5 * time.Second, MaxBatchEvents: 10}

func leased() core.Config {
	c := cfg
	c.LeaseTTL = ttl
	return c
}

// serving returns a session that recovered under epoch 3 after event 10,
// with a lease taken at T0 when cfg has one.
func serving(t *testing.T, c core.Config) *core.Session {
	t.Helper()
	s := core.NewSession(c)
	s.Step(at(0), core.Start{})
	load := uint64(1)
	if c.LeaseTTL > 0 {
		s.Step(at(0), core.LeaseAnswer{Call: 1, State: core.LeaseState{Holder: "me", Remaining: ttl}})
		load = 2
	}
	s.Step(at(0), core.Loaded{Call: load, Epoch: 3, LastSeq: 10})
	require.Equal(t, core.PhaseRunning, s.Phase())
	return s
}

func TestSessionRecovery(t *testing.T) {
	t.Parallel()
	t.Run("WithoutALeaseLoadsAndServes", func(t *testing.T) {
		t.Parallel()
		s := core.NewSession(cfg)
		require.Equal(t, []effect.Effect{core.Load{Call: 1}}, visible(s.Step(at(0), core.Start{})))
		require.False(t, s.Serving(at(0)))
		require.Equal(t, []effect.Effect{core.Serve{Epoch: 3, Seq: 10}},
			visible(s.Step(at(0), core.Loaded{Call: 1, Epoch: 3, LastSeq: 10})))
		require.True(t, s.Serving(at(time.Hour)))
		require.Equal(t, int64(10), s.DurableSeq())
	})
	t.Run("WithALeaseTakesItFirstAndServesUntilItsDeadline", func(t *testing.T) {
		t.Parallel()
		s := core.NewSession(leased())
		require.Equal(t, []effect.Effect{core.LeaseCall{Call: 1, TTL: ttl}}, visible(s.Step(at(0), core.Start{})))
		require.Equal(t, []effect.Effect{effect.Timer{Name: core.TimerRenew, At: at(10*time.Millisecond + ttl/3)}, core.Load{Call: 2}},
			visible(s.Step(at(10*time.Millisecond), core.LeaseAnswer{Call: 1, State: core.LeaseState{Holder: "me", Remaining: ttl}})))
		deadline := at(ttl - core.Margin(ttl)) // from the call's start, not its answer
		require.Equal(t, []effect.Effect{core.Serve{Epoch: 3, Seq: 10}, effect.Timer{Name: core.TimerDeadline, At: deadline}},
			visible(s.Step(at(20*time.Millisecond), core.Loaded{Call: 2, Epoch: 3, LastSeq: 10})))
		require.True(t, s.Serving(deadline.Add(-1)))
		require.False(t, s.Serving(deadline))
	})
	t.Run("HeldLeaseIsWaitedForAndAskedAgain", func(t *testing.T) {
		t.Parallel()
		s := core.NewSession(leased())
		s.Step(at(0), core.Start{})
		require.Equal(t, []effect.Effect{effect.Timer{Name: core.TimerRetry, At: at(55 * time.Millisecond)}},
			visible(s.Step(at(0), core.LeaseAnswer{Call: 1, Failure: core.FailLeaseHeld, State: core.LeaseState{Holder: "other", Remaining: 50 * time.Millisecond}})))
		require.Equal(t, core.PhaseWaitingForLease, s.Phase())
		require.Equal(t, []effect.Effect{core.LeaseCall{Call: 2, TTL: ttl}},
			visible(s.Step(at(55*time.Millisecond), effect.Fired{Name: core.TimerRetry})))
	})
	t.Run("StrayYieldsAfterTheMaxWait", func(t *testing.T) {
		t.Parallel()
		c := leased()
		c.LeaseMaxWait = time.Second
		s := core.NewSession(c)
		held := core.LeaseState{Holder: "other", Remaining: ttl}
		s.Step(at(0), core.Start{})
		s.Step(at(0), core.LeaseAnswer{Call: 1, Failure: core.FailLeaseHeld, State: held})
		s.Step(at(time.Second), effect.Fired{Name: core.TimerRetry})
		require.Equal(t, []effect.Effect{core.Halt{Reason: core.HaltStray}},
			visible(s.Step(at(time.Second), core.LeaseAnswer{Call: 2, Failure: core.FailLeaseHeld, State: held})))
		require.Equal(t, core.PhaseStopped, s.Phase())
	})
	t.Run("AnAwayJournalIsProbedAndAProbeLedFailureBacksOff", func(t *testing.T) {
		t.Parallel()
		s := core.NewSession(cfg)
		s.Step(at(0), core.Start{})
		require.Equal(t, []effect.Effect{effect.Timer{Name: core.TimerProbe, At: at(100 * time.Millisecond)}},
			visible(s.Step(at(0), core.Loaded{Call: 1, Failure: core.FailAway})))
		require.True(t, s.RecoveryFailing())
		require.Equal(t, []effect.Effect{core.Probe{Call: 2}},
			visible(s.Step(at(100*time.Millisecond), effect.Fired{Name: core.TimerProbe})))
		require.Equal(t, []effect.Effect{effect.Timer{Name: core.TimerProbe, At: at(300 * time.Millisecond)}},
			visible(s.Step(at(100*time.Millisecond), core.Probed{Call: 2, Failure: core.FailAway})))
		s.Step(at(300*time.Millisecond), effect.Fired{Name: core.TimerProbe})
		require.Equal(t, []effect.Effect{core.Load{Call: 4}},
			visible(s.Step(at(300*time.Millisecond), core.Probed{Call: 3})))
		require.Equal(t, []effect.Effect{effect.Timer{Name: core.TimerRetry, At: at(500 * time.Millisecond)}},
			visible(s.Step(at(300*time.Millisecond), core.Loaded{Call: 4, Failure: core.FailAway})), "a recovery a probe led backs off")
	})
	t.Run("FencedRecoveryStops", func(t *testing.T) {
		t.Parallel()
		s := core.NewSession(cfg)
		s.Step(at(0), core.Start{})
		require.Equal(t, []effect.Effect{core.Halt{Reason: core.HaltFenced}},
			visible(s.Step(at(0), core.Loaded{Call: 1, Failure: core.FailFenced})))
	})
	t.Run("LeaseLostDuringRecoveryStops", func(t *testing.T) {
		t.Parallel()
		s := core.NewSession(leased())
		s.Step(at(0), core.Start{})
		s.Step(at(0), core.LeaseAnswer{Call: 1, State: core.LeaseState{Holder: "me", Remaining: ttl}})
		require.Equal(t, []effect.Effect{core.LeaseCall{Call: 3, TTL: ttl}},
			visible(s.Step(at(ttl/3), effect.Fired{Name: core.TimerRenew})), "the keeper renews through a long load")
		s.Step(at(ttl/3), core.LeaseAnswer{Call: 3, Failure: core.FailLeaseHeld, State: core.LeaseState{Holder: "other"}})
		require.Equal(t, []effect.Effect{core.Halt{Reason: core.HaltLeaseLost}},
			visible(s.Step(at(ttl/2), core.Loaded{Call: 2, Epoch: 3, LastSeq: 10})))
		require.Empty(t, visible(s.Step(at(ttl/2), core.Stop{})), "a lost lease is not released")
	})
}

func TestSessionLease(t *testing.T) {
	t.Parallel()
	deadline := ttl - core.Margin(ttl)
	t.Run("RenewalInTimeMovesTheDeadline", func(t *testing.T) {
		t.Parallel()
		s := serving(t, leased())
		require.Equal(t, []effect.Effect{core.LeaseCall{Call: 3, TTL: ttl}}, visible(s.Step(at(ttl/3), effect.Fired{Name: core.TimerRenew})))
		require.Equal(t, []effect.Effect{effect.Timer{Name: core.TimerRenew, At: at(2 * ttl / 3)}},
			visible(s.Step(at(ttl/3+time.Millisecond), core.LeaseAnswer{Call: 3, State: core.LeaseState{Holder: "me", Remaining: ttl}})))
		require.Equal(t, []effect.Effect{effect.Timer{Name: core.TimerDeadline, At: at(ttl/3 + deadline)}},
			visible(s.Step(at(deadline), effect.Fired{Name: core.TimerDeadline})))
		require.True(t, s.Serving(at(ttl/3+deadline-1)))
	})
	t.Run("LateRenewalRecoversUnderANewEpoch", func(t *testing.T) {
		t.Parallel()
		s := serving(t, leased())
		s.Step(at(ttl/3), effect.Fired{Name: core.TimerRenew})
		require.Equal(t, []effect.Effect{core.LeaseCall{Call: 4, TTL: ttl}},
			visible(s.Step(at(deadline), core.LeaseAnswer{Call: 3, State: core.LeaseState{Holder: "me", Remaining: ttl}})))
		require.Equal(t, core.PhaseRecovering, s.Phase())
	})
	t.Run("NoRenewalLastChanceThenStop", func(t *testing.T) {
		t.Parallel()
		s := serving(t, leased())
		require.Equal(t, []effect.Effect{core.LeaseCall{Call: 3, TTL: ttl}, effect.Timer{Name: core.TimerDeadline, At: at(deadline + ttl/3)}},
			visible(s.Step(at(deadline), effect.Fired{Name: core.TimerDeadline})))
		require.False(t, s.Serving(at(deadline+time.Millisecond)), "no service during the last chance")
		require.Equal(t, []effect.Effect{core.Halt{Reason: core.HaltDeadline}},
			visible(s.Step(at(deadline+ttl/3), effect.Fired{Name: core.TimerDeadline})))
		require.Equal(t, []effect.Effect{core.Release{}}, visible(s.Step(at(deadline+ttl/3), core.Stop{})), "the lease is still this holder's to release")
	})
	t.Run("PlantedLastChanceServesOn", func(t *testing.T) {
		t.Parallel()
		c := leased()
		c.Planted = core.LastChanceOverlap
		s := serving(t, c)
		s.Step(at(deadline), effect.Fired{Name: core.TimerDeadline})
		require.True(t, s.Serving(at(deadline+time.Millisecond)))
	})
	t.Run("RefusedRenewalStops", func(t *testing.T) {
		t.Parallel()
		s := serving(t, leased())
		s.Step(at(ttl/3), effect.Fired{Name: core.TimerRenew})
		require.Equal(t, []effect.Effect{core.Halt{Reason: core.HaltLeaseLost}},
			visible(s.Step(at(ttl/3), core.LeaseAnswer{Call: 3, Failure: core.FailLeaseHeld, State: core.LeaseState{Holder: "other"}})))
	})
}

func TestSessionGroupCommit(t *testing.T) {
	t.Parallel()
	t.Run("WhatIsPersistedBeforeTheFlushSharesOneAppendAndConfirmsInOrder", func(t *testing.T) {
		t.Parallel()
		s := serving(t, cfg)
		require.Equal(t, []effect.Effect{core.FlushSoon{}}, s.Step(at(0), effect.Append{Events: events(2), Token: 1}))
		require.Empty(t, s.Step(at(0), effect.Append{Events: events(1), Token: 2}))
		out := s.Step(at(0), core.Flush{})
		require.Len(t, out, 1)
		app := out[0].(core.JournalAppend)
		require.Equal(t, [2]int64{3, 11}, [2]int64{app.Epoch, app.First})
		require.Len(t, app.Events, 3)
		require.Empty(t, s.Step(at(0), effect.Append{Token: 3}), "no events: waits for the append in flight")
		require.Equal(t, int64(13), s.LastSeq())
		require.Equal(t, []effect.Effect{core.Confirm{Token: 1}, core.Confirm{Token: 2}, core.Confirm{Token: 3}},
			s.Step(at(0), core.Appended{Batch: app.Batch}))
		require.Equal(t, int64(13), s.DurableSeq())
		require.Equal(t, []effect.Effect{core.Confirm{Token: 4}}, s.Step(at(0), effect.Append{Token: 4}), "nothing pending: at once")
	})
	t.Run("AFullBatchIsWrittenAtOnce", func(t *testing.T) {
		t.Parallel()
		s := serving(t, cfg)
		out := s.Step(at(0), effect.Append{Events: events(10), Token: 1})
		require.Len(t, out, 1)
		require.IsType(t, core.JournalAppend{}, out[0])
	})
	t.Run("AFailedWriteRecoversAndNothingWaitingIsConfirmed", func(t *testing.T) {
		t.Parallel()
		s := serving(t, cfg)
		s.Step(at(0), effect.Append{Events: events(1), Token: 1})
		first := s.Step(at(0), core.Flush{})[0].(core.JournalAppend)
		s.Step(at(0), effect.Append{Events: events(1), Token: 2})
		second := s.Step(at(0), core.Flush{})[0].(core.JournalAppend)
		require.Equal(t, []effect.Effect{core.Load{Call: second.Batch + 1}},
			visible(s.Step(at(0), core.Appended{Batch: first.Batch, Failure: core.FailAway})))
		require.Equal(t, core.PhaseRecovering, s.Phase())
		require.Equal(t, []effect.Effect{core.Confirm{Token: 2, RepliesOnly: true}},
			s.Step(at(0), core.Appended{Batch: second.Batch}), "a later batch that was written after all: its replies leave, nothing else")
	})
	t.Run("AFencedAppendStops", func(t *testing.T) {
		t.Parallel()
		s := serving(t, cfg)
		s.Step(at(0), effect.Append{Events: events(1), Token: 1})
		b := s.Step(at(0), core.Flush{})[0].(core.JournalAppend)
		require.Equal(t, []effect.Effect{core.Halt{Reason: core.HaltFenced}},
			visible(s.Step(at(0), core.Appended{Batch: b.Batch, Failure: core.FailFenced})))
	})
	t.Run("StopWritesTheOpenBatchAndReleasesAfterIt", func(t *testing.T) {
		t.Parallel()
		s := serving(t, leased())
		s.Step(at(0), effect.Append{Events: events(1), Token: 1})
		out := visible(s.Step(at(0), core.Stop{}))
		require.Len(t, out, 1, "the open batch, and no release before it is answered")
		b := out[0].(core.JournalAppend)
		require.Equal(t, []effect.Effect{core.Confirm{Token: 1, RepliesOnly: true}, core.Release{}},
			s.Step(at(0), core.Appended{Batch: b.Batch}))
	})
	t.Run("PersistingOutsideRunningPanics", func(t *testing.T) {
		t.Parallel()
		s := core.NewSession(cfg)
		s.Step(at(0), core.Start{})
		require.Panics(t, func() { s.Step(at(0), effect.Append{Events: events(1)}) })
	})
}
