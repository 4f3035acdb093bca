package frontend_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/messages"
)

// The sample's front end in one process: a WorkProducer submits three
// square jobs through the Frontend actor, a stand-in master acknowledges
// them and publishes results, and the WorkResultConsumer consumes them.
func Example() {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	defer sys.Shutdown()

	master := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if w, ok := c.Message().(*messages.Work); ok {
			c.Respond(&messages.Ack{WorkId: w.GetWorkId()})
			n, _ := strconv.Atoi(string(w.GetPayload()))
			c.ActorSystem().EventStream.Publish(&messages.WorkResult{
				WorkId: w.GetWorkId(), JobType: w.GetJobType(), Result: strconv.AppendInt(nil, int64(n*n), 10),
			})
		}
	}))

	results := make(chan *messages.WorkResult, 8)
	consumerProps, _ := frontend.ConsumerProps(frontend.WithOnResult(func(r *messages.WorkResult) { results <- r }))
	consumer := sys.Root.Spawn(consumerProps)
	_, _ = sys.Root.RequestFuture(consumer, &frontend.GetStats{}, time.Second).Result() // subscribed

	feProps, _ := frontend.Props(route.Fixed(master))
	fe := sys.Root.Spawn(feProps)
	producerProps, _ := frontend.ProducerProps(fe, frontend.WithJobs(3),
		frontend.WithWorkID(func(n int) string { return fmt.Sprint("job-", n) }))
	sys.Root.Spawn(producerProps)
	for range 3 {
		r := <-results
		fmt.Printf("Consumed result %s: %s\n", r.GetWorkId(), r.GetResult())
	}

	// The same submission from plain Go code, e.g. an HTTP handler.
	err := frontend.Submit(context.Background(), sys, route.Fixed(master),
		&messages.Work{WorkId: "job-4", JobType: "square", Payload: []byte("4")})
	fmt.Println("job-4 acknowledged:", err == nil)
	r := <-results
	fmt.Printf("Consumed result %s: %s\n", r.GetWorkId(), r.GetResult())
	// Output:
	// Consumed result job-1: 1
	// Consumed result job-2: 4
	// Consumed result job-3: 9
	// job-4 acknowledged: true
	// Consumed result job-4: 16
}
