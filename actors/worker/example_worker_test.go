package worker_test

import (
	"context"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/messages"
)

// A worker registers with a master, asks for work when told WorkIsReady,
// runs the job in its executor and reports the result until acknowledged.
// The master here is a stand-in that hands out a single job.
func Example() {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()

	reg := worker.NewRegistry()
	if err := worker.RegisterBuiltins(reg, worker.WithSquareDelay(0, 0)); err != nil {
		panic(err)
	}
	_ = reg.Register("shout", func(_ context.Context, p []byte) ([]byte, error) {
		return append(p, '!'), nil
	})

	done := make(chan struct{})
	handedOut := false
	master := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *messages.RegisterWorker:
			fmt.Println("registered", m.GetWorkerId(), m.GetJobTypes())
			c.Send(pids.Actor(m.GetWorker()), &messages.WorkIsReady{})
		case *messages.WorkerRequestsWork:
			if !handedOut {
				handedOut = true
				c.Send(pids.Actor(m.GetWorker()), &messages.Work{WorkId: "job-1", JobType: "square", Payload: []byte("7")})
			}
		case *messages.WorkIsDone:
			fmt.Printf("%s is done: %s\n", m.GetWorkId(), m.GetResult())
			c.Respond(&messages.Ack{WorkId: m.GetWorkId()})
			close(done)
		}
	}))

	props, err := worker.Props(route.Fixed(master), reg, worker.WithWorkerID("worker-1"))
	if err != nil {
		panic(err)
	}
	w := sys.Root.Spawn(props)
	<-done
	_ = sys.Root.PoisonFuture(w).Wait() // after the Ack: nothing left to hand back
	// Output:
	// registered worker-1 [factorize long shout sleep square]
	// job-1 is done: 49
}
