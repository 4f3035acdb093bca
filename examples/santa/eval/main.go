// Command eval measures the adaptive policies in simulated time
// (deterministic, a few seconds of real time) on the services of sim.Suite:
// a flat CPU-bound service on 2 cores, a resource congested beyond K=20, and
// three with a sharp optimum (throughput collapses past a contention point),
// two of which move it (the contention point shifts mid-run; the capacity
// halves for a minute), and one whose optimum rises on a broad top
// (usl-rise), then on sim.HeldOut's service, whose optimum drifts down
// gradually by a factor of 5 (cache-drift). For each service it sweeps fixed levels, runs each
// policy under saturation for 300 s, and scores it as the fraction of the gap
// between the worst and the best fixed level (of each stage, for the moving
// services) that it recovers. It prints a markdown report and writes one SVG
// per policy.
//
// The report ends with a verdict per service: the default policy against the
// best fixed level of the sweep (one level for the whole run, chosen in
// hindsight) and against the seed's Queued mailbox (a fixed 4), in points of
// the gap. The default LOSES on a service where either recovers more than
// -tolerance points (default 1) more than it does. The services are
// sim.Suite, on which the default was tuned, and sim.HeldOut, on which it was
// not (marked "held out").
//
// Exit status: 0 when the default loses nowhere beyond the tolerance, 3 when
// it loses on at least one service (the report and the plots are still
// written; the verdict names each loss), 1 on any other error, 2 on bad
// flags. Use -tolerance 100 to print the report without failing.
//
//	go run ./examples/santa/eval -plots examples/santa/plots
package main

import (
	"errors"
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
	// queuedLevel is the seed's Queued mailbox: "The mailbox will now run
	// only 4 tasks at the same time at most".
	queuedLevel = 4
	// exitLost is the exit status when the default loses on some service.
	exitLost = 3
)

// errDefaultLost is returned by run, after the whole report, when the default
// policy lost to the best fixed level or to the Queued mailbox on at least
// one service by more than the tolerance.
var errDefaultLost = errors.New("the default policy lost")

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
	tol := flag.Float64("tolerance", 1, "points of the gap (0-100) by which the default may trail the best fixed level or the queued mailbox on a service before the evaluation fails (exit status 3)")
	flag.Parse()
	if *tol < 0 || math.IsNaN(*tol) {
		fmt.Fprintf(os.Stderr, "eval: -tolerance %v is negative; give the points of the gap the default may lose by, e.g. -tolerance 1 (100 never fails)\n", *tol)
		os.Exit(2)
	}
	cases := append(sim.Suite(), sim.HeldOut()...)
	if err := run(os.Stdout, options{plots: *plots, seed: *seed, tolerance: *tol, cases: cases}); err != nil {
		fmt.Fprintln(os.Stderr, "eval:", err)
		os.Exit(exitCode(err))
	}
}

// exitCode is the exit status for run's error: exitLost when the default
// lost (the report is complete), 1 for any other failure, 0 for none.
func exitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errDefaultLost):
		return exitLost
	}
	return 1
}

func kind(k adaptive.PolicyKind) func(uint64) (adaptive.Policy, error) {
	return func(seed uint64) (adaptive.Policy, error) { return adaptive.NewPolicy(k, adaptive.Config{Seed: seed}) }
}

// queuedName is the report's name of the seed's Queued mailbox.
var queuedName = fmt.Sprintf("queued (fixed %d)", queuedLevel)

func policies() []policy {
	return []policy{
		{name: "default", make: kind(adaptive.PolicyDefault), competes: true},
		{name: "default+cpu", make: kind(adaptive.PolicyDefault), useCPU: true},
		{name: "seed", make: kind(adaptive.PolicySeed), competes: true},
		{name: "vegas", make: kind(adaptive.PolicyVegas), competes: true},
		{name: queuedName, make: func(uint64) (adaptive.Policy, error) { return adaptive.NewFixed(queuedLevel) }, reference: true},
		{name: "parallel (unbounded)", make: func(uint64) (adaptive.Policy, error) { return adaptive.Unbounded(), nil }, reference: true},
	}
}

// score is one policy's result on one service.
type score struct {
	service, policy string
	gap             float64
}

// options are the command's flags and the services to evaluate.
type options struct {
	plots string // directory for the SVGs, empty for none
	seed  uint64
	// tolerance is in points of the gap (1 = 1%): how far the default may
	// trail the best fixed level or the queued mailbox before it loses.
	tolerance float64
	cases     []sim.Case
}

func run(w io.Writer, o options) error {
	plotDir, seed := o.plots, o.seed
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
	for _, c := range o.cases {
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
	var judged []judgement
	for _, s := range sweeps {
		j := judgement{service: s.c.Name, heldOut: isHeldOut(s.c.Name),
			best: reference{name: fmt.Sprintf("the best fixed level (%d)", s.b.StaticLevel), thr: s.b.Static, gap: s.b.GapRecovered(s.b.Static)}}
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
			switch p.name {
			case "default":
				j.thr, j.gap = thr, gap
			case queuedName:
				j.queued = reference{name: fmt.Sprintf("the seed's queued mailbox (fixed %d)", queuedLevel), thr: thr, gap: gap}
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
		judged = append(judged, j)
	}
	wins := tally(scores)
	printf("\nWins or ties (within %.0f points of the gap) among the tuned policies, per service:\n\n", 100*tie)
	for _, name := range []string{"default", "seed", "vegas"} {
		printf("- %s: %d of %d (%s)\n", name, len(wins[name]), len(sweeps), strings.Join(wins[name], ", "))
	}
	printf("\nVerdict: the default against the best fixed level (one level for the whole run, known only in hindsight) and the seed's queued mailbox (fixed %d), per service; it LOSES where either recovers more than %.1f points of the gap more than it does.\n\n", queuedLevel, o.tolerance)
	var lost []string
	for _, j := range judged {
		line, l := j.verdict(o.tolerance)
		printf("- %s\n", line)
		if l {
			lost = append(lost, j.label())
		}
	}
	var verr error
	if len(lost) > 0 {
		verr = fmt.Errorf("%w on %d of %d services (%s) by more than %.1f points of the gap; exit status %d", errDefaultLost, len(lost), len(judged), strings.Join(lost, ", "), o.tolerance, exitLost)
		printf("\nThe default LOSES on %d of %d services: %s (exit status %d).\n", len(lost), len(judged), strings.Join(lost, ", "), exitLost)
	} else {
		printf("\nThe default loses on none of the %d services beyond %.1f points (exit status 0).\n", len(judged), o.tolerance)
	}
	if werr != nil {
		return werr
	}
	if plotDir == "" {
		return verr
	}
	if err := os.MkdirAll(plotDir, 0o755); err != nil {
		return fmt.Errorf("create plot directory: %w", err)
	}
	for _, name := range order {
		if err := writeChart(filepath.Join(plotDir, "eval-"+name+".svg"), charts[name]); err != nil {
			return err
		}
	}
	return verr
}

func isHeldOut(name string) bool {
	return slices.ContainsFunc(sim.HeldOut(), func(c sim.Case) bool { return c.Name == name })
}

// reference is what the default is judged against on a service.
type reference struct {
	name     string  // as printed: "the best fixed level (2)"
	thr, gap float64 // jobs/s and fraction of the gap recovered over 30-300 s
}

// judgement is the default's score on one service and its two references.
type judgement struct {
	service      string
	heldOut      bool
	thr, gap     float64 // the default's
	best, queued reference
}

func (j judgement) label() string {
	if j.heldOut {
		return j.service + " (held out)"
	}
	return j.service
}

// verdict states plainly whether the default loses on the service: it loses
// when the best fixed level or the queued mailbox recovers more than tol
// points of the gap (1 = 1%) more than it does, and the line says by how
// much, in points and in throughput.
func (j judgement) verdict(tol float64) (string, bool) {
	lost := false
	var parts []string
	for _, r := range []reference{j.best, j.queued} {
		d := 100 * (r.gap - j.gap)
		var rel string
		switch {
		case d > tol:
			lost = true
			rel = fmt.Sprintf("the default is %.1f points behind (%.1f%% less throughput)", d, 100*(r.thr-j.thr)/r.thr)
		case d >= 0.05:
			rel = fmt.Sprintf("the default is %.1f points behind, within the tolerance", d)
		case d > -0.05:
			rel = "the default is level with it"
		default:
			rel = fmt.Sprintf("the default is %.1f points ahead", -d)
		}
		parts = append(parts, fmt.Sprintf("%s recovers %.1f%% (%.1f jobs/s): %s", r.name, 100*r.gap, r.thr, rel))
	}
	word := "holds"
	if lost {
		word = "LOSES"
	}
	return fmt.Sprintf("%s: the default %s: it recovers %.1f%% of the gap (%.1f jobs/s); %s", j.label(), word, 100*j.gap, j.thr, strings.Join(parts, "; ")), lost
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
