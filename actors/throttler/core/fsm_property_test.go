package core_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/throttler/core"
)

// sim drives an FSM the way the actor shell does, with a simulated timer, and
// checks the FSM's invariants after every step.
type sim struct {
	t        *testing.T
	f        *fsm
	now      time.Time
	timerOn  bool
	due      time.Time
	periodic bool
	period   time.Duration

	next      int         // next message value (increasing, so order is checkable)
	delivered []int       // in delivery order
	times     []time.Time // delivery times
	lost      int         // rejected + dropped

	sinceRefill int       // ModeTimer: deliveries since the vouchers were last restored
	bound       int       // ModeTimer: most deliveries allowed since then
	started     time.Time // ModeTimer: start of the current timer period
}

func newSim(t *testing.T, f *fsm) *sim {
	return &sim{t: t, f: f, now: t0, bound: f.Rate().Calls}
}

func (s *sim) apply(eff effects) {
	t := s.t
	t.Helper()
	if len(eff.Deliver) > 0 {
		require.NotEmpty(t, eff.Target, "deliveries need a target")
	}
	for _, m := range eff.Deliver {
		if n := len(s.delivered); n > 0 {
			require.Greater(t, m, s.delivered[n-1], "delivery out of order")
		}
		s.delivered = append(s.delivered, m)
		s.times = append(s.times, s.now)
		s.sinceRefill++
	}
	s.lost += len(eff.Rejected) + len(eff.Dropped)
	switch eff.Timer {
	case core.TimerStartPeriodic:
		if eff.From == core.StateIdle && !s.now.Before(s.started.Add(s.f.Rate().Per)) {
			s.sinceRefill, s.bound = len(eff.Deliver), s.f.Rate().Calls // the old period was over
			require.LessOrEqual(t, s.sinceRefill, s.bound)
		}
		s.started = s.now
		s.timerOn, s.periodic, s.period, s.due = true, true, eff.TimerAfter, s.now.Add(eff.TimerAfter)
	case core.TimerStartOnce:
		require.Positive(t, eff.TimerAfter)
		s.timerOn, s.periodic, s.due = true, false, s.now.Add(eff.TimerAfter)
	case core.TimerStop:
		s.timerOn = false
	case core.TimerNone:
	}
	s.check()
}

func (s *sim) check() {
	t := s.t
	t.Helper()
	f := s.f
	active := f.State() == core.StateActive
	require.Equal(t, active, s.timerOn, "the timer runs iff Active")
	require.Equal(t, s.next, len(s.delivered)+s.lost+f.Len(), "every message is delivered, queued, rejected or dropped")
	if active {
		require.NotEmpty(t, f.Target(), "Active needs a target")
	}
	if f.Mode() == core.ModeTimer {
		if !active {
			require.True(t, f.Target() == "" || f.Len() == 0, "Idle with a target means an empty queue")
		}
		require.LessOrEqual(t, s.sinceRefill, s.bound, "no timer period delivers more than Calls")
	} else {
		require.Equal(t, f.Target() != "" && f.Len() > 0, active, "strict: Active iff something waits for the limiter")
	}
}

func (s *sim) enqueue() {
	s.next++
	s.apply(s.f.Enqueue(s.next, s.now))
}

func (s *sim) advance(d time.Duration) {
	end := s.now.Add(d)
	for s.timerOn && !s.due.After(end) {
		s.now = s.due
		wasActive := s.f.State() == core.StateActive
		if !s.periodic {
			s.timerOn = false // a one-shot timer has fired
		} else {
			s.due = s.due.Add(s.period)
		}
		if wasActive && s.f.Mode() == core.ModeTimer {
			s.sinceRefill, s.bound, s.started = 0, s.f.Rate().Calls, s.now
		}
		s.apply(s.f.Tick(s.now))
	}
	s.now = end
}

func (s *sim) setRate(r core.Rate) {
	eff, err := s.f.SetRate(r, s.now)
	require.NoError(s.t, err)
	if s.f.Mode() == core.ModeTimer {
		s.bound = max(r.Calls, s.sinceRefill)
	}
	s.apply(eff)
}

// run performs random steps; with rates true it also changes the rate.
func (s *sim) run(r *rand.Rand, steps int, rates bool) {
	per := s.f.Rate().Per
	for range steps {
		switch k := r.IntN(20); {
		case k < 10:
			s.enqueue()
		case k < 12:
			s.apply(s.f.SetTarget([]string{"", "a", "b"}[r.IntN(3)], s.now))
		case k < 16:
			s.advance(time.Duration(r.Int64N(int64(per) / 2)))
		case k < 19:
			s.advance(time.Duration(r.Int64N(int64(3 * per))))
		default:
			if rates {
				s.setRate(randomRate(r))
				per = s.f.Rate().Per
			}
		}
	}
	// Liveness: with a target and time, everything queued goes out.
	s.apply(s.f.SetTarget("a", s.now))
	for i := 0; s.f.Len() > 0; i++ {
		require.Less(s.t, i, 100_000, "queue does not drain")
		s.advance(s.f.Rate().Per)
	}
	s.advance(2 * s.f.Rate().Per)
	require.Equal(s.t, core.StateIdle, s.f.State(), "Idle once all is delivered and the period is over")
	require.Equal(s.t, s.next, len(s.delivered)+s.lost)
}

var allModes = []core.Mode{core.ModeTimer, core.ModeSlidingWindow, core.ModeTokenBucket}

func modeOpts(r *rand.Rand, mode core.Mode, calls int) []core.Option {
	opts := []core.Option{core.WithMode(mode), core.WithMaxQueue(1 + r.IntN(30)),
		core.WithOverflow(core.Overflow(1 + r.IntN(3)))}
	if mode == core.ModeTokenBucket {
		opts = append(opts, core.WithBurst(1+r.IntN(calls)))
	}
	return opts
}

// TestFSMPropertyStrictWindow: for random fixed rates and random arrival
// patterns (including pauses with no target), a strict FSM never puts more
// than Calls deliveries in any window of length Per.
func TestFSMPropertyStrictWindow(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 5))
	for i := range 200 {
		mode := allModes[1+i%2]
		rate := randomRate(r)
		s := newSim(t, newFSM(t, rate, modeOpts(r, mode, rate.Calls)...))
		s.run(r, 300, false)
		require.LessOrEqual(t, maxInWindow(s.times, rate.Per), rate.Calls, "case %d: %s %s", i, mode, rate)
	}
}

// TestFSMPropertyInvariants: in every mode, with rate changes, messages keep
// their order, none is lost unaccounted, the timer runs only while Active,
// ModeTimer never exceeds its vouchers per timer period, and everything is
// delivered once a target is set.
func TestFSMPropertyInvariants(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 9))
	for i := range 300 {
		mode := allModes[i%3]
		rate := randomRate(r)
		f := newFSM(t, rate, modeOpts(r, mode, rate.Calls)...)
		newSim(t, f).run(r, 300, true)
	}
}

// FuzzFSM runs the invariant check on fuzzer-chosen seeds.
func FuzzFSM(f *testing.F) {
	f.Add(uint64(1), uint8(0))
	f.Add(uint64(2), uint8(1))
	f.Add(uint64(3), uint8(2))
	f.Fuzz(func(t *testing.T, seed uint64, m uint8) {
		r := rand.New(rand.NewPCG(seed, 1))
		mode := allModes[int(m)%3]
		rate := randomRate(r)
		s := newSim(t, newFSM(t, rate, modeOpts(r, mode, rate.Calls)...))
		s.run(r, 200, mode == core.ModeTimer)
		if mode != core.ModeTimer {
			require.LessOrEqual(t, maxInWindow(s.times, rate.Per), rate.Calls)
		}
	})
}
