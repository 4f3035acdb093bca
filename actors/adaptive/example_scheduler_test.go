package adaptive_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/adaptive"
	"github.com/foreman-actors/foreman/actors/adaptive/sim"
)

// The scheduler actor runs a batch with at most Parallelism jobs at once and
// tells a listener about every completion.
func ExampleProps() {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	defer system.Shutdown()

	events := make(chan *adaptive.JobCompleted, 3)
	listener := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*adaptive.JobCompleted); ok {
			events <- m
		}
	}))
	// A fixed level of 1 keeps the output in order; drop WithCustomPolicy
	// for the default, self-tuning policy.
	props, err := adaptive.Props(adaptive.WithCustomPolicy(adaptive.Fixed(1)), adaptive.WithListener(listener))
	if err != nil {
		fmt.Println(err)
		return
	}
	scheduler := system.Root.Spawn(props)
	var jobs []adaptive.Job
	for i := range 3 {
		jobs = append(jobs, adaptive.Job{ID: fmt.Sprint("job-", i), Run: func(context.Context) error { return nil }})
	}
	system.Root.Send(scheduler, &adaptive.Batch{Jobs: jobs})
	for range 3 {
		e := <-events
		fmt.Println(e.ID, e.Status)
	}
	// Output:
	// job-0 Queue: 1, In Flight: 1, Parallelism: 1
	// job-1 Queue: 0, In Flight: 1, Parallelism: 1
	// job-2 Queue: 0, In Flight: 0, Parallelism: 1
}

// A Limiter sizes a pool: Acquire before running a work item, Release after.
func ExampleLimiter() {
	lim, err := adaptive.NewLimiter(adaptive.WithCustomPolicy(adaptive.Fixed(2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lim.Close()
	a, _ := lim.Acquire(context.Background())
	b, _ := lim.Acquire(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = lim.Acquire(ctx)
	fmt.Println("third:", err)
	a.Release()
	b.Release()
	fmt.Println(lim.Stats().Completed, "released, limit", lim.Limit())
	// Output:
	// third: adaptive: acquire: context deadline exceeded
	// 2 released, limit 2
}

// The default policy finds the knee of a resource that slows down beyond 20
// requests in flight, in simulated time.
func ExampleNewHillClimb() {
	p, err := adaptive.NewHillClimb(adaptive.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := sim.Run(sim.Scenario{
		Service: sim.Congested{K: 20}, Load: sim.Backlog{Depth: 100},
		Work: 50 * time.Millisecond, WorkJitter: 0.3, Duration: 60 * time.Second, Seed: 1,
	}, p)
	fmt.Printf("level %d, %.0f jobs/s\n", p.Limit(), r.Throughput(30, 60))
	// Output:
	// level 20, 399 jobs/s
}
