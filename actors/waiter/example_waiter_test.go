package waiter_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/waiter"
)

func quietSystem() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
}

// A caller whose deadline passes while its job waits in the backlog gets
// ErrTimeout at its deadline, and the job is never started.
func Example() {
	sys := quietSystem()
	defer sys.Shutdown()

	started, release := make(chan struct{}), make(chan struct{})
	slow, err := waiter.New(sys, func(_ context.Context, n int) (int, error) {
		if n == 1 {
			close(started)
			<-release // the first job holds the only slot
		}
		return n * n, nil
	}, waiter.WithConcurrency(1))
	if err != nil {
		panic(err)
	}

	first := make(chan int)
	go func() {
		v, _ := slow.Do(context.Background(), 1)
		first <- v
	}()
	<-started

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = slow.Do(ctx, 2) // queued behind job 1; gives up after 50 ms
	fmt.Println("caller 2 timed out:", errors.Is(err, waiter.ErrTimeout), errors.Is(err, context.DeadlineExceeded))

	close(release)
	fmt.Println("caller 1 got:", <-first)
	if err := slow.Stop(context.Background()); err != nil {
		panic(err)
	}
	s := slow.Stats()
	fmt.Printf("started=%d skipped=%d completed=%d\n", s.Started, s.Skipped, s.Completed)
	// Output:
	// caller 2 timed out: true true
	// caller 1 got: 1
	// started=1 skipped=1 completed=1
}

// An Interest answers the interest protocol for a caller that waits outside
// the actor system; a worker (on any member) asks it before starting a job.
func ExampleAskStillInterested() {
	sys := quietSystem()
	defer sys.Shutdown()

	ctx, cancel := context.WithCancel(context.Background()) // e.g. an HTTP request's context
	caller := waiter.NewInterest(ctx, sys)
	defer caller.Close()

	still, err := waiter.AskStillInterested(context.Background(), sys, caller.PID(), "job-1")
	fmt.Println("before the caller leaves:", still, err)

	cancel() // the client went away
	for still {
		still, err = waiter.AskStillInterested(context.Background(), sys, caller.PID(), "job-1")
	}
	fmt.Println("after:", still, err)
	// Output:
	// before the caller leaves: true <nil>
	// after: false <nil>
}
