package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// errTimeout reports a run whose handler did not see every job in time.
var errTimeout = errors.New("compare: timed out waiting for the handler to run every job")

// counter counts the jobs a no-op handler has run and says when all have.
// Its fields are safe for concurrent use: handlers call ran from many
// goroutines, the driver waits on all.
type counter struct {
	want int64         // set at construction, read only
	n    atomic.Int64  // accessed atomically by the handlers
	all  chan struct{} // closed by the handler call that runs the want-th job
	at   atomic.Int64  // Unix nanoseconds of the want-th run; written once by that call
}

func newCounter(want int) *counter {
	return &counter{want: int64(want), all: make(chan struct{})}
}

// ran records one run of the handler. Runs beyond want (a retried or
// duplicated job) are counted but change nothing else.
func (c *counter) ran() {
	if c.n.Add(1) == c.want {
		c.at.Store(time.Now().UnixNano())
		close(c.all)
	}
}

// submitFunc submits jobs first..first+count-1 in one call (count is 1 for
// systems submitting one job per call) and returns once the system has
// acknowledged them.
type submitFunc func(ctx context.Context, first, count int) error

// driveConfig says how many jobs to submit, in calls of how many, from how
// many concurrent producers.
type driveConfig struct {
	jobs      int
	perCall   int
	producers int
	timeout   time.Duration
	// servers are the PIDs of the system's server processes (redis-server,
	// the postmaster) whose CPU, with their descendants', is measured.
	servers []int
}

// result holds one run's timings.
type result struct {
	jobs      int
	perCall   int
	start     time.Time       // just before the first call
	lastAck   time.Time       // when the last call returned
	allRun    time.Time       // when the handler ran the last job
	latencies []time.Duration // one per call
	// self and servers are the CPU times spent from the first call until
	// the handler ran the last job: this process (producers, client and
	// in-process workers) and each server in driveConfig.servers.
	self    time.Duration
	servers []time.Duration
}

// drive runs producers that pull calls from a shared sequence until jobs
// have been submitted, then waits until c has seen every job run. A failed
// call fails the run: these systems are expected to accept every job.
func drive(ctx context.Context, cfg driveConfig, c *counter, submit submitFunc) (result, error) {
	calls := (cfg.jobs + cfg.perCall - 1) / cfg.perCall
	var next atomic.Int64 // the next call's index, shared by the producers
	lat := make([][]time.Duration, cfg.producers)
	errs := make([]error, cfg.producers)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	cpu0, err := sampleCPU(cfg.servers)
	if err != nil {
		return result{}, err
	}
	res := result{jobs: cfg.jobs, perCall: cfg.perCall, start: time.Now()}
	var wg sync.WaitGroup
	for p := range cfg.producers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= calls || ctx.Err() != nil {
					return
				}
				first := i * cfg.perCall
				count := min(cfg.perCall, cfg.jobs-first)
				t0 := time.Now()
				if err := submit(ctx, first, count); err != nil {
					errs[p] = fmt.Errorf("submit jobs %d-%d: %w", first, first+count-1, err)
					cancel()
					return
				}
				lat[p] = append(lat[p], time.Since(t0))
			}
		})
	}
	wg.Wait()
	res.lastAck = time.Now()
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	for _, l := range lat {
		res.latencies = append(res.latencies, l...)
	}

	timer := time.NewTimer(cfg.timeout)
	defer timer.Stop()
	select {
	case <-c.all:
		res.allRun = time.Unix(0, c.at.Load())
		cpu1, err := sampleCPU(cfg.servers)
		if err != nil {
			return res, err
		}
		res.self = cpu1.self - cpu0.self
		for i := range cpu1.servers {
			res.servers = append(res.servers, cpu1.servers[i]-cpu0.servers[i])
		}
	case <-timer.C:
		return res, fmt.Errorf("%w: %d of %d after %s", errTimeout, c.n.Load(), c.want, cfg.timeout)
	case <-ctx.Done():
		return res, fmt.Errorf("waiting for the handler: %w", ctx.Err())
	}
	return res, nil
}

// print writes the run's figures, one labeled line each, after a header line
// naming the system and its settings. run.sh parses "acks/s:" and
// "end-to-end jobs/s:".
func (r result) print(w io.Writer, header string) error {
	ack := r.lastAck.Sub(r.start)
	e2e := r.allRun.Sub(r.start)
	slices.Sort(r.latencies)
	pct := func(p float64) time.Duration {
		if len(r.latencies) == 0 {
			return 0
		}
		return r.latencies[int(p*float64(len(r.latencies)-1))]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", header)
	fmt.Fprintf(&b, "  jobs: %d in calls of %d\n", r.jobs, r.perCall)
	fmt.Fprintf(&b, "  acks/s: %.0f (all %d submitted and acked in %s)\n", float64(r.jobs)/ack.Seconds(), r.jobs, ack.Round(time.Millisecond))
	fmt.Fprintf(&b, "  end-to-end jobs/s: %.0f (first submit to last handler run: %s)\n", float64(r.jobs)/e2e.Seconds(), e2e.Round(time.Millisecond))
	fmt.Fprintf(&b, "  call->ack latency p50/p99: %s / %s\n", pct(0.50).Round(time.Microsecond), pct(0.99).Round(time.Microsecond))
	// CPU per job: run.sh parses "CPU per job (µs):", then "client", "server"
	// and "all" (the process and its server, the system's whole cost here).
	perJob := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(r.jobs) }
	all := r.self
	fmt.Fprintf(&b, "  CPU per job (µs): client %.1f (%s);", perJob(r.self), r.self.Round(time.Millisecond))
	var srv time.Duration
	for _, s := range r.servers {
		srv += s
	}
	all += srv
	fmt.Fprintf(&b, " server %.1f (%s); all %.1f\n", perJob(srv), srv.Round(time.Millisecond), perJob(all))
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write the figures: %w", err)
	}
	return nil
}
