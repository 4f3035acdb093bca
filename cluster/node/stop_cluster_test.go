//go:build !race

package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/node"
)

// TestClusterStopLookupInFlight: a frontend whose master lookup is in
// flight to a backend that just died stops without waiting for the
// lookup's answer. The lookup is unanswered (protoactor's endpoint to the
// dead address retries its connection for 8 s before it gives up on the
// message), and Stop used to wait for it until protoactor's lookup timed
// out, 5 s after it started: the frontend of TestSIGTERMClusterNodes took
// 5.006 s to exit after SIGTERM (bound 3 s) when its result-feed reader
// had a lookup in flight as it stopped.
func TestClusterStopLookupInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test: skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h := newClusterHarness(t)
	be, _ := h.start(node.RoleBackend, nil)
	fe, _ := h.start(node.RoleFrontend, func(c *node.ClusterConfig) { c.FrontendOptions = quickFrontend() })

	var pid *actor.PID
	require.Eventually(t, func() bool {
		var err error
		pid, err = fe.Locator().Resolve(ctx)
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "the frontend never found the master")
	require.Equal(t, be.Address(), pid.GetAddress())

	// The backend dies; the frontend still counts it a member (until its
	// probes time out), so a fresh lookup goes to it and is not answered.
	be.Kill()
	fe.Locator().Forget(pid)
	lookupAt := time.Now()
	rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err := fe.Locator().Resolve(rctx)
	rcancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "the lookup should be in flight, unanswered, when the frontend stops")

	require.NoError(t, fe.Stop(ctx))
	// protoactor's lookup gives up 5 s after it started; a Stop that
	// waits for it ends after that. Without the wait it takes well under
	// a second (the membership's leave is the longest step).
	took := time.Since(lookupAt)
	t.Logf("the frontend stopped %v after its lookup to the dead backend started", took.Round(time.Millisecond))
	require.Less(t, took, 4*time.Second, "Stop waited for the unanswered master lookup")
}
