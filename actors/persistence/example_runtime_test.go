package persistence_test

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/journal"
)

// counter is a persistent actor: its decision state is n, its events are
// wrapperspb.Int64Value{Value: amount}.
type counter struct {
	rt *persistence.Runtime
	n  int64
}

type increment struct{ by int64 }

func (a *counter) Reset(snap *persistence.Snapshot) error {
	a.n = 0
	if snap != nil {
		a.n = snap.Msg.(*wrapperspb.Int64Value).GetValue()
	}
	return nil
}

func (a *counter) Replay(ev persistence.Event) error {
	a.n += ev.Msg.(*wrapperspb.Int64Value).GetValue()
	return nil
}

func (a *counter) Snapshot(int) (proto.Message, bool) { return wrapperspb.Int64(a.n), true }

func (a *counter) Receive(c actor.Context) {
	if a.rt.Handle(c) {
		return
	}
	switch m := c.Message().(type) {
	case *actor.Started:
		a.rt.Start(c, a, nil)
	case *increment:
		if !a.rt.Recovered() {
			c.Respond(wrapperspb.String("unavailable: recovering"))
			return
		}
		a.n += m.by // decided now: the next message sees it
		a.rt.Persist([]proto.Message{wrapperspb.Int64(m.by)}, nil)
		a.rt.Reply(c.Sender(), wrapperspb.Int64(a.n)) // leaves once the event is durable
	}
}

// A counter that survives a restart: every increment is answered only once
// it is in the journal, and a new activation replays the journal (from a
// snapshot every 2 events here). It holds a lease while it serves: another
// activation started meanwhile (as on the far side of a network partition)
// waits for it instead of taking a new epoch that would fence it.
func Example() {
	j := journal.NewMemory()
	defer func() {
		if err := j.Close(); err != nil {
			fmt.Println("close:", err)
		}
	}()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	defer sys.Shutdown()

	spawn := func() *actor.PID {
		rt, err := persistence.New(j, "counter-1", persistence.WithSnapshotEvery(2), persistence.WithLease(2*time.Second))
		if err != nil {
			panic(err) // an option out of range
		}
		return sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &counter{rt: rt} }))
	}
	ask := func(pid *actor.PID, by int64) any {
		res, err := sys.Root.RequestFuture(pid, &increment{by: by}, 5*time.Second).Result()
		if err != nil {
			return err
		}
		if s, ok := res.(*wrapperspb.StringValue); ok {
			return s.GetValue()
		}
		return res.(*wrapperspb.Int64Value).GetValue()
	}
	stop := func(pid *actor.PID) {
		if err := sys.Root.StopFuture(pid).Wait(); err != nil {
			fmt.Println("stop:", err)
		}
	}

	pid := spawn()
	fmt.Println(ask(pid, 2), ask(pid, 3), ask(pid, 5))

	other := spawn() // finds the lease held: takes no epoch, waits
	fmt.Println(ask(other, 1))
	stop(other)
	stop(pid) // releases the lease

	pid = spawn() // serves at once: new epoch, snapshot, replay
	fmt.Println(ask(pid, 1))
	// Output:
	// 2 5 10
	// unavailable: recovering
	// 11
}
