// Command eval measures the adaptive policies in simulated time
// (deterministic, a few seconds of real time) on the services of sim.Suite:
// a flat CPU-bound service on 2 cores, a resource congested beyond K=20, and
// three with a sharp optimum (throughput collapses past a contention point),
// two of which move it (the contention point shifts mid-run; the capacity
// halves for a minute). For each service it sweeps fixed levels, runs each
// policy under saturation for 300 s, and scores it as the fraction of the gap
// between the worst and the best fixed level (of each stage, for the moving
// services) that it recovers. It prints a markdown report and writes one SVG
// per policy.
//
//	go run ./examples/santa/eval -plots examples/santa/plots
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/foreman-actors/foreman/actors/adaptive"
	"github.com/foreman-actors/foreman/actors/adaptive/sim"
	"github.com/foreman-actors/foreman/examples/santa/internal/plot"
)

const (
	budget = 30.0  // seconds to converge, excluded from the score
	long   = 300.0 // ten times the budget
	// tie is how close (in fraction of the gap) two policies must be to tie.
	tie = 0.01
)

// policy is one row of the report. Only tuned policies compete for the
// default; the seed's static mailboxes are references.
type policy struct {
	name      string
	make      func(seed uint64) (adaptive.Policy, error)
	useCPU    bool
	competes  bool
	reference bool
}

func main() {
	plots := flag.String("plots", "", "directory to write one SVG per policy into (empty: no plots)")
	seed := flag.Uint64("seed", 1, "random seed of the policies and the loads")
	flag.Parse()
	if err := run(os.Stdout, *plots, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "eval:", err)
		os.Exit(1)
	}
}

func kind(k adaptive.PolicyKind) func(uint64) (adaptive.Policy, error) {
	return func(seed uint64) (adaptive.Policy, error) { return adaptive.NewPolicy(k, adaptive.Config{Seed: seed}) }
}

func policies() []policy {
	return []policy{
		{name: "default", make: kind(adaptive.PolicyDefault), competes: true},
		{name: "default+cpu", make: kind(adaptive.PolicyDefault), useCPU: true},
		{name: "seed", make: kind(adaptive.PolicySeed), competes: true},
		{name: "vegas", make: kind(adaptive.PolicyVegas), competes: true},
		{name: "queued (fixed 4)", make: func(uint64) (adaptive.Policy, error) { return adaptive.NewFixed(4) }, reference: true},
		{name: "parallel (unbounded)", make: func(uint64) (adaptive.Policy, error) { return adaptive.Unbounded(), nil }, reference: true},
	}
}

// score is one policy's result on one service.
type score struct {
	service, policy string
	gap             float64
}

func run(w io.Writer, plotDir string, seed uint64) error {
	// The report is written line by line; the first failed write is kept and
	// returned at the end.
	var werr error
	printf := func(format string, args ...any) {
		if _, err := fmt.Fprintf(w, format, args...); err != nil && werr == nil {
			werr = fmt.Errorf("write the report: %w", err)
		}
	}
	printf("Simulated time, seed %d, 300 s per run; saturated = 200 jobs always queued; scored over 30-300 s.\n\n", seed)
	printf("Fixed levels (sweep 1..N under the same load):\n\n")
	printf("| service | stages (s) | best fixed level per stage (jobs/s) | worst fixed level per stage (jobs/s) | best single level over 30-300 s (jobs/s) | oracle / worst (jobs/s) |\n|---|---|---|---|---|---|\n")
	type sweep struct {
		c sim.Case
		b sim.Bounds
	}
	var sweeps []sweep
	for _, c := range sim.Suite() {
		b := sim.Sweep(c.Saturated(long*time.Second, seed, false), c.Sweep, c.Windows(budget, long))
		sweeps = append(sweeps, sweep{c, b})
		var stages, best, worst []string
		for _, win := range b.Windows {
			stages = append(stages, fmt.Sprintf("%.0f-%.0f", win.From, win.To))
			best = append(best, fmt.Sprintf("%d (%.1f)", win.BestLevel, win.Best))
			worst = append(worst, fmt.Sprintf("%d (%.1f)", win.WorstLevel, win.Worst))
		}
		printf("| %s | %s | %s | %s | %d (%.1f); 4: %.1f; 9: %.1f | %.1f / %.1f |\n", c.Name, strings.Join(stages, ", "),
			strings.Join(best, ", "), strings.Join(worst, ", "), b.StaticLevel, b.Static, b.Levels[3], b.Levels[8], b.Best, b.Worst)
	}
	printf("\nPolicies:\n\n")
	printf("Bursty = a batch of 0..MaxBatch jobs every second, MaxBatch = 1.2 x the best single level's throughput (about 60%% of it on average): app-limited most of the time, the seed's producer.\n\n")
	printf("| service | policy | thr (jobs/s) | %% of oracle | gap recovered (%%) | gap per stage (%%) | mean level 270-300 s | max level after 30 s | p99 service (s) | bursty p99 time in system (s) | bursty mean level 270-300 s |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	charts := map[string]*plot.Chart{}
	var order []string
	var scores []score
	for _, s := range sweeps {
		for _, p := range policies() {
			if p.useCPU && s.c.Service.CPU(1) < 0 {
				continue
			}
			pol, err := p.make(seed)
			if err != nil {
				return fmt.Errorf("policy %s: %w", p.name, err)
			}
			r := sim.Run(s.c.Saturated(long*time.Second, seed, p.useCPU), pol)
			bursty := s.c.Saturated(long*time.Second, seed, p.useCPU)
			bursty.Load = sim.Bursts{Interval: time.Second, MaxBatch: int(math.Round(1.2 * s.b.Static))}
			if pol, err = p.make(seed); err != nil {
				return fmt.Errorf("policy %s: %w", p.name, err)
			}
			bur := sim.Run(bursty, pol)
			thr := r.Throughput(budget, long)
			gap := s.b.GapRecovered(thr)
			var per []string
			for _, g := range s.b.WindowGaps(r) {
				per = append(per, fmt.Sprintf("%.1f", 100*g))
			}
			printf("| %s | %s | %.1f | %.1f | %.1f | %s | %s | %s | %.3f | %.3f | %s |\n", s.c.Name, p.name, thr, 100*s.b.OfBest(thr), 100*gap,
				strings.Join(per, " / "), level(r.MeanLimit(long-budget, long)), level(float64(r.MaxLimitBetween(budget, long))),
				r.Percentile(99, true, budget, long), bur.Percentile(99, false, budget, long), level(bur.MeanLimit(long-budget, long)))
			if p.competes {
				scores = append(scores, score{service: s.c.Name, policy: p.name, gap: gap})
			}
			if p.reference {
				continue
			}
			ch := charts[p.name]
			if ch == nil {
				ch = &plot.Chart{Title: "policy " + p.name + " (simulated, saturated)", XLabel: "time (s)"}
				charts[p.name] = ch
				order = append(order, p.name)
			}
			ch.Panels = append(ch.Panels, levelPanel(s.c, s.b, r))
		}
	}
	wins := tally(scores)
	printf("\nWins or ties (within %.0f points of the gap) among the tuned policies, per service:\n\n", 100*tie)
	for _, name := range []string{"default", "seed", "vegas"} {
		printf("- %s: %d of %d (%s)\n", name, len(wins[name]), len(sweeps), strings.Join(wins[name], ", "))
	}
	if werr != nil {
		return werr
	}
	if plotDir == "" {
		return nil
	}
	if err := os.MkdirAll(plotDir, 0o755); err != nil {
		return fmt.Errorf("create plot directory: %w", err)
	}
	for _, name := range order {
		if err := writeChart(filepath.Join(plotDir, "eval-"+name+".svg"), charts[name]); err != nil {
			return err
		}
	}
	return nil
}

// tally returns, per policy, the services on which it wins or ties: its gap
// recovered is within tie of the best policy's on that service.
func tally(scores []score) map[string][]string {
	best := map[string]float64{}
	var services []string
	for _, s := range scores {
		if v, ok := best[s.service]; !ok || s.gap > v {
			if !ok {
				services = append(services, s.service)
			}
			best[s.service] = s.gap
		}
	}
	out := map[string][]string{}
	for _, svc := range services {
		for _, s := range scores {
			if s.service == svc && s.gap >= best[svc]-tie {
				out[s.policy] = append(out[s.policy], svc)
			}
		}
	}
	return out
}

func writeChart(path string, ch *plot.Chart) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create plot: %w", err)
	}
	err = ch.WriteSVG(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// levelPanel draws a run's level and in-flight count against the best fixed
// level of each stage. Levels above the sweep (the unbounded mailbox, the
// seed's drift) are clipped to twice the sweep so the oracle stays readable.
func levelPanel(c sim.Case, b sim.Bounds, r sim.Result) plot.Panel {
	clip := float64(2 * c.Sweep)
	var t, lim, inflight, orc []float64
	for _, p := range r.Series {
		t = append(t, p.T)
		lim = append(lim, math.Min(clip, float64(p.Limit)))
		inflight = append(inflight, math.Min(clip, float64(p.InFlight)))
		o := math.NaN()
		if i := slices.IndexFunc(b.Windows, func(w sim.Window) bool { return p.T >= w.From && p.T < w.To }); i >= 0 {
			o = float64(b.Windows[i].BestLevel)
		}
		orc = append(orc, o)
	}
	return plot.Panel{Title: c.Name, YLabel: "jobs", Series: []plot.Series{
		{Name: "parallelism", X: t, Y: lim}, {Name: "in flight", X: t, Y: inflight}, {Name: "best fixed level", X: t, Y: orc}}}
}

func level(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v >= adaptive.Unlimited:
		return "unbounded"
	}
	return fmt.Sprintf("%.1f", v)
}
