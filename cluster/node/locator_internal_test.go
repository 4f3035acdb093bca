package node

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
)

// TestMasterLocatorForget: Forget drops the cached master only when it is
// the PID reported.
func TestMasterLocatorForget(t *testing.T) {
	t.Parallel()
	cached := actor.NewPID("10.0.0.1:2551", "partition-activator/master$1")
	l := &MasterLocator{pid: cached, at: time.Now()}
	l.Forget(actor.NewPID("10.0.0.2:2552", "partition-activator/master$7"))
	require.Same(t, cached, l.pid, "another PID leaves the cache alone")
	l.Forget(actor.NewPID("10.0.0.1:2551", "partition-activator/master$1")) // equal, not the same pointer
	require.Nil(t, l.pid, "the cached master was forgotten")
	l.Forget(cached) // nothing cached: no-op
	require.Nil(t, l.pid)
}
