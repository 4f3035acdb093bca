package membership_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/foreman-actors/foreman/actors/testkit"
)

func TestMain(m *testing.M) {
	testkit.VerifyTestMain(m,
		// protoactor's gossiper rate-limits its Info logs with an
		// actor.NewThrottle(3, 60s): the first log of a period (any
		// Gossip.SetState, e.g. the heartbeat every GossipInterval, or
		// cluster.Shutdown's "left" state) starts a goroutine that waits one
		// 60 s period on a ticker and then exits by itself. Bounded, not a
		// leak; only the example runs gossip (tests set GossipInterval to 1 h).
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/cluster.(*Gossiper).StartGossiping.NewThrottle.func3.1"),
	)
}
