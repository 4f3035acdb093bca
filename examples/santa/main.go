// Command santa is the seed's scenario (Santa's Mailbox, seed 004): every
// Interval a batch of 0..MaxBatch letters arrives, each a CPU-bound job
// (factorising a large prime), and the adaptive scheduler finds how many to
// run at once. It prints the seed's log lines and, with -plot, draws queue
// length, in-flight, parallelism and end-to-end time over the run as SVG.
//
//	go run ./examples/santa -duration 2m -prime 2147483647 -plot santa.svg
//	go run ./examples/santa -duration 30s -prime 1000003 -interval 1s -max-batch 20   # quick demo
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/adaptive"
	"github.com/foreman-actors/foreman/examples/santa/internal/plot"
)

// SeedPrime is the seed's large prime: about 5.5 s to factorise on Santa's
// machine with the seed's naive algorithm.
const SeedPrime = 2130093701

type config struct {
	duration, interval time.Duration
	maxBatch           int
	prime              int64
	policy             string
	learning, explore  float64
	plotPath           string
	seed               uint64
	useCPU, verbose    bool
}

func main() {
	var cfg config
	flag.DurationVar(&cfg.duration, "duration", time.Minute, "how long to run")
	flag.DurationVar(&cfg.interval, "interval", 5*time.Second, "time between batches")
	flag.IntVar(&cfg.maxBatch, "max-batch", 10, "largest batch (each batch has 0..max-batch jobs)")
	flag.Int64Var(&cfg.prime, "prime", SeedPrime, "the number each job factorises (smaller: quicker jobs, e.g. 1000003)")
	flag.StringVar(&cfg.policy, "policy", "default", "tuning policy: default, seed or vegas")
	flag.Float64Var(&cfg.learning, "learning-rate", adaptive.DefaultLearningRate, "alpha of the moving average, in (0, 1]")
	flag.Float64Var(&cfg.explore, "exploration-rate", adaptive.DefaultExplorationRate, "epsilon, in [0, 1) (seed policy)")
	flag.StringVar(&cfg.plotPath, "plot", "", "write an SVG plot of the run to this file")
	flag.Uint64Var(&cfg.seed, "seed", 1, "random seed of the producer and the policy")
	flag.BoolVar(&cfg.useCPU, "cpu", false, "pass this machine's CPU utilisation (/proc/stat) to the policy")
	flag.BoolVar(&cfg.verbose, "v", false, "also print the scheduler's debug log")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "santa:", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, out io.Writer, cfg config) error {
	kind, err := adaptive.ParsePolicyKind(cfg.policy)
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
	}
	explore := cfg.explore
	if explore == 0 {
		explore = -1 // Config reads 0 as "default"
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

	rec := &recorder{out: out, start: time.Now()}
	listener := system.Root.Spawn(actor.PropsFromFunc(rec.receive))
	opts := []adaptive.Option{
		adaptive.WithPolicy(kind),
		adaptive.WithConfig(adaptive.Config{LearningRate: cfg.learning, ExplorationRate: explore, Seed: cfg.seed}),
		adaptive.WithListener(listener),
		adaptive.WithLogger(logger),
	}
	if cfg.useCPU {
		opts = append(opts, adaptive.WithCPU(newCPUMeter().utilisation))
	}
	props, err := adaptive.Props(opts...)
	if err != nil {
		return err
	}
	scheduler := system.Root.Spawn(props)

	// The producer: the seed's Producer.start, a batch every interval.
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
			// Stopping the scheduler cancels the jobs still running.
			_ = system.Root.StopFuture(scheduler).Wait()
			_ = system.Root.StopFuture(listener).Wait()
			rec.printf("Stopped after %v: %s", time.Since(rec.start).Round(time.Second), rec.summary())
			if cfg.plotPath != "" {
				return rec.writePlot(cfg.plotPath, cfg)
			}
			return nil
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

// recorder is the listener: it prints the seed's lines and keeps the series
// for the plot. Its fields are touched only by its actor's goroutine, except
// mu-guarded output shared with the producer.
type recorder struct {
	out   io.Writer
	start time.Time
	mu    sync.Mutex // guards out and the slices below

	t, queue, inFlight, parallelism []float64
	doneT, e2e, runTime             []float64
	failed                          int
}

func (r *recorder) printf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// The record is best effort, like a log: a line that cannot be written is
	// dropped and the simulation goes on.
	_, _ = fmt.Fprintf(r.out, "%s|%s\n", time.Now().Format("1/2/2006 3:04:05 PM"), fmt.Sprintf(format, args...))
}

func (r *recorder) point(at time.Time, st adaptive.Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := at.Sub(r.start).Seconds()
	r.t = append(r.t, s)
	r.queue = append(r.queue, float64(st.Queue))
	r.inFlight = append(r.inFlight, float64(st.InFlight))
	r.parallelism = append(r.parallelism, float64(st.Parallelism))
}

func (r *recorder) receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *adaptive.BatchQueued:
		r.point(m.At, m.Status)
		r.printf("%s", m.Status)
	case *adaptive.JobCompleted:
		r.point(m.Finished, m.Status)
		if m.Err != nil {
			r.mu.Lock()
			r.failed++
			r.mu.Unlock()
			return
		}
		run, total := m.Finished.Sub(m.Started), m.Finished.Sub(m.Arrival)
		r.mu.Lock()
		r.doneT = append(r.doneT, m.Finished.Sub(r.start).Seconds())
		r.e2e = append(r.e2e, total.Seconds())
		r.runTime = append(r.runTime, run.Seconds())
		r.mu.Unlock()
		r.printf("Completed %s in %d secs (total %d)", m.ID, int(run.Seconds()), int(total.Seconds()))
		r.printf("%s", m.Status)
	}
}

func (r *recorder) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.e2e) == 0 {
		return "no job completed"
	}
	sum := 0.0
	for _, v := range r.e2e {
		sum += v
	}
	return fmt.Sprintf("%d jobs completed, mean end-to-end %.1f s, last parallelism %.0f",
		len(r.e2e), sum/float64(len(r.e2e)), r.parallelism[len(r.parallelism)-1])
}

func (r *recorder) writePlot(path string, cfg config) (err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !strings.HasSuffix(strings.ToLower(path), ".svg") {
		return fmt.Errorf("-plot %q: only .svg is supported", path)
	}
	ch := plot.Chart{
		Title:  fmt.Sprintf("Santa's mailbox: policy %s, batches of 0..%d every %v", cfg.policy, cfg.maxBatch, cfg.interval),
		XLabel: "time (s)",
		Panels: []plot.Panel{
			{Title: "Queue over time", YLabel: "jobs", Series: []plot.Series{{Name: "queue", X: r.t, Y: r.queue}}},
			{Title: "Concurrency", YLabel: "jobs", Series: []plot.Series{
				{Name: "in flight", X: r.t, Y: r.inFlight}, {Name: "parallelism", X: r.t, Y: r.parallelism}}},
			{Title: "Performance over time", YLabel: "seconds", Series: []plot.Series{
				{Name: "end-to-end", X: r.doneT, Y: r.e2e}, {Name: "run time", X: r.doneT, Y: r.runTime}}},
		},
	}
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
