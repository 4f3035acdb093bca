package sim_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/adaptive"
	"github.com/foreman-actors/foreman/actors/adaptive/sim"
)

func suiteCase(t *testing.T, name string) sim.Case {
	t.Helper()
	for _, c := range sim.Suite() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no case %q", name)
	return sim.Case{}
}

func TestThrashingHasASharpOptimum(t *testing.T) {
	t.Parallel()
	c := suiteCase(t, "thrash")
	thr := func(l int) float64 {
		return sim.Run(c.Saturated(30*time.Second, 1, false), adaptive.Fixed(l)).Throughput(5, 30)
	}
	best := thr(16)
	require.InDelta(t, 160, best, 5)
	require.InDelta(t, best/2, thr(20), 0.05*best, "four jobs too many halve the throughput")
	require.Less(t, thr(32), best/4)
	require.InDelta(t, best*15/16, thr(15), 0.03*best)
}

func TestStagesSwitchAtTheirInstant(t *testing.T) {
	t.Parallel()
	c := suiteCase(t, "shift")
	r := sim.Run(c.Saturated(300*time.Second, 1, false), adaptive.Fixed(16))
	require.InDelta(t, 160, r.Throughput(10, 150), 4, "K=16 before 150 s")
	// 16 jobs where K=6: 6/(1+0.25*10) jobs' worth of work per second.
	require.InDelta(t, 10*6/3.5, r.Throughput(155, 300), 1, "K=6 after")

	require.Equal(t, []sim.Window{{From: 30, To: 150}, {From: 150, To: 300}}, c.Windows(30, 300))
	require.Equal(t, []sim.Window{{From: 30, To: 300}}, suiteCase(t, "thrash").Windows(30, 300))
	require.Equal(t, []sim.Window{{From: 130, To: 180}, {From: 180, To: 200}}, suiteCase(t, "halve").Windows(130, 200))
}

func TestSweepFindsTheBoundsOfEachWindow(t *testing.T) {
	t.Parallel()
	c := suiteCase(t, "halve")
	b := sim.Sweep(c.Saturated(300*time.Second, 1, false), c.Sweep, c.Windows(30, 300))
	got := make([]string, len(b.Windows))
	for i, w := range b.Windows {
		got[i] = fmt.Sprintf("%v-%v best %d worst %d", w.From, w.To, w.BestLevel, w.WorstLevel)
	}
	require.Equal(t, []string{"30-120 best 12 worst 1", "120-180 best 6 worst 48", "180-300 best 12 worst 1"}, got)
	require.Equal(t, 12, b.StaticLevel)
	require.Greater(t, b.Best, b.Static, "the oracle that follows the stages beats every single level")
	require.InDelta(t, 1, b.GapRecovered(b.Best), 1e-9)
	require.InDelta(t, 0, b.GapRecovered(b.Worst), 1e-9)
}

// The evaluation can fail: the seed's naive and queued mailboxes, the seed's
// tuner and a level that is right before the optimum moves all score low on
// the services with a sharp, moving optimum.
func TestTheEvaluationTellsPoliciesApart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		service string
		policy  func() adaptive.Policy
		maxGap  float64
	}{
		{name: "UnboundedOnThrash", service: "thrash", policy: adaptive.Unbounded, maxGap: 0.05},
		{name: "QueuedFourOnThrash", service: "thrash", policy: func() adaptive.Policy { return adaptive.Fixed(4) }, maxGap: 0.25},
		{name: "SeedRuleOnThrash", service: "thrash", policy: func() adaptive.Policy { p, _ := adaptive.NewSeed(adaptive.Config{Seed: 1}); return p }, maxGap: 0.1},
		{name: "BestStaticLevelOnShift", service: "shift", policy: func() adaptive.Policy { return adaptive.Fixed(16) }, maxGap: 0.8},
		{name: "VegasOnThrash", service: "thrash", policy: func() adaptive.Policy { p, _ := adaptive.NewVegas(adaptive.Config{Seed: 1}); return p }, maxGap: 0.85},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := suiteCase(t, tt.service)
			sc := c.Saturated(300*time.Second, 1, false)
			b := sim.Sweep(sc, c.Sweep, c.Windows(30, 300))
			gap := b.GapRecovered(sim.Run(sc, tt.policy()).Throughput(30, 300))
			require.Less(t, gap, tt.maxGap)
		})
	}
}

// Issue 20's bar for the default policy: at least 95% of the gap between the
// worst and the best fixed level on every service with a sharp optimum, and
// at least 90% in every stage of the moving ones (it must follow the move),
// for several seeds. Before the default forgot its estimates on a change
// (and halved on a drop), it recovered 76% on shift and 84% on halve.
func TestDefaultPolicyFollowsASharpMovingOptimum(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"thrash", "shift", "halve"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := suiteCase(t, name)
			b := sim.Sweep(c.Saturated(300*time.Second, 1, false), c.Sweep, c.Windows(30, 300))
			for _, seed := range []uint64{1, 2, 3} {
				p, err := adaptive.NewHillClimb(adaptive.Config{Seed: seed})
				require.NoError(t, err)
				r := sim.Run(c.Saturated(300*time.Second, seed, false), p)
				require.GreaterOrEqual(t, b.GapRecovered(r.Throughput(30, 300)), 0.95, "seed %d", seed)
				for i, g := range b.WindowGaps(r) {
					require.GreaterOrEqual(t, g, 0.9, "seed %d, window %d", seed, i)
				}
			}
		})
	}
}
