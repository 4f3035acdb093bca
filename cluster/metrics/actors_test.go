package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"

	"github.com/foreman-actors/foreman/actors/testkit"
)

// TestActorSystemMetrics: protoactor's own instruments land in the node's
// registry (not on a listener of their own) once the application installs
// the registry's provider as the global one, as the foreman binary does:
// the pinned protoactor makes its instruments with the global meter. The
// test plays the application, so it restores the global provider after.
func TestActorSystemMetrics(t *testing.T) {
	m := New()
	opt, err := m.ActorSystemOption()
	require.NoError(t, err)
	mp, err := m.MeterProvider()
	require.NoError(t, err)
	before := otel.GetMeterProvider()
	otel.SetMeterProvider(mp)
	t.Cleanup(func() { otel.SetMeterProvider(before) })
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

// TestActorSystemOptionLeavesTheGlobalProvider: the library hands its
// MeterProvider to protoactor and never installs it process-wide behind
// the application's back (it did before issue 38).
func TestActorSystemOptionLeavesTheGlobalProvider(t *testing.T) {
	before := otel.GetMeterProvider()
	m := New()
	opt, err := m.ActorSystemOption()
	require.NoError(t, err)
	sys := actor.NewActorSystem(opt)
	t.Cleanup(sys.Shutdown)
	sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	require.Same(t, before, otel.GetMeterProvider(), "the global MeterProvider is the application's")
	mp, err := m.MeterProvider()
	require.NoError(t, err)
	again, err := m.MeterProvider()
	require.NoError(t, err)
	require.Same(t, mp, again, "one provider per registry")
}
