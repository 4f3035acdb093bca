package adaptive_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"testing/quick"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/adaptive"
)

var epoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Reference: seed 004, "let measure = float concurrency / elapsed" and
// "(1.0 - config.LearningRate) * value + config.LearningRate * measure".
func TestSeedPolicy(t *testing.T) {
	t.Parallel()

	noExplore := adaptive.Config{LearningRate: 0.5, ExplorationRate: -1}

	t.Run("MovingAverageOfInFlightOverElapsedFromArrival", func(t *testing.T) {
		t.Parallel()
		s, err := adaptive.NewSeed(noExplore)
		require.NoError(t, err)
		now := epoch.Add(time.Minute)
		// 4 in flight, 2 s since arrival (1.5 s of it queued): 2 jobs/s.
		s.Observe(adaptive.Observation{Arrival: now.Add(-2 * time.Second), Started: now.Add(-500 * time.Millisecond), InFlight: 4}, now)
		v, ok := s.Estimate(4)
		require.True(t, ok)
		require.InDelta(t, 2.0, v, 1e-9)
		// 4 in flight, 1 s: measure 4, average 0.5*4 + 0.5*2.
		s.Observe(adaptive.Observation{Arrival: now.Add(-time.Second), InFlight: 4}, now)
		v, _ = s.Estimate(4)
		require.InDelta(t, 3.0, v, 1e-9)
		_, ok = s.Estimate(1)
		require.False(t, ok, "estimates are keyed by the in-flight count")
	})

	t.Run("ExploresRandomNeighbourWithProbabilityEpsilon", func(t *testing.T) {
		t.Parallel()
		s, err := adaptive.NewSeed(adaptive.Config{ExplorationRate: 0.5, InitialLimit: 10, Seed: 7})
		require.NoError(t, err)
		moves := 0
		prev := s.Limit()
		for range 10000 {
			l := s.Arrived(epoch)
			require.LessOrEqual(t, abs(l-prev), 1)
			if l != prev {
				moves++
			}
			prev = l
			require.GreaterOrEqual(t, l, 1)
		}
		require.InDelta(t, 5000, moves, 300, "about half the decisions explore")
	})

	t.Run("SameSeedSameLevels", func(t *testing.T) {
		t.Parallel()
		run := func() []int {
			s, err := adaptive.NewSeed(adaptive.Config{Seed: 42})
			require.NoError(t, err)
			rng := rand.New(rand.NewPCG(1, 2))
			var out []int
			now := epoch
			for range 500 {
				now = now.Add(sec(rng.Float64()))
				out = append(out, s.Observe(adaptive.Observation{Arrival: now.Add(-sec(1 + rng.Float64())), InFlight: 1 + rng.IntN(s.Limit())}, now))
			}
			return out
		}
		require.Equal(t, run(), run())
	})

	// The drift the seed's author saw: with few jobs in flight and no queue,
	// the level climbs anyway.
	t.Run("DriftsUpwardsWhenAppLimited", func(t *testing.T) {
		t.Parallel()
		s, err := adaptive.NewSeed(adaptive.Config{Seed: 3})
		require.NoError(t, err)
		now := epoch
		rng := rand.New(rand.NewPCG(5, 6))
		for range 20000 {
			now = now.Add(100 * time.Millisecond)
			inFlight := 1 + rng.IntN(3) // never more than 3 jobs at once
			s.Observe(appLimited(now, inFlight, s.Limit(), time.Second), now)
		}
		require.Greater(t, s.Limit(), 10, "the seed's rule drifts above the 3 jobs ever in flight")
	})
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// appLimited is an observation of a job that never waited: nobody queued,
// fewer in flight than the limit allows.
func appLimited(now time.Time, inFlight, limit int, service time.Duration) adaptive.Observation {
	return adaptive.Observation{
		Arrival: now.Add(-service), Started: now.Add(-service),
		InFlight: min(inFlight, limit), Limit: limit, Queued: 0, CPU: -1,
	}
}

// feed reports n completions, the next one gap(level) after the previous,
// each finding queued jobs waiting and the CPU reading cpu. It returns the
// time of the last and the distinct levels the policy went through.
func feed(p adaptive.Policy, now time.Time, n int, gap func(level int) time.Duration, queued int, cpu float64) (time.Time, []int) {
	levels := []int{p.Limit()}
	for range n {
		l := p.Limit()
		now = now.Add(gap(l))
		if got := p.Observe(adaptive.Observation{Arrival: now, Started: now, InFlight: l, Limit: l, Queued: queued, CPU: cpu}, now); got != levels[len(levels)-1] {
			levels = append(levels, got)
		}
	}
	return now, levels
}

// scaling is the gap between completions of a service doing 10 jobs/s per
// level up to knee, flat beyond.
func scaling(knee int) func(int) time.Duration {
	return func(l int) time.Duration { return time.Second / time.Duration(10*min(l, knee)) }
}

func every(d time.Duration) func(int) time.Duration { return func(int) time.Duration { return d } }

func TestHillClimb(t *testing.T) {
	t.Parallel()

	cfg := adaptive.Config{SampleInterval: time.Second, MinSamples: 10, Jitter: -1, StaleAfter: 10 * time.Second}

	t.Run("SlowStartDoublesThenKeepsTheBetterLevel", func(t *testing.T) {
		t.Parallel()
		h, err := adaptive.NewHillClimb(cfg)
		require.NoError(t, err)
		_, levels := feed(h, epoch, 400, scaling(4), 5, -1)
		require.Equal(t, []int{1, 2, 4, 8, 4}, levels[:5], "8 brings no gain: back to 4")
		require.Equal(t, 4, h.Limit())
		thr, ok := h.Estimate(4)
		require.True(t, ok)
		require.InDelta(t, 40, thr, 1)
	})

	t.Run("HalvesWhenThroughputFallsAtTheSameLevel", func(t *testing.T) {
		t.Parallel()
		h, err := adaptive.NewHillClimb(cfg)
		require.NoError(t, err)
		now, _ := feed(h, epoch, 400, scaling(8), 5, -1)
		require.Equal(t, 8, h.Limit())
		// The service's knee falls from 8 to 2: 8 in flight now complete 20
		// jobs/s, not 80. The climber halves and forgets what it knew.
		_, levels := feed(h, now, 30, scaling(2), 5, -1)
		require.Equal(t, []int{8, 4}, levels)
		_, ok := h.Estimate(16)
		require.False(t, ok, "estimates of the old service are dropped")
		thr, ok := h.Estimate(8)
		require.True(t, ok)
		require.Less(t, thr, 25.0, "replaced, not blended with 80 (0.8*80+0.2*20 = 68)")
	})

	t.Run("ForgetsButHoldsWhenThroughputRises", func(t *testing.T) {
		t.Parallel()
		h, err := adaptive.NewHillClimb(cfg)
		require.NoError(t, err)
		now, _ := feed(h, epoch, 400, scaling(4), 5, -1)
		require.Equal(t, 4, h.Limit())
		// Each job gets twice as fast: 4 in flight complete 80 jobs/s.
		_, levels := feed(h, now, 100, func(l int) time.Duration { return scaling(4)(l) / 2 }, 5, -1)
		require.Equal(t, 4, levels[0])
		require.NotContains(t, levels, 2, "a rise is no reason to shed concurrency")
		thr, ok := h.Estimate(4)
		require.True(t, ok)
		require.Greater(t, thr, 60.0, "replaced, not blended with 40 (0.8*40+0.2*80 = 48)")
	})

	t.Run("ProbesNeighboursAndReturns", func(t *testing.T) {
		t.Parallel()
		h, err := adaptive.NewHillClimb(cfg)
		require.NoError(t, err)
		_, levels := feed(h, epoch, 1000, scaling(4), 5, -1)
		require.Equal(t, []int{1, 2, 4, 8, 4, 5, 4, 3, 4}, levels[:9], "probe up, back, probe down, back")
	})

	t.Run("UpwardProbeGoesBackWhenDemandVanishes", func(t *testing.T) {
		t.Parallel()
		h, err := adaptive.NewHillClimb(cfg)
		require.NoError(t, err)
		now, levels := epoch, []int{1}
		for i := 0; h.Limit() != 5; i++ {
			require.Less(t, i, 1000, "never probed 5: %v", levels)
			var more []int
			now, more = feed(h, now, 1, scaling(4), 5, -1)
			if more[len(more)-1] != levels[len(levels)-1] {
				levels = append(levels, more[len(more)-1])
			}
		}
		require.Equal(t, []int{1, 2, 4, 8, 4, 5}, levels)
		// Nobody waits during the probe: back to 4 without measuring 5.
		_, levels = feed(h, now, 60, scaling(4), 0, -1)
		require.Equal(t, []int{5, 4}, levels)
		_, ok := h.Estimate(5)
		require.False(t, ok)
	})

	t.Run("DoublingWithoutDemandGoesBack", func(t *testing.T) {
		t.Parallel()
		h, err := adaptive.NewHillClimb(cfg)
		require.NoError(t, err)
		now, levels := feed(h, epoch, 11, scaling(4), 5, -1)
		require.Equal(t, []int{1, 2}, levels)
		now, levels = feed(h, now, 40, scaling(4), 0, -1)
		require.Equal(t, []int{2, 1}, levels, "the slow start's doubling met no demand")
		_, levels = feed(h, now, 40, scaling(4), 5, -1)
		require.Equal(t, []int{1, 2, 4}, levels, "demand is back: the slow start goes on")
	})

	t.Run("DownwardProbeStaysWhenDemandVanishes", func(t *testing.T) {
		t.Parallel()
		h, err := adaptive.NewHillClimb(adaptive.Config{SampleInterval: time.Second, MinSamples: 10, Jitter: -1, InitialLimit: 4, MaxLimit: 4})
		require.NoError(t, err)
		// MaxLimit stops the slow start at 4, then the climber probes 3.
		now, levels := feed(h, epoch, 90, scaling(4), 5, -1)
		require.Equal(t, []int{4, 3}, levels)
		// Nobody waits: going back up would be an increase while app-limited.
		_, levels = feed(h, now, 200, scaling(4), 0, -1)
		require.Equal(t, []int{3}, levels)
	})

	t.Run("ExtraConcurrencyMustPayForItself", func(t *testing.T) {
		t.Parallel()
		// Flat throughput beyond 2: the penalty walks the level down to 2.
		h, err := adaptive.NewHillClimb(adaptive.Config{SampleInterval: time.Second, MinSamples: 10, Jitter: -1, InitialLimit: 6})
		require.NoError(t, err)
		_, levels := feed(h, epoch, 3000, scaling(2), 5, -1)
		require.Equal(t, 2, h.Limit(), "levels: %v", levels)
		require.LessOrEqual(t, slices.Max(levels[2:]), 7, "after the slow start, at most a probe above 6")
	})

	t.Run("StaleEstimatesAreForgotten", func(t *testing.T) {
		t.Parallel()
		h, err := adaptive.NewHillClimb(adaptive.Config{SampleInterval: time.Second, MinSamples: 1, Jitter: -1, MaxLimit: 1, StaleAfter: 10 * time.Second})
		require.NoError(t, err)
		busy := func(at time.Duration) {
			now := epoch.Add(at)
			h.Observe(adaptive.Observation{Started: now, InFlight: 1, Limit: 1, Queued: 5, CPU: -1}, now)
		}
		busy(0)           // opens the window
		busy(time.Second) // closes it: 1 job/s
		thr, ok := h.Estimate(1)
		require.True(t, ok)
		require.InDelta(t, 1.0, thr, 1e-9)
		// The next window closes a minute later: the estimate is older than
		// StaleAfter by then and is dropped before the new one is recorded.
		busy(61 * time.Second)
		thr, ok = h.Estimate(1)
		require.True(t, ok)
		require.InDelta(t, 1.0/60, thr, 1e-9, "forgotten, not averaged in (which would give 0.8)")
	})

	t.Run("CompletionsStartedBeforeAChangeAreIgnored", func(t *testing.T) {
		t.Parallel()
		h, err := adaptive.NewHillClimb(cfg)
		require.NoError(t, err)
		now, levels := feed(h, epoch, 11, every(100*time.Millisecond), 5, -1)
		require.Equal(t, []int{1, 2}, levels, "the 11th completion closed the first window")
		changed := now
		for range 100 {
			now = now.Add(10 * time.Millisecond)
			h.Observe(adaptive.Observation{Started: changed.Add(-time.Millisecond), InFlight: 2, Limit: 2, Queued: 5, CPU: -1}, now)
		}
		_, ok := h.Estimate(2)
		require.False(t, ok, "no window was measured from warm-up completions")
		require.Equal(t, 2, h.Limit())
	})

	t.Run("CPUSaturationStopsGrowth", func(t *testing.T) {
		t.Parallel()
		h, err := adaptive.NewHillClimb(cfg)
		require.NoError(t, err)
		_, levels := feed(h, epoch, 400, scaling(8), 5, 0.99)
		require.Equal(t, []int{1}, levels)
	})

	t.Run("SameSeedSameLevels", func(t *testing.T) {
		t.Parallel()
		run := func() []int {
			h, err := adaptive.NewHillClimb(adaptive.Config{Seed: 9})
			require.NoError(t, err)
			rng := rand.New(rand.NewPCG(3, 4))
			now := epoch
			var out []int
			for range 3000 {
				now = now.Add(sec(rng.Float64() / 20))
				l := h.Limit()
				out = append(out, h.Observe(adaptive.Observation{Started: now, InFlight: l, Limit: l, Queued: rng.IntN(3), CPU: -1}, now))
			}
			return out
		}
		require.Equal(t, run(), run())
	})
}

// noRise drives a fresh policy with random observations of the kind given
// and reports whether the level ever rose above where it started.
func noRise(t *testing.T, kind adaptive.PolicyKind, seed uint64, initial uint8, steps uint16, gen func(rng *rand.Rand, now time.Time, limit int) adaptive.Observation) bool {
	t.Helper()
	start := 1 + int(initial)%64
	p, err := adaptive.NewPolicy(kind, adaptive.Config{Seed: seed, InitialLimit: start, MinSamples: 5, SampleInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(seed, uint64(steps)))
	now := epoch
	for range int(steps)%4000 + 200 {
		now = now.Add(sec(rng.Float64() / 10))
		if l := p.Observe(gen(rng, now, p.Limit()), now); l > start {
			t.Logf("%v: seed %d, start %d, rose to %d", kind, seed, start, l)
			return false
		}
	}
	return true
}

// Property: under app-limited load (nobody ever waits, fewer in flight than
// allowed) the default and latency policies never raise the level.
func TestNoUpwardDriftWhenAppLimited(t *testing.T) {
	t.Parallel()
	for _, kind := range []adaptive.PolicyKind{adaptive.PolicyDefault, adaptive.PolicyVegas} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			prop := func(seed uint64, initial uint8, steps uint16) bool {
				return noRise(t, kind, seed, initial, steps, func(rng *rand.Rand, now time.Time, limit int) adaptive.Observation {
					return appLimited(now, 1+rng.IntN(limit), limit, sec(rng.Float64()))
				})
			}
			require.NoError(t, quick.Check(prop, &quick.Config{MaxCount: 100}))
		})
	}
	t.Run("CatchesTheSeedsDrift", func(t *testing.T) {
		t.Parallel()
		prop := func(seed uint64, initial uint8, steps uint16) bool {
			return noRise(t, adaptive.PolicySeed, seed, initial, steps, func(rng *rand.Rand, now time.Time, limit int) adaptive.Observation {
				return appLimited(now, 1+rng.IntN(limit), limit, sec(rng.Float64()))
			})
		}
		require.Error(t, quick.Check(prop, &quick.Config{MaxCount: 50}), "the property must fail for the seed's rule")
	})
}

// Property: while the CPU is saturated the default policy never raises the
// level, however busy the queue.
func TestNoRiseWhileCPUSaturated(t *testing.T) {
	t.Parallel()
	prop := func(seed uint64, initial uint8, steps uint16) bool {
		return noRise(t, adaptive.PolicyDefault, seed, initial, steps, func(rng *rand.Rand, now time.Time, limit int) adaptive.Observation {
			return adaptive.Observation{Arrival: now.Add(-time.Second), Started: now.Add(-sec(rng.Float64() / 10)),
				InFlight: limit, Limit: limit, Queued: 1 + rng.IntN(50), CPU: 0.95 + 0.05*rng.Float64()}
		})
	}
	require.NoError(t, quick.Check(prop, &quick.Config{MaxCount: 100}))
}

func TestVegas(t *testing.T) {
	t.Parallel()
	cfg := adaptive.Config{SampleInterval: time.Second, MinSamples: 10, InitialLimit: 10}

	observe := func(v *adaptive.Vegas, now time.Time, n int, rtt time.Duration, queued int) time.Time {
		for range n {
			now = now.Add(50 * time.Millisecond)
			l := v.Limit()
			v.Observe(adaptive.Observation{Arrival: now.Add(-rtt), Started: now.Add(-rtt), InFlight: l, Limit: l, Queued: queued, CPU: -1}, now)
		}
		return now
	}

	t.Run("GrowsWhileLatencyStaysAtNoLoad", func(t *testing.T) {
		t.Parallel()
		v, err := adaptive.NewVegas(cfg)
		require.NoError(t, err)
		now := observe(v, epoch, 21, 100*time.Millisecond, 5)
		require.Equal(t, 16, v.Limit(), "queue 0 <= threshold: grow by beta = 6*log10(10)")
		observe(v, now, 21, 100*time.Millisecond, 5)
		require.Greater(t, v.Limit(), 16)
	})

	t.Run("ShrinksWhenLatencyShowsAQueue", func(t *testing.T) {
		t.Parallel()
		v, err := adaptive.NewVegas(cfg)
		require.NoError(t, err)
		now := observe(v, epoch, 21, 100*time.Millisecond, 5) // no-load 100 ms, limit 16
		observe(v, now, 21, 400*time.Millisecond, 5)          // queue 16*(1-1/4) = 12 > beta 7.2
		require.Equal(t, 15, v.Limit())
	})

	t.Run("HoldsWhenAppLimited", func(t *testing.T) {
		t.Parallel()
		v, err := adaptive.NewVegas(cfg)
		require.NoError(t, err)
		observe(v, epoch, 100, 100*time.Millisecond, 0)
		require.Equal(t, 10, v.Limit())
	})
}
