package core_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/persistence/core"
)

const ttl = 300 * time.Millisecond

var t0 = time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestMargin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ttl, want time.Duration
	}{
		{300 * time.Millisecond, 6*time.Millisecond + time.Millisecond},
		{5 * time.Second, 100*time.Millisecond + time.Millisecond},
		{time.Millisecond, 20*time.Microsecond + 100*time.Microsecond}, // the 1 ms share is at most ttl/10
	} {
		require.Equal(t, tc.want, core.Margin(tc.ttl), "ttl %v", tc.ttl)
	}
}

// TestHolder drives one grant through the holder's decisions: the deadline
// counts from the start of the call, a renewal answered late does not
// count, and the deadline timer rearms, recovers, gives a last chance or
// stops.
func TestHolder(t *testing.T) {
	t.Parallel()
	deadline := ttl - core.Margin(ttl) // 293 ms after the grant's start
	type renewal struct{ start, answered time.Duration }
	for _, tc := range []struct {
		name     string
		renewals []renewal
		// the deadline timer fires at these instants; want the actions
		fires []time.Duration
		want  []core.DeadlineAction
		// serving is asked at these instants after the renewals
		servingAt []time.Duration
		serving   []bool
	}{
		{
			name:      "DeadlineCountsFromTheGrantsStart",
			servingAt: []time.Duration{0, deadline - 1, deadline, ttl},
			serving:   []bool{true, true, false, false},
		},
		{
			name:      "RenewalInTimeExtendsFromItsStart",
			renewals:  []renewal{{start: 100 * time.Millisecond, answered: 290 * time.Millisecond}},
			fires:     []time.Duration{deadline},
			want:      []core.DeadlineAction{core.DeadlineRearm},
			servingAt: []time.Duration{deadline, 100*time.Millisecond + deadline - 1, 100*time.Millisecond + deadline},
			serving:   []bool{true, true, false},
		},
		{
			name:      "RenewalAnsweredAfterTheDeadlineDoesNotCount",
			renewals:  []renewal{{start: 250 * time.Millisecond, answered: deadline}},
			fires:     []time.Duration{deadline},
			want:      []core.DeadlineAction{core.DeadlineRecover},
			servingAt: []time.Duration{deadline, 400 * time.Millisecond},
			serving:   []bool{false, false},
		},
		{
			name:  "NoRenewalGetsALastChanceThenStops",
			fires: []time.Duration{deadline, deadline + ttl/3},
			want:  []core.DeadlineAction{core.DeadlineLastChance, core.DeadlineStop},
		},
		{
			name:      "AnEarlierRenewalNeverShortensTheDeadline",
			renewals:  []renewal{{start: 200 * time.Millisecond, answered: 210 * time.Millisecond}, {start: 100 * time.Millisecond, answered: 220 * time.Millisecond}},
			servingAt: []time.Duration{200*time.Millisecond + deadline - 1},
			serving:   []bool{true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := core.NewHolder(core.HolderConfig{TTL: ttl}, at(0))
			for _, r := range tc.renewals {
				h.Granted(at(r.answered), at(r.start), ttl)
			}
			for i, f := range tc.fires {
				got, _ := h.OnDeadline(at(f))
				require.Equal(t, tc.want[i], got, "fire %d at %v", i, f)
			}
			for i, s := range tc.servingAt {
				require.Equal(t, tc.serving[i], h.Serving(at(s)), "serving at %v", s)
			}
		})
	}
	t.Run("LastChanceRenewalInTimeServesAgain", func(t *testing.T) {
		t.Parallel()
		h := core.NewHolder(core.HolderConfig{TTL: ttl}, at(0))
		act, check := h.OnDeadline(at(deadline))
		require.Equal(t, core.DeadlineLastChance, act)
		require.Equal(t, at(deadline+ttl/3), check)
		// The last chance's renewal is answered after the deadline: it
		// does not count, the holder recovers under a new epoch.
		require.False(t, h.Granted(at(deadline+time.Millisecond), at(deadline), ttl))
		act, _ = h.OnDeadline(at(deadline + time.Millisecond))
		require.Equal(t, core.DeadlineRecover, act)
		require.False(t, h.Serving(at(deadline+time.Millisecond)))
	})
}

// TestLastChanceOverlapPlant proves the planted bug is the shape that let
// two masters serve: the holder's renewals stop after the grant at T0; the
// journal lets the lease lapse at T0+ttl and grants it to B; with the plant
// the holder still serves at T0+ttl+20ms, the journal's lease being B's.
func TestLastChanceOverlapPlant(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		planted     core.Bug
		wantServing bool // A serves at T0+ttl+20ms
	}{
		{"Fixed", core.NoBug, false},
		{"Planted", core.LastChanceOverlap, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var j core.Stream
			h := core.NewHolder(core.HolderConfig{TTL: ttl, Planted: tc.planted}, at(0))
			_, ok := j.Lease(at(0), "A", ttl) // the call reached the journal at once
			require.True(t, ok)
			// A's renewals are lost. Its deadline timer fires at the
			// deadline: a last chance, renewing at once (that renewal is
			// lost too).
			act, _ := h.OnDeadline(h.Deadline())
			require.Equal(t, core.DeadlineLastChance, act)
			_, ok = j.Lease(at(ttl-time.Millisecond), "B", ttl)
			require.False(t, ok, "the journal keeps A's lease for its ttl")
			_, ok = j.Lease(at(ttl), "B", ttl)
			require.True(t, ok, "the journal grants the lapsed lease to B")
			now := at(ttl + 20*time.Millisecond)
			require.Equal(t, "B", j.LeaseHolder(now))
			require.Equal(t, tc.wantServing, h.Serving(now), "A serves while the journal's lease is B's")
		})
	}
	t.Run("PlantedLateRenewalContinuesTheLease", func(t *testing.T) {
		t.Parallel()
		h := core.NewHolder(core.HolderConfig{TTL: ttl, Planted: core.LastChanceOverlap}, at(0))
		act, _ := h.OnDeadline(h.Deadline())
		require.Equal(t, core.DeadlineLastChance, act)
		late := h.Deadline()
		require.True(t, h.Granted(late.Add(50*time.Millisecond), late, ttl), "the plant counts a renewal answered after the deadline")
		require.False(t, h.Regained())
	})
}

// TestStream checks the journal's side against the backends' rule.
func TestStream(t *testing.T) {
	t.Parallel()
	t.Run("LeaseLiveUntilTTLOnTheJournalsClock", func(t *testing.T) {
		t.Parallel()
		var s core.Stream
		st, ok := s.Lease(at(0), "A", ttl)
		require.True(t, ok)
		require.Equal(t, core.LeaseState{Holder: "A", Remaining: ttl}, st)
		st, ok = s.Lease(at(100*time.Millisecond), "B", ttl)
		require.False(t, ok)
		require.Equal(t, core.LeaseState{Holder: "A", Remaining: 200 * time.Millisecond}, st)
		_, ok = s.Lease(at(200*time.Millisecond), "A", ttl) // a renewal runs ttl from this call
		require.True(t, ok)
		_, ok = s.Lease(at(ttl), "B", ttl)
		require.False(t, ok)
		require.Equal(t, "A", s.LeaseHolder(at(500*time.Millisecond-1)))
		_, ok = s.Lease(at(500*time.Millisecond), "B", ttl)
		require.True(t, ok, "granted once the expiry has passed, not before")
	})
	t.Run("ReleaseByTheHolderOnly", func(t *testing.T) {
		t.Parallel()
		var s core.Stream
		s.Lease(at(0), "A", ttl)
		s.ReleaseLease("B")
		require.Equal(t, "A", s.LeaseHolder(at(0)))
		s.ReleaseLease("A")
		require.Empty(t, s.LeaseHolder(at(0)))
		_, ok := s.Lease(at(0), "B", ttl)
		require.True(t, ok)
	})
	t.Run("EpochsFenceOlderWriters", func(t *testing.T) {
		t.Parallel()
		var s core.Stream
		e1, last := s.AcquireEpoch()
		require.Equal(t, int64(1), e1)
		require.Zero(t, last)
		require.Equal(t, core.WriteOK, s.Append(e1, 1, 2))
		require.Equal(t, core.WriteConflict, s.Append(e1, 2, 1))
		e2, last := s.AcquireEpoch()
		require.Equal(t, int64(2), last)
		require.Equal(t, core.WriteFenced, s.Append(e1, 3, 1))
		require.Equal(t, core.WriteFenced, s.CheckEpoch(e1))
		require.Equal(t, core.WriteOK, s.Append(e2, 3, 1))
		require.Equal(t, int64(3), s.LastSeq())
	})
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	lo, hi := 100*time.Millisecond, 5*time.Second
	var b core.Backoff
	probe, wait := b.Failed(core.FailAway, lo, hi)
	require.True(t, probe)
	require.Equal(t, lo, wait)
	require.Equal(t, 200*time.Millisecond, b.ProbeFailed(lo, hi))
	require.Equal(t, core.MaxProbeEvery, b.ProbeFailed(lo, hi), "probes are at most MaxProbeEvery apart")
	b.ProbeLed = true // a probe was answered; the recovery it led fails
	probe, wait = b.Failed(core.FailAway, lo, hi)
	require.False(t, probe, "a recovery a probe led backs off")
	require.Equal(t, 200*time.Millisecond, wait)
	probe, wait = b.Failed(core.FailRefused, lo, hi)
	require.False(t, probe)
	require.Equal(t, 400*time.Millisecond, wait)
	require.True(t, b.Failing())
	require.Equal(t, 50*time.Millisecond+core.LeaseRetrySlack, core.LeaseWait(50*time.Millisecond, ttl))
	require.Equal(t, ttl/3, core.LeaseWait(time.Second, ttl))
	require.False(t, core.Yield(at(0), at(time.Hour), 0))
	require.True(t, core.Yield(at(0), at(time.Second), time.Second))
}
