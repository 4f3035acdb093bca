package pulling_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/pulling"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// A durable master owns the Epic "greetings" and journals its position: a
// start is answered once durable, workers found through a route pull its
// items, and a later activation of the master (after a stop, or on another
// node) knows the Epic is done instead of starting it over.
func ExampleDurableMasterProps() {
	j := journal.NewMemory()
	defer func() { _ = j.Close() }()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	defer sys.Shutdown()

	var opened atomic.Int32
	open := func(_ context.Context, name string) (pulling.SeekEpic[string], error) {
		opened.Add(1)
		return pulling.SliceSeekEpic([]string{"hello", "bonjour", "hallo", "ola", "ciao"}), nil
	}
	props, err := pulling.DurableMasterProps(j, open, pulling.WithEpicName("greetings"))
	if err != nil {
		panic(err) // a bad option
	}
	var master atomic.Pointer[actor.PID]
	master.Store(sys.Root.Spawn(props))
	var sent atomic.Int32
	worker, err := pulling.RouteWorkerProps(
		route.Resolver(func(context.Context) (*actor.PID, error) { return master.Load(), nil }),
		func(_ context.Context, greeting string) error { sent.Add(1); return nil })
	if err != nil {
		panic(err)
	}
	sys.Root.Spawn(worker)

	ask := func(msg any) *messages.PullingProgress {
		res, err := sys.Root.RequestFuture(master.Load(), msg, 5*time.Second).Result()
		if err != nil {
			panic(err)
		}
		return res.(*messages.PullingProgress)
	}
	fmt.Println("running:", ask(&messages.PullingStartEpic{Name: "greetings"}).GetRunning())
	for !ask(&messages.PullingGetProgress{}).GetDone() {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("sent:", sent.Load())

	if err := sys.Root.StopFuture(master.Load()).Wait(); err != nil {
		panic(err)
	}
	master.Store(sys.Root.Spawn(props)) // a new activation replays the journal
	p := ask(&messages.PullingStartEpic{Name: "greetings"})
	fmt.Println("done:", p.GetDone(), "finished:", p.GetFinished(), "opened:", opened.Load())
	// Output:
	// running: true
	// sent: 5
	// done: true finished: 5 opened: 1
}
