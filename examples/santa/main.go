// Command santa is the seed's scenario (Santa's Mailbox, seed 004) with its
// three mailboxes side by side. Every Interval a batch of 0..MaxBatch letters
// arrives, each a CPU-bound job (factorising a large prime with the seed's
// naive algorithm), and a mailbox runs them:
//
//   - parallel: the seed's naive mailbox, every job started the moment it
//     arrives (adaptive.WithUnbounded);
//   - queued: the seed's throttled mailbox, at most -queued-limit (4) in
//     flight (adaptive.WithFixed);
//   - santa: the self-tuning mailbox (adaptive.WithPolicy, -policy).
//
// With -mailbox all the three run one after the other, each for -duration,
// on the same seeded producer (the same batches at the same offsets). The
// program prints the seed's log lines, then a comparison table, and with
// -plot draws one SVG per mailbox on the same axes.
//
//	go run ./examples/santa -mailbox all -duration 1m -interval 2s -prime 100000007 -plot santa.svg
//	go run ./examples/santa -mailbox santa -duration 10s -interval 200ms -prime 1000003   # quick demo
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/adaptive"
	"github.com/foreman-actors/foreman/examples/santa/internal/plot"
)

// SeedPrime is the seed's large prime: about 5.5 s to factorise on Santa's
// machine with the seed's naive algorithm (16 s on our 2-core test machine).
const SeedPrime = 2130093701

// The mailboxes, in the seed's order.
const (
	mailboxParallel = "parallel"
	mailboxQueued   = "queued"
	mailboxSanta    = "santa"
)

var mailboxes = []string{mailboxParallel, mailboxQueued, mailboxSanta}

type config struct {
	mailbox            string
	duration, interval time.Duration
	maxBatch           int
	queuedLimit        int
	prime              int64
	policy             string
	learning, explore  float64
	plotPath           string
	seed               uint64
	useCPU, verbose    bool
}

func main() {
	var cfg config
	flag.StringVar(&cfg.mailbox, "mailbox", mailboxSanta, "which mailbox runs: parallel, queued, santa or all (the three in turn)")
	flag.DurationVar(&cfg.duration, "duration", time.Minute, "how long each mailbox runs")
	flag.DurationVar(&cfg.interval, "interval", 5*time.Second, "time between batches (the seed: 5s)")
	flag.IntVar(&cfg.maxBatch, "max-batch", 10, "largest batch (each batch has 0..max-batch jobs; the seed: 10)")
	flag.IntVar(&cfg.queuedLimit, "queued-limit", 4, "jobs in flight for the queued mailbox (the seed: 4)")
	flag.Int64Var(&cfg.prime, "prime", SeedPrime, "the number each job factorises (smaller: quicker jobs, e.g. 1000003)")
	flag.StringVar(&cfg.policy, "policy", "default", "the santa mailbox's tuning policy: default, seed or vegas")
	flag.Float64Var(&cfg.learning, "learning-rate", adaptive.DefaultLearningRate, "alpha of the moving average, in (0, 1]")
	flag.Float64Var(&cfg.explore, "exploration-rate", adaptive.DefaultExplorationRate, "epsilon, in [0, 1) (seed policy)")
	flag.StringVar(&cfg.plotPath, "plot", "", "write an SVG plot to this file (with -mailbox all: one per mailbox, the name before .svg)")
	flag.Uint64Var(&cfg.seed, "seed", 1, "random seed of the producer and the policy")
	flag.BoolVar(&cfg.useCPU, "cpu", false, "pass this machine's CPU utilisation (/proc/stat) to the santa mailbox's policy")
	flag.BoolVar(&cfg.verbose, "v", false, "also print the scheduler's debug log")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "santa:", err)
		os.Exit(2)
	}
}

// selected returns the mailboxes -mailbox names.
func selected(name string) ([]string, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "all" {
		return mailboxes, nil
	}
	if slices.Contains(mailboxes, name) {
		return []string{name}, nil
	}
	return nil, fmt.Errorf("-mailbox %q: want parallel, queued, santa or all", name)
}

func run(ctx context.Context, out io.Writer, cfg config) error {
	which, err := selected(cfg.mailbox)
	if err != nil {
		return err
	}
	switch {
	case cfg.prime < 2:
		return fmt.Errorf("-prime %d: must be at least 2", cfg.prime)
	case cfg.interval <= 0 || cfg.duration <= 0:
		return fmt.Errorf("-interval %v and -duration %v must be positive", cfg.interval, cfg.duration)
	case cfg.maxBatch < 0:
		return fmt.Errorf("-max-batch %d: must not be negative", cfg.maxBatch)
	case cfg.plotPath != "" && !strings.HasSuffix(strings.ToLower(cfg.plotPath), ".svg"):
		return fmt.Errorf("-plot %q: only .svg is supported", cfg.plotPath)
	}
	// Build every mailbox's options first, so a bad flag fails before any run.
	opts := make(map[string][]adaptive.Option, len(which))
	for _, m := range which {
		o, err := mailboxOptions(m, cfg)
		if err != nil {
			return err
		}
		if _, err := adaptive.Props(o...); err != nil {
			return fmt.Errorf("-mailbox %s: %w", m, err)
		}
		opts[m] = o
	}
	logLevel := slog.LevelWarn
	if cfg.verbose {
		logLevel = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel}))
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}))
	defer system.Shutdown()

	var recs []*recorder
	for _, m := range which {
		if ctx.Err() != nil {
			break // interrupted: report what ran
		}
		rec := &recorder{out: out, mailbox: m}
		runMailbox(ctx, system, rec, append(opts[m], adaptive.WithLogger(logger)), cfg)
		recs = append(recs, rec)
	}
	if err := writeTable(out, recs, cfg); err != nil {
		return err
	}
	if cfg.plotPath != "" {
		return writePlots(recs, cfg)
	}
	return nil
}

// mailboxOptions returns the scheduler options of a mailbox.
func mailboxOptions(m string, cfg config) ([]adaptive.Option, error) {
	switch m {
	case mailboxParallel:
		return []adaptive.Option{adaptive.WithUnbounded()}, nil
	case mailboxQueued:
		return []adaptive.Option{adaptive.WithFixed(cfg.queuedLimit)}, nil
	}
	kind, err := adaptive.ParsePolicyKind(cfg.policy)
	if err != nil {
		return nil, fmt.Errorf("-policy: %w", err)
	}
	explore := cfg.explore
	if explore == 0 {
		explore = -1 // Config reads 0 as "default"
	}
	o := []adaptive.Option{
		adaptive.WithPolicy(kind),
		adaptive.WithConfig(adaptive.Config{LearningRate: cfg.learning, ExplorationRate: explore, Seed: cfg.seed}),
	}
	if cfg.useCPU {
		o = append(o, adaptive.WithCPU(newCPUMeter().utilisation))
	}
	return o, nil
}

// runMailbox runs one mailbox for cfg.duration under the seed's producer:
// the seed's Producer.start, a batch every interval from a generator seeded
// with cfg.seed, so every mailbox gets the same batches.
func runMailbox(ctx context.Context, system *actor.ActorSystem, rec *recorder, opts []adaptive.Option, cfg config) {
	rec.start = time.Now()
	listener := system.Root.Spawn(actor.PropsFromFunc(rec.receive))
	props, err := adaptive.Props(append(opts, adaptive.WithListener(listener))...)
	if err != nil {
		panic(err) // validated by run
	}
	scheduler := system.Root.Spawn(props)
	rec.printf("=== Mailbox: %s, for %v", rec.mailbox, cfg.duration)

	ctx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	rng := rand.New(rand.NewPCG(cfg.seed, 0))
	ticker := time.NewTicker(cfg.interval)
	defer ticker.Stop()
	for batch := 0; ; batch++ {
		size := rng.IntN(cfg.maxBatch + 1)
		rec.printf("New jobs arriving: batch %d, %d jobs", batch, size)
		jobs := make([]adaptive.Job, size)
		for i := range jobs {
			jobs[i] = adaptive.Job{ID: fmt.Sprintf("batch %d job %d", batch, i), Run: factorizeJob(cfg.prime)}
		}
		system.Root.Send(scheduler, &adaptive.Batch{Jobs: jobs})
		select {
		case <-ctx.Done():
			// Ask for the final status before stopping: stopping cancels the
			// jobs still running, and the queue is dropped with the actor.
			if st, err := system.Root.RequestFuture(scheduler, &adaptive.GetStatus{}, 5*time.Second).Result(); err == nil {
				if s, ok := st.(adaptive.Status); ok {
					rec.finish(s)
				}
			}
			_ = system.Root.StopFuture(scheduler).Wait()
			// A poison pill is handled after the events already sent.
			_ = system.Root.PoisonFuture(listener).Wait()
			rec.printf("Stopped after %v", time.Since(rec.start).Round(time.Second))
			return
		case <-ticker.C:
		}
	}
}

// factorize is the seed's algorithm: trial division by every integer from 2,
// with the seed's 1 at the end. It gives up when ctx is done.
func factorize(ctx context.Context, x int64) ([]int64, error) {
	var acc []int64
	for fact, rest, n := int64(2), x, 0; fact <= rest; n++ {
		if n&(1<<20-1) == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if rest%fact == 0 {
			acc = append(acc, fact)
			rest /= fact
		} else {
			fact++
		}
	}
	return append(acc, 1), nil
}

func factorizeJob(x int64) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := factorize(ctx, x)
		return err
	}
}

// recorder is one mailbox run's listener: it prints the seed's lines and
// keeps the series for the table and the plot. It is written by its actor's
// goroutine and, for printf and finish, by the producer; mu guards it all.
type recorder struct {
	out     io.Writer
	mailbox string
	start   time.Time  // set before the listener starts
	mu      sync.Mutex // guards out and the fields below

	t, queue, inFlight, parallelism []float64
	doneT, e2e, runTime             []float64
	failed                          int
	unfinished                      int // queued or running when the run stopped
}

func (r *recorder) printf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// The record is best effort, like a log: a line that cannot be written is
	// dropped and the run goes on.
	_, _ = fmt.Fprintf(r.out, "%s|%s\n", time.Now().Format("1/2/2006 3:04:05 PM"), fmt.Sprintf(format, args...))
}

func (r *recorder) point(at time.Time, st adaptive.Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.t = append(r.t, at.Sub(r.start).Seconds())
	r.queue = append(r.queue, float64(st.Queue))
	r.inFlight = append(r.inFlight, float64(st.InFlight))
	r.parallelism = append(r.parallelism, float64(st.Parallelism))
}

func (r *recorder) finish(st adaptive.Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unfinished = st.Queue + st.InFlight
}

// statusLine is the seed's line: the throttled mailbox logs queue and in
// flight, the smart one adds its parallelism.
func (r *recorder) statusLine(st adaptive.Status) string {
	if r.mailbox == mailboxSanta {
		return st.String()
	}
	return fmt.Sprintf("Queue: %d, In Flight: %d", st.Queue, st.InFlight)
}

func (r *recorder) receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *adaptive.BatchQueued:
		r.point(m.At, m.Status)
		r.printf("%s", r.statusLine(m.Status))
	case *adaptive.JobStarted:
		r.printf("Started %s", m.ID)
	case *adaptive.JobCompleted:
		r.point(m.Finished, m.Status)
		if m.Err != nil {
			r.mu.Lock()
			r.failed++
			r.mu.Unlock()
			r.printf("Failed %s: %v", m.ID, m.Err)
			return
		}
		run, total := m.Finished.Sub(m.Started), m.Finished.Sub(m.Arrival)
		r.mu.Lock()
		r.doneT = append(r.doneT, m.Finished.Sub(r.start).Seconds())
		r.e2e = append(r.e2e, total.Seconds())
		r.runTime = append(r.runTime, run.Seconds())
		r.mu.Unlock()
		r.printf("Completed %s in %d secs (total %d)", m.ID, int(run.Seconds()), int(total.Seconds()))
		r.printf("%s", r.statusLine(m.Status))
	}
}

// percentile returns the p-th percentile (0..100) of v, NaN if empty.
func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(v))
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// quarters describes the parallelism over the run: for each quarter of the
// duration, the limit at its end and the most jobs in flight during it.
func (r *recorder) quarters(d time.Duration) string {
	parts := make([]string, 4)
	for q := range 4 {
		from, to := float64(q)*d.Seconds()/4, float64(q+1)*d.Seconds()/4
		limit, flight := -1.0, 0.0
		for i, t := range r.t {
			if t >= from && t < to {
				limit, flight = r.parallelism[i], math.Max(flight, r.inFlight[i])
			}
		}
		switch {
		case limit < 0:
			parts[q] = "-"
		case limit >= adaptive.Unlimited:
			parts[q] = fmt.Sprintf("∞/%.0f", flight)
		default:
			parts[q] = fmt.Sprintf("%.0f/%.0f", limit, flight)
		}
	}
	return strings.Join(parts, " ")
}

func writeTable(out io.Writer, recs []*recorder, cfg config) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\nSeed %d: batches of 0..%d jobs every %v, each factorising %d, %v per mailbox.\n\n", cfg.seed, cfg.maxBatch, cfg.interval, cfg.prime, cfg.duration)
	b.WriteString("| mailbox | jobs completed | unfinished at the end | median time in system (s) | p95 time in system (s) | median run time (s) | largest queue | parallelism per quarter (limit/most in flight) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, r := range recs {
		r.mu.Lock()
		name := r.mailbox
		if name == mailboxQueued {
			name = fmt.Sprintf("queued (%d)", cfg.queuedLimit)
		}
		if name == mailboxSanta {
			name = fmt.Sprintf("santa (%s)", cfg.policy)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.1f | %.1f | %.2f | %.0f | %s |\n", name, len(r.e2e), r.unfinished,
			percentile(r.e2e, 50), percentile(r.e2e, 95), percentile(r.runTime, 50), slices.Max(append([]float64{0}, r.queue...)), r.quarters(cfg.duration))
		r.mu.Unlock()
	}
	if _, err := io.WriteString(out, b.String()); err != nil {
		return fmt.Errorf("write the table: %w", err)
	}
	return nil
}

// plotPath returns the plot file of a mailbox: the path itself for a single
// mailbox, the mailbox's name before .svg for several.
func plotPath(path, mailbox string, several bool) string {
	if !several {
		return path
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-" + mailbox + ext
}

// writePlots draws one chart per mailbox, all on the same axes: the run's
// duration across, and per panel the largest value of any mailbox.
func writePlots(recs []*recorder, cfg config) error {
	var qmax, fmax, smax float64
	for _, r := range recs {
		r.mu.Lock()
		for i := range r.t {
			qmax, fmax = math.Max(qmax, r.queue[i]), math.Max(fmax, r.inFlight[i])
			if r.parallelism[i] < adaptive.Unlimited {
				fmax = math.Max(fmax, r.parallelism[i])
			}
		}
		for _, v := range r.e2e {
			smax = math.Max(smax, v)
		}
		r.mu.Unlock()
	}
	var errs []error
	for _, r := range recs {
		r.mu.Lock()
		concurrency := []plot.Series{{Name: "in flight", X: r.t, Y: r.inFlight}}
		if r.mailbox != mailboxParallel { // unbounded has no limit to draw
			concurrency = append(concurrency, plot.Series{Name: "parallelism", X: r.t, Y: r.parallelism})
		}
		ch := plot.Chart{
			Title:  fmt.Sprintf("Santa's mailbox: %s, batches of 0..%d every %v", r.mailbox, cfg.maxBatch, cfg.interval),
			XLabel: "time (s)",
			XMax:   cfg.duration.Seconds(),
			Panels: []plot.Panel{
				{Title: "Queue over time", YLabel: "jobs", YMax: qmax, Series: []plot.Series{{Name: "queue", X: r.t, Y: r.queue}}},
				{Title: "Concurrency", YLabel: "jobs", YMax: fmax, Series: concurrency},
				{Title: "Performance over time", YLabel: "seconds", YMax: smax, Series: []plot.Series{
					{Name: "time in system", X: r.doneT, Y: r.e2e}, {Name: "run time", X: r.doneT, Y: r.runTime}}},
			},
		}
		errs = append(errs, writeChart(plotPath(cfg.plotPath, r.mailbox, len(recs) > 1), ch))
		r.mu.Unlock()
	}
	return errors.Join(errs...)
}

func writeChart(path string, ch plot.Chart) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("-plot: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("-plot: %w", cerr)
		}
	}()
	if err := ch.WriteSVG(f); err != nil {
		return fmt.Errorf("-plot %s: %w", path, err)
	}
	return nil
}
