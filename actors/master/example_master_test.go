package master_test

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// A master on an in-memory journal, a worker that squares numbers, and a
// frontend that submits one job and waits for its durable acknowledgement.
func Example() {
	j := journal.NewMemory()
	defer func() {
		if err := j.Close(); err != nil {
			panic(err)
		}
	}()
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	defer system.Shutdown()

	results := make(chan *messages.WorkResult, 1)
	props, err := master.Props(j,
		master.WithPublisher(master.PublisherFunc(func(r *messages.WorkResult) { results <- r })))
	if err != nil {
		panic(err) // an invalid option
	}
	m := system.Root.Spawn(props)

	worker := func(c actor.Context) {
		switch w := c.Message().(type) {
		case *actor.Started:
			c.Send(m, &messages.RegisterWorker{WorkerId: "w1", Worker: pids.Wire(c.Self())})
		case *messages.WorkIsReady:
			c.Send(m, &messages.WorkerRequestsWork{WorkerId: "w1", Worker: pids.Wire(c.Self()), Capacity: 1})
		case *messages.Work:
			n, err := strconv.Atoi(string(w.GetPayload()))
			if err != nil {
				// A payload that is not a number will never square: fail
				// the work for good rather than have it retried.
				c.Request(m, &messages.WorkFailed{WorkerId: "w1", WorkId: w.GetWorkId(), Error: err.Error(), Permanent: true})
				return
			}
			c.Request(m, &messages.WorkIsDone{WorkerId: "w1", WorkId: w.GetWorkId(), Result: fmt.Appendf(nil, "%d", n*n)})
		}
	}
	system.Root.Spawn(actor.PropsFromFunc(worker))

	ack, err := system.Root.RequestFuture(m, &messages.Work{WorkId: "job-1", JobType: "square", Payload: []byte("7")}, 5*time.Second).Result()
	if err != nil {
		fmt.Println("not acknowledged:", err)
		return
	}
	fmt.Println("acknowledged", ack.(*messages.Ack).GetWorkId())
	r := <-results
	fmt.Printf("result of %s: %s\n", r.GetWorkId(), r.GetResult())
	// Output:
	// acknowledged job-1
	// result of job-1: 49
}
