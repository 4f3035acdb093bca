package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
)

// TestActorSystemMetrics: protoactor's own instruments land in the node's
// registry (not on a listener of their own). protoactor sets OpenTelemetry's
// process-wide provider, so this is the package's only such test.
func TestActorSystemMetrics(t *testing.T) {
	m := New()
	opt, err := m.ActorSystemOption()
	require.NoError(t, err)
	sys := actor.NewActorSystem(opt)
	t.Cleanup(sys.Shutdown)
	got := make(chan struct{}, 10)
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(string); ok {
			got <- struct{}{}
		}
	}))
	for range 3 {
		sys.Root.Send(pid, "hello")
		<-got
	}
	require.Eventually(t, func() bool {
		mfs, err := m.reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if strings.HasPrefix(mf.GetName(), "protoactor_actor_message_receive_duration_seconds") {
				return true
			}
		}
		return false
	}, testkit.Timeout(), 10*time.Millisecond, "protoactor's receive-time histogram is in the registry")
}
