package worker_test

import (
	"context"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/adaptive"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/waiter"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/messages"
)

// The seeds working together in a worker: it takes a permit of the node's
// shared adaptive limiter before it asks for work (seed 004), and before a
// job starts it asks the caller's waiter whether anyone still waits (seed
// 003). The first caller has gone, so its job never starts and its permit
// teaches the limiter nothing; the second still waits and gets its result.
func ExampleWithLimiter() {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()

	reg := worker.NewRegistry()
	_ = worker.RegisterBuiltins(reg, worker.WithSquareDelay(0, 0))
	lim, _ := adaptive.NewLimiter()
	defer lim.Close()

	// The first caller's waiter has gone (its caller gave up and it
	// stopped); the second caller still waits.
	goneCaller := actor.NewPID(sys.Address(), "waiter-of-a-caller-who-left")
	liveCaller := waiter.NewInterest(context.Background(), sys)
	defer liveCaller.Close()

	jobs := []*messages.Work{
		{WorkId: "job-1", JobType: "square", Payload: []byte("6"), Waiter: pids.Wire(goneCaller)},
		{WorkId: "job-2", JobType: "square", Payload: []byte("7"), Waiter: pids.Wire(liveCaller.PID())},
	}
	done := make(chan struct{})
	master := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *messages.WorkerRequestsWork:
			// One job per permit held: capacity is 1.
			if len(jobs) > 0 {
				c.Send(pids.Actor(m.GetWorker()), jobs[0])
				jobs = jobs[1:]
			}
		case *messages.WorkFailed:
			fmt.Printf("%s not started: caller gone\n", m.GetWorkId())
		case *messages.WorkIsDone:
			fmt.Printf("%s is done: %s\n", m.GetWorkId(), m.GetResult())
			c.Respond(&messages.Ack{WorkId: m.GetWorkId()})
			close(done)
		}
	}))

	props, _ := worker.Props(route.Fixed(master), reg, worker.WithLimiter(lim))
	w := sys.Root.Spawn(props)
	<-done
	_ = sys.Root.PoisonFuture(w).Wait()
	fmt.Println("jobs that ran and taught the limiter:", lim.Stats().Completed)
	// Output:
	// job-1 not started: caller gone
	// job-2 is done: 49
	// jobs that ran and taught the limiter: 1
}
