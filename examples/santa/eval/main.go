// Command eval measures the adaptive policies against an oracle, in simulated
// time (deterministic, a few seconds of real time): for a CPU-bound service
// on 2 cores and a resource whose latency grows beyond K=20 in flight, it
// sweeps fixed levels to find the best throughput, then runs each policy
// under saturation and under bursty app-limited load for ten times the 30 s
// convergence budget, prints a markdown report and writes one SVG per policy.
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
	"time"

	"github.com/foreman-actors/foreman/actors/adaptive"
	"github.com/foreman-actors/foreman/actors/adaptive/sim"
	"github.com/foreman-actors/foreman/examples/santa/internal/plot"
)

const (
	budget = 30.0  // seconds to converge
	long   = 300.0 // ten times the budget
)

type service struct {
	name     string
	svc      sim.Service
	work     time.Duration
	maxBatch int // bursty load: about 60% of capacity
	sweep    int
}

type policy struct {
	name   string
	kind   adaptive.PolicyKind
	useCPU bool
}

var trace bool

type row struct {
	service, policy                 string
	converge, thr30, thrLong        float64
	maxLevel, maxAfter, oracleLevel int
	p99Service                      float64
	meanEarly, meanLate             float64
	burstP99, burstEarly, burstLate float64
	burstMax                        int
	oracleBurstP99                  float64
}

func main() {
	plots := flag.String("plots", "", "directory to write one SVG per policy into (empty: no plots)")
	seed := flag.Uint64("seed", 1, "random seed of the policies and the loads")
	flag.BoolVar(&trace, "trace", false, "print each run's level series to stderr")
	flag.Parse()
	if err := run(os.Stdout, *plots, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "eval:", err)
		os.Exit(1)
	}
}

func services() []service {
	return []service{
		{name: "cpu (2 cores, 100 ms jobs)", svc: sim.CPUBound{Cores: 2, Overhead: 0.005}, work: 100 * time.Millisecond, maxBatch: 24, sweep: 16},
		{name: "congested (K=20, 50 ms jobs)", svc: sim.Congested{K: 20}, work: 50 * time.Millisecond, maxBatch: 480, sweep: 48},
	}
}

func policies() []policy {
	return []policy{
		{name: "default", kind: adaptive.PolicyDefault},
		{name: "default+cpu", kind: adaptive.PolicyDefault, useCPU: true},
		{name: "seed", kind: adaptive.PolicySeed},
		{name: "vegas", kind: adaptive.PolicyVegas},
	}
}

func scenario(s service, load sim.Load, d float64, seed uint64, useCPU bool) sim.Scenario {
	return sim.Scenario{
		Service: s.svc, Load: load, Work: s.work, WorkJitter: 0.3,
		Duration: time.Duration(d * float64(time.Second)), UseCPU: useCPU, Seed: seed,
	}
}

func run(w io.Writer, plotDir string, seed uint64) error {
	// The table is written line by line; the first failed write is kept and
	// returned once the table is done.
	var werr error
	printf := func(format string, args ...any) {
		if _, err := fmt.Fprintf(w, format, args...); err != nil && werr == nil {
			werr = fmt.Errorf("write the table: %w", err)
		}
	}
	printf("Simulated time, seed %d. Saturated = a backlog of 200 jobs always queued; bursty = a batch of 0..MaxBatch jobs every 1 s (about 60%% of capacity).\n\n", seed)
	printf("| service | policy | converge (s) | thr 30-60 s (%% oracle) | thr 30-300 s (%% oracle) | max level: run / after 30 s (oracle) | p99 service (s) | mean level 30-60 / 270-300 | bursty p99 e2e (s) (oracle) | bursty mean level 0-30 / 270-300 | bursty max level |\n")
	printf("|---|---|---|---|---|---|---|---|---|---|---|\n")
	charts := map[string]*plot.Chart{}
	for _, s := range services() {
		// Oracle: sweep fixed levels under saturation.
		bestLevel, best := 0, 0.0
		for l := 1; l <= s.sweep; l++ {
			r := sim.Run(scenario(s, sim.Backlog{Depth: 200}, 60, seed, false), adaptive.Fixed(l))
			if thr := r.Throughput(10, 60); thr > best*1.0001 {
				bestLevel, best = l, thr
			}
		}
		bursty := sim.Bursts{Interval: time.Second, MaxBatch: s.maxBatch}
		oracleBurst := sim.Run(scenario(s, bursty, long, seed, false), adaptive.Fixed(bestLevel))
		fmt.Fprintf(os.Stderr, "%s: oracle level %d, %.1f jobs/s\n", s.name, bestLevel, best)
		for _, p := range policies() {
			if p.useCPU && s.svc.CPU(1) < 0 {
				continue
			}
			cfg := adaptive.Config{Seed: seed}
			mk := func() adaptive.Policy {
				pol, err := adaptive.NewPolicy(p.kind, cfg)
				if err != nil {
					panic(err)
				}
				return pol
			}
			sat := sim.Run(scenario(s, sim.Backlog{Depth: 200}, long, seed, p.useCPU), mk())
			bur := sim.Run(scenario(s, bursty, long, seed, p.useCPU), mk())
			if trace {
				fmt.Fprintf(os.Stderr, "%s %s saturated:", s.name, p.name)
				for _, pt := range sat.Series[:60] {
					fmt.Fprintf(os.Stderr, " %d/%d", pt.Limit, pt.Completions)
				}
				fmt.Fprintf(os.Stderr, "\n%s %s bursty:", s.name, p.name)
				for _, pt := range bur.Series[:100] {
					fmt.Fprintf(os.Stderr, " %d", pt.Limit)
				}
				fmt.Fprintln(os.Stderr)
			}
			r := row{
				service: s.name, policy: p.name,
				converge:       sat.ConvergedAt(best, 0.95, 10),
				thr30:          100 * sat.Throughput(budget, 2*budget) / best,
				thrLong:        100 * sat.Throughput(budget, long) / best,
				maxLevel:       sat.MaxLimit,
				maxAfter:       sat.MaxLimitBetween(budget, long),
				oracleLevel:    bestLevel,
				p99Service:     sat.Percentile(99, true, budget, long),
				meanEarly:      sat.MeanLimit(budget, 2*budget),
				meanLate:       sat.MeanLimit(long-budget, long),
				burstP99:       bur.Percentile(99, false, budget, long),
				burstEarly:     bur.MeanLimit(0, budget),
				burstLate:      bur.MeanLimit(long-budget, long),
				burstMax:       bur.MaxLimit,
				oracleBurstP99: oracleBurst.Percentile(99, false, budget, long),
			}
			printf("| %s | %s | %s | %.1f | %.1f | %d / %d (%d) | %.3f | %.1f / %.1f | %.3f (%.3f) | %.1f / %.1f | %d |\n",
				r.service, r.policy, fnum(r.converge), r.thr30, r.thrLong, r.maxLevel, r.maxAfter, r.oracleLevel, r.p99Service,
				r.meanEarly, r.meanLate, r.burstP99, r.oracleBurstP99, r.burstEarly, r.burstLate, r.burstMax)
			ch := charts[p.name]
			if ch == nil {
				ch = &plot.Chart{Title: "policy " + p.name + " (simulated)", XLabel: "time (s)"}
				charts[p.name] = ch
			}
			ch.Panels = append(ch.Panels,
				levelPanel(s.name+", saturated", sat, bestLevel, false),
				levelPanel(s.name+", bursty", bur, bestLevel, true),
			)
		}
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
	for name, ch := range charts {
		path := filepath.Join(plotDir, "eval-"+name+".svg")
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
	}
	return nil
}

func levelPanel(title string, r sim.Result, oracle int, withQueue bool) plot.Panel {
	var t, lim, inflight, queue, orc []float64
	for _, p := range r.Series {
		t = append(t, p.T)
		lim = append(lim, float64(p.Limit))
		inflight = append(inflight, float64(p.InFlight))
		queue = append(queue, float64(p.Queue))
		orc = append(orc, float64(oracle))
	}
	ss := []plot.Series{{Name: "parallelism", X: t, Y: lim}, {Name: "in flight", X: t, Y: inflight}, {Name: "oracle level", X: t, Y: orc}}
	if withQueue {
		ss = append(ss, plot.Series{Name: "queue", X: t, Y: queue})
	}
	return plot.Panel{Title: title, YLabel: "jobs", Series: ss}
}

func fnum(v float64) string {
	if math.IsNaN(v) {
		return "never"
	}
	return fmt.Sprintf("%.0f", v)
}
