package sim_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/adaptive"
	"github.com/foreman-actors/foreman/actors/adaptive/sim"
)

type service struct {
	name   string
	svc    sim.Service
	work   time.Duration
	oracle int
	best   float64 // jobs/s at the oracle level
}

var services = []service{
	{name: "CPUBound", svc: sim.CPUBound{Cores: 2, Overhead: 0.005}, work: 100 * time.Millisecond, oracle: 2, best: 20},
	{name: "Congested", svc: sim.Congested{K: 20}, work: 50 * time.Millisecond, oracle: 20, best: 400},
}

func saturated(s service, d time.Duration) sim.Scenario {
	return sim.Scenario{Service: s.svc, Load: sim.Backlog{Depth: 100}, Work: s.work, WorkJitter: 0.3, Duration: d, Seed: 1}
}

func TestServicesHaveTheirKnownOptimum(t *testing.T) {
	t.Parallel()
	for _, s := range services {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			thr := func(l int) float64 {
				return sim.Run(saturated(s, 30*time.Second), adaptive.Fixed(l)).Throughput(5, 30)
			}
			best := thr(s.oracle)
			require.InDelta(t, s.best, best, 0.03*s.best)
			require.Greater(t, best, thr(s.oracle-1))
			require.Greater(t, best, thr(s.oracle+1))
			require.InDelta(t, s.best/float64(s.oracle), thr(1), 0.05*s.best/float64(s.oracle), "one job at a time")
		})
	}
}

// The goal of issue 8: the default policy reaches 95% of the oracle within
// 30 s of simulated time and does not drift upwards over ten times that.
func TestDefaultPolicyMeetsTheGoal(t *testing.T) {
	t.Parallel()
	for _, s := range services {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			p, err := adaptive.NewHillClimb(adaptive.Config{})
			require.NoError(t, err)
			r := sim.Run(saturated(s, 300*time.Second), p)
			require.GreaterOrEqual(t, r.Throughput(30, 60), 0.95*s.best)
			require.GreaterOrEqual(t, r.Throughput(30, 300), 0.95*s.best)
			require.LessOrEqual(t, r.MeanLimit(270, 300), float64(s.oracle)+0.5, "no upward drift")
			require.LessOrEqual(t, r.MaxLimitBetween(30, 300), s.oracle+1, "after convergence, at most a probe above")
		})
	}
}

func TestBurstyLoadDoesNotMakeTheDefaultDrift(t *testing.T) {
	t.Parallel()
	s := services[0]
	p, err := adaptive.NewHillClimb(adaptive.Config{})
	require.NoError(t, err)
	r := sim.Run(sim.Scenario{
		Service: s.svc, Work: s.work, WorkJitter: 0.3, Duration: 300 * time.Second, Seed: 1,
		Load: sim.Bursts{Interval: time.Second, MaxBatch: 24},
	}, p)
	require.LessOrEqual(t, r.MaxLimitBetween(30, 300), 4)
	seed, err := adaptive.NewSeed(adaptive.Config{})
	require.NoError(t, err)
	rs := sim.Run(sim.Scenario{
		Service: s.svc, Work: s.work, WorkJitter: 0.3, Duration: 300 * time.Second, Seed: 1,
		Load: sim.Bursts{Interval: time.Second, MaxBatch: 24},
	}, seed)
	require.Greater(t, rs.MeanLimit(270, 300), 10.0, "the seed's rule drifts on the same load")
}

func TestRunIsDeterministic(t *testing.T) {
	t.Parallel()
	run := func() sim.Result {
		p, err := adaptive.NewHillClimb(adaptive.Config{Seed: 5})
		require.NoError(t, err)
		return sim.Run(sim.Scenario{
			Service: services[1].svc, Work: 50 * time.Millisecond, WorkJitter: 0.3, Duration: 20 * time.Second, Seed: 3,
			Load: sim.Phases{{Until: 10 * time.Second, Load: sim.Backlog{Depth: 50}}, {Until: 20 * time.Second, Load: sim.Bursts{Interval: time.Second, MaxBatch: 100}}},
		}, p)
	}
	a, b := run(), run()
	require.Equal(t, a, b)
	require.NotEmpty(t, a.Done)
	require.Len(t, a.Series, 20)
}
