package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/foreman-actors/foreman/actors/sim"
)

// simArgs is `foreman sim`'s command line.
type simArgs struct {
	cfg      sim.Config
	seeds    int
	from     uint64
	seed     uint64
	one      bool // --seed given: replay one schedule
	trace    bool
	parallel int
	every    time.Duration
}

// runSim searches schedules of the simulated cluster for a broken
// invariant (`foreman sim --seeds N`), or replays one (`foreman sim --seed
// S --trace`). Exit codes: 0 every schedule held, 1 an invariant broke (the
// seed and the shortened trace are printed), 2 a bad command line.
func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a, err := parseSimArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		printErr(stderr, "foreman sim: %v\n", err)
		return 2
	}
	if a.one {
		return replaySeed(ctx, a, stdout, stderr)
	}
	return searchSeeds(ctx, a, stdout, stderr)
}

func parseSimArgs(args []string, stderr io.Writer) (simArgs, error) {
	fs := flag.NewFlagSet("foreman sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		printErr(stderr, `Usage: foreman sim [--seeds N] [--from S] [flags]     search N schedules for a broken invariant
       foreman sim --seed S [--trace] [flags]           replay one schedule (byte for byte)

Runs the protocol's pure cores (master, worker, frontend, waiter, lease,
membership view) as a whole cluster in one goroutine on virtual time, with
the faults below, and checks the invariants after every step. The same
seed and flags give the same schedule. Docs: docs/simulation.md.

`)
		fs.PrintDefaults()
	}
	d := sim.DefaultConfig()
	a := simArgs{cfg: d}
	fs.IntVar(&a.seeds, "seeds", 1000, "schedules to search (seeds --from .. --from+N-1)")
	from := fs.String("from", "", "first seed of the search (default: from the wall clock; printed, so a search can be repeated)")
	seed := fs.String("seed", "", "replay this one seed (a failing search prints it)")
	fs.BoolVar(&a.trace, "trace", false, "with --seed: print the whole trace (every delivery, timer, journal write and fault)")
	fs.IntVar(&a.parallel, "parallel", runtime.GOMAXPROCS(0), "schedules run at once (each on one goroutine)")
	fs.DurationVar(&a.every, "progress", time.Second, "how often the search prints its progress line (0: never)")
	fs.IntVar(&a.cfg.Backends, "backends", d.Backends, "backend nodes (they host the shards' masters)")
	fs.IntVar(&a.cfg.Shards, "shards", d.Shards, "shards (one master and journal stream each)")
	fs.IntVar(&a.cfg.Frontends, "frontends", d.Frontends, "frontend nodes")
	fs.IntVar(&a.cfg.Workers, "workers", d.Workers, "worker nodes")
	fs.IntVar(&a.cfg.Clients, "clients", d.Clients, "clients (each submits --jobs jobs, singly and in batches; some wait, give up, re-submit)")
	fs.IntVar(&a.cfg.Jobs, "jobs", d.Jobs, "jobs per client")
	fs.DurationVar(&a.cfg.Duration, "duration", d.Duration, "virtual time during which clients submit and faults happen")
	fs.DurationVar(&a.cfg.Heal, "heal", d.Heal, "virtual time without faults before the final checks")
	fs.BoolVar(&a.cfg.Keys, "keys", false, "give about half the jobs a unique key or a concurrency key (issue 37; judged by unique_never_twice and concurrency_limit_held); changes every seed's schedule")
	fs.BoolVar(&a.cfg.Fair, "fair", false, "give jobs fairness keys, one of them flooded (issue 37; judged by fairness_bounded); changes every seed's schedule")
	fs.BoolVar(&a.cfg.Schedules, "schedules", false, "host the scheduler and add periodic schedules, one of each missed-tick policy (issue 37; judged by tick_at_most_once, tick_never_early and tick_fired); changes every seed's schedule")
	faults := fs.String("faults", "default", "the fault mix: default, none, or KIND=VALUE,... over the default (kinds: "+strings.Join(faultKinds(), ", ")+")")
	if err := fs.Parse(args); err != nil {
		return a, err
	}
	if fs.NArg() > 0 {
		return a, fmt.Errorf("unexpected argument %q (flags only; see foreman sim -h)", fs.Arg(0))
	}
	mix, err := parseFaults(*faults)
	if err != nil {
		return a, err
	}
	a.cfg.Faults = mix
	if *seed != "" {
		if a.seed, err = strconv.ParseUint(*seed, 10, 64); err != nil {
			return a, fmt.Errorf("--seed %q: want an unsigned integer", *seed)
		}
		a.one = true
	} else if a.trace {
		return a, errors.New("--trace replays one schedule: give it --seed S")
	}
	switch {
	case *from != "":
		if a.from, err = strconv.ParseUint(*from, 10, 64); err != nil {
			return a, fmt.Errorf("--from %q: want an unsigned integer", *from)
		}
	default:
		a.from = uint64(time.Now().UnixNano()) // printed: the search can be repeated
	}
	if a.seeds < 1 {
		return a, fmt.Errorf("--seeds %d: want at least 1", a.seeds)
	}
	if a.parallel < 1 {
		return a, fmt.Errorf("--parallel %d: want at least 1", a.parallel)
	}
	// The simulator checks the shape and the fault mix itself (sim.Run);
	// asking it once here turns a bad value into exit 2 before a search.
	probe := a.cfg
	probe.Duration, probe.Heal, probe.Clients = time.Millisecond, time.Millisecond, 0
	if _, err := sim.Run(context.Background(), probe); err != nil {
		return a, err
	}
	return a, nil
}

// faultSetters are the --faults kinds and the fields they set.
func faultSetters(m *sim.FaultMix) map[string]*float64 {
	return map[string]*float64{
		"loss": &m.Loss, "duplicate": &m.Duplicate, "reorder": &m.Reorder, "write-error": &m.WriteError,
		"partition": &m.Partition, "one-way": &m.OneWay, "crash": &m.Crash, "pause": &m.Pause,
		"suspicion": &m.Suspicion, "drift": &m.MaxDrift,
	}
}

func faultKinds() []string {
	var m sim.FaultMix
	kinds := make([]string, 0, 10)
	for k := range faultSetters(&m) {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// parseFaults reads --faults: "default", "none", or KIND=VALUE pairs that
// change the default mix.
func parseFaults(s string) (sim.FaultMix, error) {
	switch s {
	case "", "default":
		return sim.DefaultFaults(), nil
	case "none":
		return sim.FaultMix{}, nil
	}
	mix := sim.DefaultFaults()
	set := faultSetters(&mix)
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		field, known := set[k]
		if !ok || !known {
			return mix, fmt.Errorf("--faults %q: want default, none, or KIND=VALUE,... with KIND one of %s", kv, strings.Join(faultKinds(), ", "))
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return mix, fmt.Errorf("--faults %s=%q: want a number >= 0 (a probability per message or batch, or a rate per virtual second)", k, v)
		}
		*field = f
	}
	return mix, nil
}

// replaySeed runs one schedule and prints its report (and, with --trace,
// its whole trace).
func replaySeed(ctx context.Context, a simArgs, stdout, stderr io.Writer) int {
	cfg := a.cfg
	cfg.Seed = a.seed
	if a.trace {
		cfg.Trace = stdout
	}
	rep, err := sim.Run(ctx, cfg)
	if err != nil {
		printErr(stderr, "foreman sim: %v\n", err)
		return 1
	}
	if _, err := fmt.Fprintln(stdout, summary(rep)); err != nil {
		return outputFailed(stderr, "foreman sim", err)
	}
	if rep.Failed() {
		return printFailure(stdout, stderr, a, rep, !a.trace)
	}
	return 0
}

// searchSeeds runs a.seeds schedules in parallel, prints a progress line,
// and stops at the first broken invariant.
func searchSeeds(ctx context.Context, a simArgs, stdout, stderr io.Writer) int {
	seeds := make([]uint64, a.seeds)
	for i := range seeds {
		seeds[i] = a.from + uint64(i)
	}
	printErr(stderr, "foreman sim: searching %d schedules (seeds %d..%d), %d at once: %s\n",
		a.seeds, a.from, a.from+uint64(a.seeds)-1, a.parallel, shape(a.cfg))
	var (
		start   = time.Now()
		last    = start
		events  int
		virtual time.Duration
		faults  = map[string]int{}
		done    int
	)
	progress := func(n int, r sim.Report) {
		done, events, virtual = n, events+r.Events, virtual+r.Virtual
		for _, f := range r.Faults {
			faults[f.Kind] += f.Count
		}
		if a.every > 0 && time.Since(last) >= a.every {
			last = time.Now()
			el := time.Since(start)
			printErr(stderr, "foreman sim: %d/%d schedules, %.0f/s, %s elapsed\n", n, a.seeds, float64(n)/el.Seconds(), el.Round(time.Second))
		}
	}
	failed, err := sim.Search(ctx, a.cfg, seeds, a.parallel, progress)
	el := time.Since(start)
	if err != nil {
		printErr(stderr, "foreman sim: after %d schedules: %v\n", done, err)
		return 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, "schedules: %d in %v (%.0f/s); %d events, %v of virtual time\n", done, el.Round(time.Millisecond),
		float64(done)/el.Seconds(), events, virtual.Round(time.Second))
	fmt.Fprintf(&b, "faults exercised:")
	for _, k := range sortedKeys(faults) {
		fmt.Fprintf(&b, " %s=%d", k, faults[k])
	}
	b.WriteString("\n")
	if _, err := io.WriteString(stdout, b.String()); err != nil {
		return outputFailed(stderr, "foreman sim", err)
	}
	if failed != nil {
		return printFailure(stdout, stderr, a, *failed, true)
	}
	if _, err := fmt.Fprintln(stdout, "every invariant held"); err != nil {
		return outputFailed(stderr, "foreman sim", err)
	}
	return 0
}

// printFailure prints a broken invariant, its seed, the shortened trace
// and the command that replays it, and returns exit code 1.
func printFailure(stdout, stderr io.Writer, a simArgs, rep sim.Report, withTrace bool) int {
	var b strings.Builder
	fmt.Fprintf(&b, "FAILED: seed %d: %v\n", rep.Seed, rep.Violation)
	if withTrace && rep.Trace != "" {
		b.WriteString("trace (the lines that touch the failing job or stream, and the faults):\n")
		b.WriteString(rep.Trace)
	}
	fmt.Fprintf(&b, "replay: foreman sim --seed %d --trace%s\n", rep.Seed, replayFlags(a))
	if _, err := io.WriteString(stdout, b.String()); err != nil {
		return outputFailed(stderr, "foreman sim", err)
	}
	return 1
}

// replayFlags repeats the shape and fault flags that differ from the
// defaults, so the printed replay command runs the same schedule.
func replayFlags(a simArgs) string {
	d := sim.DefaultConfig()
	var b strings.Builder
	for _, f := range []struct {
		name   string
		v, def int
	}{
		{"backends", a.cfg.Backends, d.Backends}, {"shards", a.cfg.Shards, d.Shards},
		{"frontends", a.cfg.Frontends, d.Frontends}, {"workers", a.cfg.Workers, d.Workers},
		{"clients", a.cfg.Clients, d.Clients}, {"jobs", a.cfg.Jobs, d.Jobs},
	} {
		if f.v != f.def {
			fmt.Fprintf(&b, " --%s %d", f.name, f.v)
		}
	}
	if a.cfg.Keys {
		b.WriteString(" --keys")
	}
	if a.cfg.Fair {
		b.WriteString(" --fair")
	}
	if a.cfg.Schedules {
		b.WriteString(" --schedules")
	}
	if a.cfg.Duration != d.Duration {
		fmt.Fprintf(&b, " --duration %v", a.cfg.Duration)
	}
	if a.cfg.Heal != d.Heal {
		fmt.Fprintf(&b, " --heal %v", a.cfg.Heal)
	}
	if a.cfg.Faults != sim.DefaultFaults() {
		m := a.cfg.Faults
		set := faultSetters(&m)
		parts := make([]string, 0, len(set))
		for _, k := range faultKinds() {
			parts = append(parts, k+"="+strconv.FormatFloat(*set[k], 'g', -1, 64))
		}
		fmt.Fprintf(&b, " --faults %s", strings.Join(parts, ","))
	}
	return b.String()
}

func shape(c sim.Config) string {
	return fmt.Sprintf("%d backends, %d shards, %d frontends, %d workers, %d clients x %d jobs, %v + %v heal",
		c.Backends, c.Shards, c.Frontends, c.Workers, c.Clients, c.Jobs, c.Duration, c.Heal)
}

func summary(r sim.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d events, %v virtual; acked %d, done %d, dead %d, cancelled %d; faults:",
		r.Seed, r.Events, r.Virtual, r.Acked, r.Done, r.Dead, r.Cancelled)
	for _, f := range r.Faults {
		fmt.Fprintf(&b, " %s=%d", f.Kind, f.Count)
	}
	return b.String()
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
