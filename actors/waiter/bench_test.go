package waiter

import (
	"context"
	"log/slog"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

func benchSystem(b *testing.B) *actor.ActorSystem {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	b.Cleanup(sys.Shutdown)
	return sys
}

func benchStop[W, R any](b *testing.B, a *API[W, R]) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.Stop(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDo measures the overhead of one Do without contention: a work
// function that returns at once, one caller at a time. Per call: spawn a
// WorkWaiter, queue, spawn a Worker, ask, run, complete, stop both.
func BenchmarkDo(b *testing.B) {
	if testing.Short() {
		b.Skip("benchmark skipped in -short mode")
	}
	for _, bc := range []struct {
		name     string
		deadline time.Duration
	}{
		{name: "deadline=none"},
		{name: "deadline=1m", deadline: time.Minute},
	} {
		b.Run(bc.name, func(b *testing.B) {
			sys := benchSystem(b)
			a, err := New(sys, func(_ context.Context, n int) (int, error) { return n, nil })
			if err != nil {
				b.Fatal(err)
			}
			defer benchStop(b, a)
			ctx := context.Background()
			if bc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, bc.deadline)
				defer cancel()
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Do(ctx, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHundredJobs is the scenario scaled down 10x in time: 100
// callers at once, each job 10 ms of CPU that ignores its context (the
// seed's uncancellable thunk), concurrency 2, caller timeout 100 ms. With
// the interest check about 20 jobs run; without it (the seed's scheduler
// with no AreYouStillInterested) all 100 do, for nobody.
func BenchmarkHundredJobs(b *testing.B) {
	if testing.Short() {
		b.Skip("benchmark skipped in -short mode")
	}
	const (
		jobs    = 100
		timeout = 100 * time.Millisecond
	)
	// A fixed amount of CPU work (about 10 ms on this machine's cores when
	// idle), so cpu_ms/op does not depend on how loaded the machine is.
	spin := func(_ context.Context, n int) (int, error) {
		return int(burn(spinRounds) & 1), nil
	}
	for _, bc := range []struct {
		name  string
		check bool
	}{
		{name: "interest_check=on", check: true},
		{name: "interest_check=off", check: false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			sys := benchSystem(b)
			var busy, cpu time.Duration
			var started uint64
			for b.Loop() {
				a, err := New(sys, spin, WithConcurrency(2), func(c *config) { c.interestCheck = bc.check })
				if err != nil {
					b.Fatal(err)
				}
				cpu0 := cpuTime()
				var wg sync.WaitGroup
				for i := range jobs {
					wg.Go(func() {
						ctx, cancel := context.WithTimeout(context.Background(), timeout)
						defer cancel()
						_, _ = a.Do(ctx, i)
					})
				}
				wg.Wait()
				benchStop(b, a) // waits until every queued job ran or was skipped
				cpu += cpuTime() - cpu0
				s := a.Stats()
				started += s.Started
				busy += s.BusyTime
			}
			n := float64(b.N)
			b.ReportMetric(float64(started)/n, "jobs_run/op")
			b.ReportMetric(float64(busy.Milliseconds())/n, "work_ms/op")
			b.ReportMetric(float64(cpu.Milliseconds())/n, "cpu_ms/op")
		})
	}
}

// cpuTime is the process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// spinRounds is the number of burn rounds of one simulated job.
const spinRounds = 5_000_000

var sink uint64

// burn is CPU work that the compiler cannot remove: xorshift rounds.
func burn(rounds int) uint64 {
	x := uint64(88172645463325252)
	for range rounds {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	sink = x
	return x
}

// BenchmarkBurn calibrates one simulated job of BenchmarkHundredJobs.
func BenchmarkBurn(b *testing.B) {
	if testing.Short() {
		b.Skip("benchmark skipped in -short mode")
	}
	for b.Loop() {
		burn(spinRounds)
	}
}
