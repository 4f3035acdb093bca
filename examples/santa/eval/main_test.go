package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/foreman-actors/foreman/actors/adaptive/sim"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTally(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		scores []score
		want   map[string][]string
	}{
		{
			name: "WinnerPerService",
			scores: []score{
				{"a", "default", 0.9}, {"a", "vegas", 0.5},
				{"b", "default", 0.4}, {"b", "vegas", 0.95},
			},
			want: map[string][]string{"default": {"a"}, "vegas": {"b"}},
		},
		{
			name:   "WithinOnePointTies",
			scores: []score{{"a", "default", 0.905}, {"a", "vegas", 0.91}, {"a", "seed", 0.89}},
			want:   map[string][]string{"default": {"a"}, "vegas": {"a"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tally(tt.scores))
		})
	}
}

func suiteCase(t *testing.T, name string) sim.Case {
	t.Helper()
	for _, c := range append(sim.Suite(), sim.HeldOut()...) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no case %q", name)
	return sim.Case{}
}

// Issue 34 item 12: on the flat CPU service the default recovered 92.7% of
// the gap where the best fixed level (2) recovers all of it and the seed's
// queued mailbox (a fixed 4) 98.0%, and the evaluation did not say so. It
// must say, per service, how far the default is from both, and fail when
// that is beyond the tolerance. Since the default ends clearly losing probes
// early and keeps a clearly worse lower level for longer (issue 34 item 12,
// second round) it recovers 99.2% there: within the default tolerance of 1
// point, beyond a tolerance of half a point.
func TestEvalSaysWhetherTheDefaultLosesOnTheFlatCPUService(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	err := run(&out, options{seed: 1, tolerance: 1, cases: []sim.Case{suiteCase(t, "cpu")}})
	require.NoError(t, err, "the default is within 1 point on cpu:\n%s", out.String())
	require.Contains(t, out.String(), "cpu: the default holds: it recovers 99.2% of the gap (19.9 jobs/s)")
	require.Contains(t, out.String(), "the best fixed level (2) recovers 100.0% (20.0 jobs/s): the default is 0.8 points behind, within the tolerance")
	require.Contains(t, out.String(), "the seed's queued mailbox (fixed 4) recovers 98.0% (19.8 jobs/s): the default is 1.2 points ahead")

	out.Reset()
	err = run(&out, options{seed: 1, tolerance: 0.5, cases: []sim.Case{suiteCase(t, "cpu")}})
	require.Error(t, err, "the default is 0.8 points behind a fixed 2, beyond 0.5:\n%s", out.String())
	require.ErrorIs(t, err, errDefaultLost)
	require.Contains(t, err.Error(), "cpu")
	require.Contains(t, out.String(), "cpu: the default LOSES: it recovers 99.2% of the gap (19.9 jobs/s)")
	require.Equal(t, exitLost, exitCode(err))
}

func TestVerdict(t *testing.T) {
	t.Parallel()
	// The figures of the cpu and thrash services, seed 1.
	cpu := judgement{service: "cpu", thr: 19.2, gap: 0.927,
		best:   reference{name: "the best fixed level (2)", thr: 20, gap: 1},
		queued: reference{name: "the seed's queued mailbox (fixed 4)", thr: 19.8, gap: 0.98}}
	thrash := judgement{service: "thrash", thr: 159.1, gap: 0.994,
		best:   reference{name: "the best fixed level (16)", thr: 160.1, gap: 1},
		queued: reference{name: "the seed's queued mailbox (fixed 4)", thr: 40, gap: 0.2}}
	tests := []struct {
		name     string
		j        judgement
		tol      float64
		lost     bool
		contains []string
	}{
		{name: "CPULoses", j: cpu, tol: 1, lost: true, contains: []string{
			"cpu: the default LOSES: it recovers 92.7% of the gap (19.2 jobs/s)",
			"the best fixed level (2) recovers 100.0% (20.0 jobs/s): the default is 7.3 points behind (4.0% less throughput)",
			"the seed's queued mailbox (fixed 4) recovers 98.0% (19.8 jobs/s): the default is 5.3 points behind (3.0% less throughput)"}},
		{name: "CPUWithinAWideTolerance", j: cpu, tol: 8, lost: false, contains: []string{
			"cpu: the default holds", "the default is 7.3 points behind, within the tolerance"}},
		{name: "OnlyTheQueuedMailboxBeatsIt", j: judgement{service: "x", heldOut: true, thr: 10, gap: 0.9,
			best:   reference{name: "the best fixed level (9)", thr: 10, gap: 0.9},
			queued: reference{name: "the seed's queued mailbox (fixed 4)", thr: 11, gap: 0.95}}, tol: 1, lost: true, contains: []string{
			"x (held out): the default LOSES", "the best fixed level (9) recovers 90.0% (10.0 jobs/s): the default is level with it",
			"queued mailbox (fixed 4) recovers 95.0% (11.0 jobs/s): the default is 5.0 points behind"}},
		{name: "ThrashWithinTolerance", j: thrash, tol: 1, lost: false, contains: []string{
			"thrash: the default holds: it recovers 99.4% of the gap (159.1 jobs/s)",
			"the best fixed level (16) recovers 100.0% (160.1 jobs/s): the default is 0.6 points behind, within the tolerance",
			"the seed's queued mailbox (fixed 4) recovers 20.0% (40.0 jobs/s): the default is 79.4 points ahead"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			line, lost := tt.j.verdict(tt.tol)
			require.Equal(t, tt.lost, lost, line)
			for _, c := range tt.contains {
				require.Contains(t, line, c)
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	require.Equal(t, 0, exitCode(nil))
	require.Equal(t, exitLost, exitCode(fmt.Errorf("%w on 1 of 6 services", errDefaultLost)))
	require.Equal(t, 1, exitCode(errors.New("write the report: broken pipe")))
}
