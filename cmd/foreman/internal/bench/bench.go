// Package bench is the end-to-end benchmark behind `foreman bench`: one
// process, a Local node (cluster/node) on the SQLite journal with fsync on,
// no-op jobs submitted through the frontend client, throughput and
// submit->ack and submit->result latencies measured. It is internal to the
// foreman binary: a measuring harness, not part of Foreman's API.
package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/cmd/foreman/internal/cpustat"
	"github.com/foreman-actors/foreman/messages"
)

// NoopJob is the job type of the benchmark: it returns its payload at once,
// so the benchmark measures Foreman, not the work.
const NoopJob = "noop"

// Config describes one end-to-end benchmark run.
type Config struct {
	// Jobs is the number of jobs of the throughput phase.
	Jobs int
	// Submitters is the number of concurrent submitting goroutines.
	Submitters int
	// Workers and Window size the worker pool (Window jobs per worker).
	Workers, Window int
	// LightJobs is the number of jobs of the light-load latency phase, sent
	// one at a time by a single submitter (0 skips the phase).
	LightJobs int
	// DataDir holds the SQLite journal (fsync on); it should be empty.
	DataDir string
	// Logger receives the node's logs (nil: discarded).
	Logger *slog.Logger
	// OnResult, when set, is called once per distinct result (of both
	// phases), for a progress line; it must be quick.
	OnResult func()
	// CPU, when set, is sampled around the throughput phase (first submit
	// to the last result); its processes' CPU per job goes into the result.
	CPU *cpustat.Meter
}

// Result holds the figures of a run.
type Result struct {
	// Jobs is the number of jobs of the throughput phase.
	Jobs int
	// Elapsed is the wall time from the first submit to the last result.
	Elapsed time.Duration
	// JobsPerSecond is Jobs / Elapsed.
	JobsPerSecond float64
	// AckP50 and AckP99 are submit->ack latencies under full load.
	AckP50, AckP99 time.Duration
	// ResultP50 and ResultP99 are submit->result latencies under full load.
	ResultP50, ResultP99 time.Duration
	// LightAckP50 and LightAckP99 are submit->ack latencies at light load
	// (one job in flight); zero when the phase was skipped.
	LightAckP50, LightAckP99 time.Duration
	// LightResultP50 and LightResultP99 are submit->result latencies at
	// light load.
	LightResultP50, LightResultP99 time.Duration
	// Duplicates counts results published more than once.
	Duplicates int64
	// CPU is each measured process's CPU time over the throughput phase
	// (Config.CPU): this process, named ThisProcess, is node and
	// submitters at once.
	CPU []cpustat.Usage
}

// ThisProcess names the one-process benchmark's own process in the CPU
// figures: the node and the in-process submitters together.
const ThisProcess = "this-process"

// String formats the result for people.
func (r Result) String() string {
	s := fmt.Sprintf("end to end: %d jobs in %v = %.0f jobs/s (durable acks, fsync on)\n", r.Jobs, r.Elapsed.Round(time.Millisecond), r.JobsPerSecond)
	s += fmt.Sprintf("under load: submit->ack p50 %v p99 %v; submit->result p50 %v p99 %v\n", r.AckP50, r.AckP99, r.ResultP50, r.ResultP99)
	if r.LightAckP50 > 0 {
		s += fmt.Sprintf("light load: submit->ack p50 %v p99 %v; submit->result p50 %v p99 %v\n", r.LightAckP50, r.LightAckP99, r.LightResultP50, r.LightResultP99)
	}
	s += fmt.Sprintf("duplicate results: %d\n", r.Duplicates)
	s += cpustat.Format(r.CPU, r.Jobs, "")
	return s
}

// Run starts a Local node on cfg.DataDir, submits cfg.Jobs no-op jobs
// from cfg.Submitters goroutines through the frontend client (each Submit
// returns once the work is durable) and waits until every result has been
// published; then it measures light-load latency with one job in flight.
// A config out of range returns an error matching node.ErrInvalidConfig.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Jobs < 1 || cfg.Submitters < 1 || cfg.Workers < 1 || cfg.Window < 1 || cfg.LightJobs < 0 {
		return Result{}, fmt.Errorf("%w: bench needs jobs, submitters, workers and window >= 1 (got %d, %d, %d, %d)", node.ErrInvalidConfig, cfg.Jobs, cfg.Submitters, cfg.Workers, cfg.Window)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	reg := worker.NewRegistry()
	if err := reg.Register(NoopJob, func(_ context.Context, p []byte) ([]byte, error) { return p, nil }); err != nil {
		return Result{}, err
	}
	n, err := node.StartLocal(ctx, node.WithDataDir(cfg.DataDir), node.WithWorkers(cfg.Workers), node.WithRegistry(reg), node.WithLogger(log),
		node.WithWorkerOptions(worker.WithWindow(cfg.Window)),
		// Keep done ids for a minute, not ten: at tens of thousands of jobs
		// per second the default retention would hold millions of entries.
		node.WithMasterOptions(master.WithDoneRetention(time.Minute)))
	if err != nil {
		return Result{}, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = n.Stop(sctx)
	}()

	// Results arrive on the actor system's event stream, published by the
	// master once WorkCompleted is durable.
	// One handler does all the bookkeeping; distinct results of the
	// throughput phase count down to all.
	var (
		mu        sync.Mutex // guards the maps, resLat, dups and remaining
		started   = map[string]time.Time{}
		waiting   = map[string]chan struct{}{}
		resLat    []time.Duration
		dups      int64
		seen      = map[string]bool{}
		remaining = cfg.Jobs
		all       = make(chan struct{})
	)
	sub := n.System().EventStream.Subscribe(func(evt any) {
		r, ok := evt.(*messages.WorkResult)
		if !ok {
			return
		}
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if seen[r.GetWorkId()] {
			dups++
			return
		}
		seen[r.GetWorkId()] = true
		if cfg.OnResult != nil {
			cfg.OnResult()
		}
		if remaining--; remaining == 0 {
			close(all)
		}
		if t, ok := started[r.GetWorkId()]; ok {
			resLat = append(resLat, now.Sub(t))
		}
		if ch, ok := waiting[r.GetWorkId()]; ok {
			close(ch)
		}
	})
	defer n.System().EventStream.Unsubscribe(sub)

	client := n.Client()
	submit := func(id string, lat *[]time.Duration, done chan struct{}) error {
		t0 := time.Now()
		mu.Lock()
		started[id] = t0
		if done != nil {
			waiting[id] = done
		}
		mu.Unlock()
		if err := client.Submit(ctx, &messages.Work{WorkId: id, JobType: NoopJob, Payload: []byte(id)}); err != nil {
			return err
		}
		*lat = append(*lat, time.Since(t0))
		return nil
	}

	if cfg.CPU != nil {
		if err := cfg.CPU.Start(ctx); err != nil {
			return Result{}, fmt.Errorf("bench: CPU before the run: %w", err)
		}
	}
	ackLats := make([][]time.Duration, cfg.Submitters)
	errs := make(chan error, cfg.Submitters)
	var next atomic.Int64
	t0 := time.Now()
	var wg sync.WaitGroup
	for s := 0; s < cfg.Submitters; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(cfg.Jobs) {
					return
				}
				if err := submit("b-"+strconv.FormatInt(i, 10), &ackLats[s], nil); err != nil {
					errs <- err
					return
				}
			}
		}(s)
	}
	wg.Wait()
	select {
	case err := <-errs:
		return Result{}, fmt.Errorf("node: bench submit: %w", err)
	default:
	}
	select {
	case <-all:
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	res := Result{Jobs: cfg.Jobs, Elapsed: time.Since(t0)}
	if cfg.CPU != nil {
		us, err := cfg.CPU.Stop(ctx)
		if err != nil {
			return Result{}, fmt.Errorf("bench: CPU after the run: %w", err)
		}
		res.CPU = us
	}
	res.JobsPerSecond = float64(cfg.Jobs) / res.Elapsed.Seconds()
	acks := slices.Concat(ackLats...)
	res.AckP50, res.AckP99 = percentile(acks, 50), percentile(acks, 99)
	mu.Lock()
	res.ResultP50, res.ResultP99 = percentile(resLat, 50), percentile(resLat, 99)
	resLat = nil
	mu.Unlock()

	var lightAcks, lightRes []time.Duration
	for i := 0; i < cfg.LightJobs; i++ {
		done := make(chan struct{})
		id := "l-" + strconv.Itoa(i)
		t := time.Now()
		if err := submit(id, &lightAcks, done); err != nil {
			return res, fmt.Errorf("node: bench light submit: %w", err)
		}
		select {
		case <-done:
			lightRes = append(lightRes, time.Since(t))
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	res.LightAckP50, res.LightAckP99 = percentile(lightAcks, 50), percentile(lightAcks, 99)
	res.LightResultP50, res.LightResultP99 = percentile(lightRes, 50), percentile(lightRes, 99)
	mu.Lock()
	res.Duplicates = dups
	mu.Unlock()
	return res, nil
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	i = min(max(i-1, 0), len(s)-1)
	return s[i].Round(time.Microsecond)
}

// TempDataDir returns a new temporary directory for a benchmark journal.
func TempDataDir() (string, error) { return os.MkdirTemp("", "foreman-bench-*") }
