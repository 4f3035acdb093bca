package membership_test

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/membership"
)

// childEnv, when set to a comma-separated list of seed endpoints, makes
// the test binary run one cluster member instead of the tests (see
// startChild): it prints "READY <id> <endpoint>" and runs until killed, or
// exits after childLifetime.
const (
	childEnv      = "FOREMAN_MEMBERSHIP_CHILD_SEEDS"
	childLifetime = time.Minute
)

func TestMain(m *testing.M) {
	if seeds, ok := os.LookupEnv(childEnv); ok {
		runChild(strings.Split(seeds, ","))
		return
	}
	// The gossip log throttles this package's example starts are in
	// testkit.LeakIgnores (60 s timers); TestClusterCrashFailover kills a
	// member in-process, whose survivors' reconnect loops are bounded by
	// protoactor's retry limits (testkit.CrashLeakIgnores).
	testkit.VerifyTestMain(m, testkit.CrashLeakIgnores...)
}

// runChild runs one member with default membership settings on loopback.
func runChild(seeds []string) {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	p, err := membership.New(membership.WithHTTPAddr("127.0.0.1:0"), membership.WithSeedHTTP(seeds...))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cfg := cluster.Configure("membership-test", p, disthash.New(), remote.Configure("127.0.0.1", 0),
		cluster.WithKinds(cluster.NewKind(echoKind, echoProps())))
	cfg.GossipInterval = time.Hour // as in-process test members: see newNode
	c := cluster.New(sys, cfg)
	c.StartMember()
	fmt.Printf("READY %s %s\n", sys.ID, p.HTTPAddr())
	time.Sleep(childLifetime) // the parent kills us long before
	os.Exit(3)
}
