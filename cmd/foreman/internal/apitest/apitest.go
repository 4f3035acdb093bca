// Package apitest starts a real all-in-one node behind a real HTTP API on a
// loopback port, for the tests of the commands that talk to the API
// (foreman submit, status, bench --to).
package apitest

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/node"
)

// Start runs an all-in-one node in sys (the test's actor system, e.g.
// testkit.NewSystem) on a memory journal with one worker (opts add to or
// override that: the square job's delay, master options) behind the HTTP
// API, both stopped when t ends, each start and stop bounded by timeout
// (e.g. testkit.Timeout). It returns the API's address and the node.
func Start(t *testing.T, sys *actor.ActorSystem, timeout time.Duration, opts ...node.LocalOption) (addr string, n *node.Local) {
	t.Helper()
	j := journal.NewMemory()
	t.Cleanup(func() { require.NoError(t, j.Close()) })
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	base := []node.LocalOption{node.WithActorSystem(sys), node.WithJournal(j), node.WithLogger(sys.Logger()), node.WithWorkers(1)}
	n, err := node.StartLocal(ctx, append(base, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		require.NoError(t, n.Stop(sctx))
	})
	b, err := httpapi.NewActorBackend(n.Client(), httpapi.LocalMembers(sys))
	require.NoError(t, err)
	srv, err := httpapi.New(b, httpapi.WithAddr("127.0.0.1:0"), httpapi.WithLogger(sys.Logger()))
	require.NoError(t, err)
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		require.NoError(t, srv.Shutdown(sctx))
	})
	return srv.Addr(), n
}
