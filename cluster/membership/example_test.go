package membership_test

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/foreman-actors/foreman/cluster/membership"
)

// A backend member with the membership provider. A real node passes its
// seeds and fixed ports instead:
//
//	p, err := membership.New(membership.WithSeeds("127.0.0.1:2551", "127.0.0.1:2552"))
//	... remote.Configure("127.0.0.1", 2551) ...  // endpoint on 127.0.0.1:6551
func Example() {
	startMu.Lock() // this package's tests serialise remote starts
	defer startMu.Unlock()

	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	p, err := membership.New(
		membership.WithHTTPAddr("127.0.0.1:0"), // a free port, for the example
		membership.WithSilence(2*time.Second),  // tolerate longer pauses than the default 1 s
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := cluster.Configure("example", p, disthash.New(), remote.Configure("127.0.0.1", 0),
		cluster.WithKinds(cluster.NewKind("master", echoProps())))
	c := cluster.New(sys, cfg)
	c.StartMember() // serves GET /members, probes the seeds every 100ms

	for _, m := range membership.Members(c) {
		fmt.Println(m.Role, m.Self, m.Kinds)
	}

	// c.Shutdown(true) would call p.Shutdown(true) (graceful leave) itself,
	// then sleep 2 s for grains to move; a lone member leaves at once.
	_ = p.Shutdown(true)
	c.Shutdown(false)
	// Output:
	// backend true [master prototopic]
}
