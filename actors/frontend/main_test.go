package frontend_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/foreman-actors/foreman/actors/testkit"
)

// The dead-letter throttle of protoactor-go starts a goroutine that ends
// one throttle interval after a dead letter; tests that talk to a stopped
// actor on purpose may leave it running for that moment.
func TestMain(m *testing.M) {
	testkit.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewThrottle.func1.1"))
}
