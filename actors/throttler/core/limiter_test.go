package core_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/throttler/core"
)

// maxInWindow is the dumb model of the strict guarantee: the largest number
// of grants (sorted by time) in any half-open window [s, s+per). The worst
// window starts at a grant, so only those starts are tried.
func maxInWindow(grants []time.Time, per time.Duration) int {
	best, end := 0, 0
	for i, s := range grants {
		for end < len(grants) && grants[end].Sub(s) < per {
			end++
		}
		best = max(best, end-i)
	}
	return best
}

// randomRate draws a rate with 1-12 calls per 1ms-2s.
func randomRate(r *rand.Rand) core.Rate {
	return core.Rate{Calls: 1 + r.IntN(12), Per: time.Millisecond + time.Duration(r.Int64N(int64(2*time.Second)))}
}

// randomArrivals drives a limiter with a random arrival pattern: bursts,
// gaps, retries at the exact time the limiter names and retries a little
// early. It returns the grant times.
func randomArrivals(r *rand.Rand, l *core.Limiter, steps int) []time.Time {
	per := l.Rate().Per
	now := t0
	var grants []time.Time
	for range steps {
		switch r.IntN(5) {
		case 0: // burst: several requests at one instant
		case 1:
			now = now.Add(time.Duration(r.Int64N(int64(per) / 3)))
		case 2:
			now = now.Add(time.Duration(r.Int64N(int64(3 * per))))
		case 3, 4: // backlog: come back when told (or a bit before)
			if w := l.Delay(now); w > 0 {
				if r.IntN(4) == 0 {
					w -= time.Duration(r.Int64N(int64(w)))
				}
				now = now.Add(w)
			}
		}
		if ok, wait := l.Reserve(now); ok {
			grants = append(grants, now)
		} else if wait <= 0 {
			panic("Reserve refused with a non-positive wait")
		}
	}
	return grants
}

// TestLimiterPropertyNoWindowOverCalls is the strict guarantee: for random
// rates and random arrival patterns, in both strict modes, no window of
// length Per, wherever it starts, holds more than Calls grants.
func TestLimiterPropertyNoWindowOverCalls(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 7))
	for i := range 300 {
		rate := randomRate(r)
		opts := []core.Option{core.WithMode(core.ModeSlidingWindow)}
		if i%2 == 1 {
			opts = []core.Option{core.WithMode(core.ModeTokenBucket), core.WithBurst(1 + r.IntN(rate.Calls+2))}
		}
		l, err := core.NewLimiter(rate, opts...)
		require.NoError(t, err)
		grants := randomArrivals(r, l, 400)
		require.NotEmpty(t, grants)
		require.LessOrEqual(t, maxInWindow(grants, rate.Per), rate.Calls,
			"case %d: rate %s mode %s burst %d", i, rate, l.Mode(), l.Burst())
		if l.Mode() == core.ModeTokenBucket {
			require.LessOrEqual(t, maxInWindow(grants, 1), l.Burst(), "case %d: more than Burst grants at once", i)
		}
	}
}

// TestLimiterSlidingWindowMatchesModel checks ModeSlidingWindow against the
// naive definition: a request at now is granted iff fewer than Calls grants
// lie in (now-Per, now], and the wait names the first instant that holds.
func TestLimiterSlidingWindowMatchesModel(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	for range 200 {
		rate := randomRate(r)
		l, err := core.NewLimiter(rate)
		require.NoError(t, err)
		now := t0
		var grants []time.Time
		for range 200 {
			now = now.Add(time.Duration(r.Int64N(int64(rate.Per) / int64(rate.Calls) * 2)))
			inWindow := 0
			var oldest time.Time
			for j := len(grants) - 1; j >= 0 && now.Sub(grants[j]) < rate.Per; j-- {
				inWindow++
				oldest = grants[j]
			}
			ok, wait := l.Reserve(now)
			require.Equal(t, inWindow < rate.Calls, ok, "rate %s at %s", rate, now.Sub(t0))
			if ok {
				grants = append(grants, now)
				continue
			}
			require.Equal(t, oldest.Add(rate.Per).Sub(now), wait)
		}
	}
}

// FuzzLimiter lets the fuzzer pick the rate and the arrival pattern.
func FuzzLimiter(f *testing.F) {
	f.Add(3, int64(time.Second), uint64(1), false, 1)
	f.Add(10, int64(time.Minute), uint64(2), true, 4)
	f.Fuzz(func(t *testing.T, calls int, per int64, seed uint64, bucket bool, burst int) {
		if calls < 1 || calls > 50 || per < 1 || per > int64(time.Hour) || burst < 1 || burst > 60 {
			t.Skip()
		}
		rate := core.Rate{Calls: calls, Per: time.Duration(per)}
		opts := []core.Option{core.WithMode(core.ModeSlidingWindow)}
		if bucket {
			opts = []core.Option{core.WithMode(core.ModeTokenBucket), core.WithBurst(burst)}
		}
		l, err := core.NewLimiter(rate, opts...)
		require.NoError(t, err)
		grants := randomArrivals(rand.New(rand.NewPCG(seed, 3)), l, 200)
		require.LessOrEqual(t, maxInWindow(grants, rate.Per), calls)
	})
}

func TestLimiter(t *testing.T) {
	t.Parallel()

	t.Run("SustainsTheRateUnderBacklog", func(t *testing.T) {
		t.Parallel()
		for _, opts := range [][]core.Option{
			{core.WithMode(core.ModeSlidingWindow)},
			{core.WithMode(core.ModeTokenBucket)},
			{core.WithMode(core.ModeTokenBucket), core.WithBurst(5)},
		} {
			l, err := core.NewLimiter(core.PerSecond(10), opts...)
			require.NoError(t, err)
			now, n := t0, 0
			for now.Before(t0.Add(10 * time.Second)) {
				if ok, wait := l.Reserve(now); ok {
					n++
				} else {
					now = now.Add(wait)
				}
			}
			require.InDelta(t, 100, n, 1, "mode %s burst %d", l.Mode(), l.Burst())
		}
	})

	t.Run("ClockSteppingBackIsClamped", func(t *testing.T) {
		t.Parallel()
		l, err := core.NewLimiter(core.PerSecond(1))
		require.NoError(t, err)
		require.True(t, l.Allow(t0))
		ok, wait := l.Reserve(t0.Add(-time.Hour))
		require.False(t, ok)
		require.Equal(t, time.Second, wait)
	})

	t.Run("SetRateKeepsHistory", func(t *testing.T) {
		t.Parallel()
		l, err := core.NewLimiter(core.PerSecond(4))
		require.NoError(t, err)
		for range 4 {
			require.True(t, l.Allow(t0))
		}
		require.NoError(t, l.SetRate(core.PerSecond(2)))
		require.False(t, l.Allow(t0.Add(999*time.Millisecond)))
		require.True(t, l.Allow(t0.Add(time.Second)))
		require.NoError(t, l.SetRate(core.PerSecond(5)))
		for range 4 {
			require.True(t, l.Allow(t0.Add(time.Second)), "grants at t0 are outside [1s, 2s)")
		}
		require.False(t, l.Allow(t0.Add(time.Second)), "5 grants in [1s, 2s)")
		require.False(t, l.Allow(t0.Add(1999*time.Millisecond)))
		require.ErrorIs(t, l.SetRate(core.Rate{}), core.ErrInvalidRate)
		require.Equal(t, core.PerSecond(5), l.Rate())
	})

	t.Run("RejectsTimerMode", func(t *testing.T) {
		t.Parallel()
		_, err := core.NewLimiter(core.PerSecond(1), core.WithMode(core.ModeTimer))
		require.ErrorIs(t, err, core.ErrInvalidOption)
	})
}

// TestLimiterSlices: WithSlices paces ModeSlidingWindow without moving its
// bound. At 100/s with 10 slices a backlog goes out 10 at a time, one slice
// every 100 ms, not 100 at once; for random rates and arrivals no window of
// Per holds more than Calls and no window of a slice's length more than a
// slice's grants.
func TestLimiterSlices(t *testing.T) {
	t.Parallel()
	t.Run("ABacklogGoesOutASliceAtATime", func(t *testing.T) {
		l, err := core.NewLimiter(core.PerSecond(100), core.WithSlices(10))
		require.NoError(t, err)
		calls, per := l.Slice()
		require.Equal(t, 10, calls)
		require.Equal(t, 100*time.Millisecond, per)
		now := t0
		var grants []time.Time
		for len(grants) < 200 {
			if ok, wait := l.Reserve(now); ok {
				grants = append(grants, now)
			} else {
				now = now.Add(wait)
			}
		}
		for i, g := range grants {
			require.Equal(t, t0.Add(time.Duration(i/10)*100*time.Millisecond), g, "grant %d", i)
		}
	})
	t.Run("SmallRatesSliceOneByOne", func(t *testing.T) {
		l, err := core.NewLimiter(core.PerSecond(4), core.WithSlices(10))
		require.NoError(t, err)
		calls, per := l.Slice()
		require.Equal(t, 1, calls)
		require.Equal(t, 250*time.Millisecond, per)
		require.True(t, l.Allow(t0))
		require.Equal(t, 250*time.Millisecond, l.Delay(t0))
	})
	t.Run("OneSliceIsTheWindow", func(t *testing.T) {
		l, err := core.NewLimiter(core.PerSecond(1), core.WithSlices(10))
		require.NoError(t, err)
		calls, _ := l.Slice()
		require.Zero(t, calls, "a slice of one whole window does not slice")
	})
	t.Run("OnlyTheSlidingWindowSlices", func(t *testing.T) {
		_, err := core.NewLimiter(core.PerSecond(10), core.WithMode(core.ModeTokenBucket), core.WithSlices(2))
		require.ErrorIs(t, err, core.ErrInvalidOption)
		_, err = core.NewLimiter(core.PerSecond(10), core.WithSlices(-1))
		require.ErrorIs(t, err, core.ErrInvalidOption)
	})
	t.Run("SetRateReslices", func(t *testing.T) {
		l, err := core.NewLimiter(core.PerSecond(100), core.WithSlices(10))
		require.NoError(t, err)
		for range 10 {
			require.True(t, l.Allow(t0))
		}
		require.NoError(t, l.SetRate(core.PerSecond(20)))
		calls, per := l.Slice()
		require.Equal(t, 2, calls)
		require.Equal(t, 100*time.Millisecond, per)
		require.Equal(t, 100*time.Millisecond, l.Delay(t0), "the slice keeps the newest grants")
	})
	t.Run("PropertyNoWindowOverItsBound", func(t *testing.T) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		r := rand.New(rand.NewPCG(seed, 11))
		for i := range 300 {
			rate := core.Rate{Calls: 1 + r.IntN(40), Per: time.Millisecond + time.Duration(r.Int64N(int64(2*time.Second)))}
			l, err := core.NewLimiter(rate, core.WithSlices(1+r.IntN(12)))
			require.NoError(t, err)
			grants := randomArrivals(r, l, 400)
			require.NotEmpty(t, grants)
			require.LessOrEqual(t, maxInWindow(grants, rate.Per), rate.Calls, "case %d: rate %s", i, rate)
			if calls, per := l.Slice(); calls > 0 {
				require.LessOrEqual(t, maxInWindow(grants, per), calls, "case %d: rate %s slice %d per %s", i, rate, calls, per)
			}
		}
	})
}

func TestParseRate(t *testing.T) {
	t.Parallel()
	good := map[string]core.Rate{
		"10/s": core.PerSecond(10), " 100 / m ": core.PerMinute(100), "1000/hour": core.PerHour(1000),
		"5/500ms": {Calls: 5, Per: 500 * time.Millisecond}, "1/SEC": core.PerSecond(1),
	}
	for in, want := range good {
		got, err := core.ParseRate(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	bad := map[string]string{
		"10":          `rate "10": no '/' between the count and the period; want COUNT/PERIOD, e.g. "10/s"`,
		"0/s":         `count "0" is not a whole number from 1 to 1048576`,
		"x/s":         `count "x" is not a whole number`,
		"2000000/s":   `count 2000000 is above 1048576; use a shorter period`,
		"1/fortnight": `period "fortnight" is neither s, m, h nor a positive Go duration`,
		"1/0s":        `period "0s" is neither s, m, h nor a positive Go duration`,
		"1/-1s":       `period "-1s" is neither`,
		"1/":          `the period is missing`,
	}
	for in, want := range bad {
		_, err := core.ParseRate(in)
		require.ErrorContains(t, err, want, in)
	}
	for _, r := range []core.Rate{core.PerSecond(10), core.PerMinute(3), core.PerHour(7), {Calls: 5, Per: 500 * time.Millisecond}} {
		back, err := core.ParseRate(core.FormatRate(r))
		require.NoError(t, err)
		require.Equal(t, r, back)
	}
	require.Equal(t, "10/s", core.FormatRate(core.PerSecond(10)))
}

// TestLimiterRecordNextAllowanceShift covers what a pure core that replays
// its grants needs of a Limiter (the master's per-key rates): Record, Next,
// Allowance, Grants, Last and Shift, against Reserve's own decisions.
func TestLimiterRecordNextAllowanceShift(t *testing.T) {
	t.Parallel()
	l, err := core.NewLimiter(core.Rate{Calls: 3, Per: time.Second})
	require.NoError(t, err)
	require.Equal(t, 3, l.Allowance(t0))
	require.Equal(t, t0, l.Next(t0))
	l.Record(t0)
	l.Record(t0.Add(100 * time.Millisecond))
	require.Equal(t, 1, l.Allowance(t0.Add(200*time.Millisecond)))
	l.Record(t0.Add(50 * time.Millisecond)) // behind the last: counted at it
	require.Equal(t, []time.Time{t0, t0.Add(100 * time.Millisecond), t0.Add(100 * time.Millisecond)}, l.Grants())
	require.Equal(t, t0.Add(100*time.Millisecond), l.Last())
	require.Equal(t, 0, l.Allowance(t0.Add(999*time.Millisecond)))
	require.Equal(t, t0.Add(time.Second), l.Next(t0.Add(500*time.Millisecond)))
	require.Equal(t, 1, l.Allowance(t0.Add(time.Second)))
	require.Equal(t, 3, l.Allowance(t0.Add(1100*time.Millisecond)))
	// Allowance agrees with Reserve made in a row at the same instant.
	at := t0.Add(1100 * time.Millisecond)
	for range 3 {
		ok, _ := l.Reserve(at)
		require.True(t, ok)
	}
	ok, wait := l.Reserve(at)
	require.False(t, ok)
	require.Equal(t, time.Second, wait)
	l.Shift(time.Hour)
	require.Equal(t, at.Add(time.Hour), l.Last())
	require.Equal(t, at.Add(time.Hour+time.Second), l.Next(at))
}
