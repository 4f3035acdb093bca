package sim

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Report is what one run did and, when an invariant broke, how.
type Report struct {
	Seed uint64
	// Events is how many events the schedule fired; Virtual how much
	// virtual time it covered.
	Events  int
	Virtual time.Duration
	// Faults counts each kind of fault the schedule exercised.
	Faults []FaultCount
	// Jobs counts the submissions acknowledged and how the jobs ended.
	Acked, Done, Dead, Cancelled int
	// Violation is the first broken invariant, nil when every one held.
	Violation *Violation
	// Trace is the shortened trace of a failed run: the lines that touch
	// the failing job or stream, and the faults.
	Trace string
}

// FaultCount is how often one kind of fault happened in a run.
type FaultCount struct {
	Kind  string
	Count int
}

// String is the report in one line (and, on a failure, the violation and
// the shortened trace after it).
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d events over %v; acked %d, done %d, dead %d, cancelled %d; faults",
		r.Seed, r.Events, r.Virtual, r.Acked, r.Done, r.Dead, r.Cancelled)
	for _, f := range r.Faults {
		fmt.Fprintf(&b, " %s=%d", f.Kind, f.Count)
	}
	if r.Violation != nil {
		fmt.Fprintf(&b, "\nFAILED: %v\n%s", r.Violation, r.Trace)
	}
	return b.String()
}

// Failed reports whether an invariant broke.
func (r Report) Failed() bool { return r.Violation != nil }

// Run simulates one cluster under cfg's seed and fault mix, checks the
// invariants after every step and at the end, and reports. The error is
// for a bad config or a cancelled ctx; a broken invariant is in the
// report. On a failure, the run is replayed with tracing on to cut the
// trace to what touches the failing job or stream.
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return Report{}, err
	}
	rep, err := run(ctx, cfg)
	if err != nil || rep.Violation == nil {
		return rep, err
	}
	var buf bytes.Buffer
	again := cfg
	again.Trace = &buf
	if _, err := run(ctx, again); err != nil {
		return rep, err
	}
	rep.Trace = shorten(buf.String(), rep.Violation)
	return rep, nil
}

func run(ctx context.Context, cfg Config) (Report, error) {
	return runWith(ctx, cfg, nil)
}

func runWith(ctx context.Context, cfg Config, hosts hostFactory) (Report, error) {
	w := newWorld(cfg)
	w.makeHost = hosts
	if cfg.Schedules {
		w.sched = newSchedWorld(w) // schedule.go, inv_tick.go
		w.schedAdmin()
	}
	w.build()
	w.scheduleFaults(cfg.Duration)
	if hosts == nil {
		w.scheduleClients(cfg.Duration)
	}
	w.e.at(cfg.Duration, w.stopFaults)
	end := cfg.Duration + cfg.Heal
	for w.e.step(end) {
		if w.hist.fail != nil {
			break
		}
		if w.e.events&4095 == 0 && ctx.Err() != nil {
			return Report{}, fmt.Errorf("sim: seed %d: %w", cfg.Seed, ctx.Err())
		}
	}
	if w.hist.fail == nil {
		w.e.now = end
		w.hist.end()
	}
	return w.report(), nil
}

func (w *world) report() Report {
	w.faults[faultLoss] = w.net.dropped
	w.faults[faultDuplicate] = w.net.duplicated
	w.faults[faultReorder] = w.net.reordered
	r := Report{Seed: w.cfg.Seed, Events: w.e.events, Virtual: w.e.now, Violation: w.hist.fail}
	for k := range numFaults {
		r.Faults = append(r.Faults, FaultCount{Kind: k.String(), Count: w.faults[k]})
	}
	for _, id := range w.hist.ids {
		j := w.hist.jobs[id]
		if j.acked {
			r.Acked++
		}
		switch j.status.String() {
		case "WORK_STATUS_DONE":
			r.Done++
		case "WORK_STATUS_DEAD":
			r.Dead++
		case "WORK_STATUS_CANCELLED":
			r.Cancelled++
		}
	}
	return r
}

// shorten keeps the trace lines that mention the violation's job or
// stream, the faults, and the violation itself.
func shorten(trace string, v *Violation) string {
	var b strings.Builder
	for line := range strings.Lines(trace) {
		keep := strings.Contains(line, " fault ") || strings.Contains(line, "VIOLATION") ||
			strings.Contains(line, " restart") || strings.Contains(line, "heal")
		if v.Job != "" && strings.Contains(line, v.Job) {
			keep = true
		}
		if v.Stream != "" && strings.Contains(line, v.Stream) {
			keep = true
		}
		if keep {
			b.WriteString(line)
		}
	}
	return b.String()
}

// Search runs seeds on parallel goroutines (workers of them, at least
// one; each run is one goroutine of its own and shares nothing) and calls
// progress, from one goroutine at a time, after each run with how many
// are done and that run's report. It stops at the first failure it sees
// and returns that report, or nil when every seed passed; the error is
// ctx's. Which seeds ran besides a failing one depends on timing, never
// what a seed does.
func Search(ctx context.Context, cfg Config, seeds []uint64, workers int, progress func(done int, last Report)) (*Report, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers = max(workers, 1)
	next := make(chan uint64)
	type result struct {
		rep Report
		err error
	}
	results := make(chan result)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range next {
				c := cfg
				c.Seed = s
				rep, err := Run(ctx, c)
				results <- result{rep, err}
			}
		}()
	}
	go func() {
		defer close(next)
		for _, s := range seeds {
			select {
			case next <- s:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	var failed *Report
	var firstErr error
	done := 0
	for r := range results {
		if r.err != nil {
			if firstErr == nil {
				firstErr = r.err
			}
			cancel()
			continue
		}
		done++
		if progress != nil {
			progress(done, r.rep)
		}
		if r.rep.Failed() && failed == nil {
			rep := r.rep
			failed = &rep
			cancel()
		}
	}
	if failed != nil {
		return failed, nil
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return nil, ctx.Err()
}

// Seeds returns n consecutive seeds from first: a search's usual list.
func Seeds(first uint64, n int) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = first + uint64(i)
	}
	return s
}
