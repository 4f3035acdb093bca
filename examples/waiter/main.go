// Command waiter runs the scenario of seed 003 ("Cancelling work in
// flight"): many callers with a deadline share a few workers; work whose
// caller has already given up is never started. It prints what happened.
//
//	go run ./examples/waiter                      # 100 jobs of 100 ms, 2 workers, 1 s timeout
//	go run ./examples/waiter -order lifo          # serve the freshest callers first
//	go run ./examples/waiter -jobs 50 -timeout 500ms
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/waiter"
)

func main() {
	jobs := flag.Int("jobs", 100, "number of callers, one job each, all at once")
	work := flag.Duration("work", 100*time.Millisecond, "how long one job takes")
	timeout := flag.Duration("timeout", time.Second, "each caller's deadline")
	concurrency := flag.Int("concurrency", 2, "jobs that may run at once")
	order := flag.String("order", "fifo", "backlog order: fifo or lifo")
	flag.Parse()
	if err := run(*jobs, *work, *timeout, *concurrency, *order); err != nil {
		fmt.Fprintln(os.Stderr, "waiter:", err)
		os.Exit(1)
	}
}

func run(jobs int, work, timeout time.Duration, concurrency int, orderName string) error {
	var order waiter.Order
	switch orderName {
	case "fifo":
		order = waiter.FIFO
	case "lifo":
		order = waiter.LIFO
	default:
		return fmt.Errorf("-order %q: use fifo or lifo", orderName)
	}
	if jobs < 1 || work <= 0 || timeout <= 0 {
		return fmt.Errorf("-jobs, -work and -timeout must be positive (got %d, %s, %s)", jobs, work, timeout)
	}

	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}))
	defer sys.Shutdown()

	var invocations atomic.Int64
	api, err := waiter.New(sys, func(ctx context.Context, n int) (int, error) {
		invocations.Add(1)
		t := time.NewTimer(work) // stands in for real work that honours ctx
		defer t.Stop()
		select {
		case <-t.C:
			return n, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}, waiter.WithConcurrency(concurrency), waiter.WithOrder(order))
	if err != nil {
		return err
	}

	fmt.Printf("%d callers, each wants a %s job within %s; %d run at once, backlog %s\n",
		jobs, work, timeout, concurrency, order)
	start := time.Now()
	var wg sync.WaitGroup
	var ok, timedOut, other atomic.Int64
	var slowest atomic.Int64
	for i := range jobs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			t0 := time.Now()
			_, err := api.Do(ctx, i)
			took := time.Since(t0)
			for {
				cur := slowest.Load()
				if int64(took) <= cur || slowest.CompareAndSwap(cur, int64(took)) {
					break
				}
			}
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, waiter.ErrTimeout):
				timedOut.Add(1)
			default:
				other.Add(1)
			}
		})
	}
	wg.Wait()
	fmt.Printf("callers: %d got a result, %d timed out, %d other errors; slowest Do returned after %s\n",
		ok.Load(), timedOut.Load(), other.Load(), time.Duration(slowest.Load()).Round(time.Millisecond))

	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := api.Stop(stopCtx); err != nil {
		return err
	}
	s := api.Stats()
	fmt.Printf("jobs: %d submitted, %d started (work function called %d times), %d never started (caller gone)\n",
		s.Submitted, s.Started, invocations.Load(), s.Skipped)
	fmt.Printf("runs: %d completed, %d failed, %d cancelled while running\n",
		s.Completed, s.Failed, s.CancelledWhileRunning)
	fmt.Printf("time: %s busy, %s of it on work nobody waited for; all done after %s\n",
		s.BusyTime.Round(time.Millisecond), s.WastedTime.Round(time.Millisecond),
		time.Since(start).Round(time.Millisecond))
	fmt.Printf("without the interest check all %d jobs would have run: about %s of work\n",
		s.Submitted, (time.Duration(s.Submitted) * work).Round(time.Millisecond))
	return nil
}
