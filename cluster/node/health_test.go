package node_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/node"
)

// TestLocalHealth: the all-in-one node is live and ready on a SQLite
// journal (its master answers, the journal reads); once the journal is
// closed under it, the journal check fails and the node stays live.
func TestLocalHealth(t *testing.T) {
	t.Parallel()
	j, err := journal.OpenSQLite(filepath.Join(t.TempDir(), "j.db"))
	require.NoError(t, err)
	n, err := node.StartLocal(context.Background(), node.WithActorSystem(testkit.NewSystem(t)),
		node.WithWorkers(1), node.WithLogger(testLogger()), node.WithJournal(j))
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	hc, err := n.Health()
	require.NoError(t, err)

	live := hc.Live(t.Context())
	require.NoError(t, live.Err())
	require.Equal(t, []string{"ping", node.CheckActors}, []string{live.Results[0].Name, live.Results[1].Name})
	require.Eventually(t, func() bool { return hc.Ready(t.Context()).OK() }, testkit.Timeout(), 20*time.Millisecond)
	ready := hc.Ready(t.Context())
	require.Len(t, ready.Results, 3, "ping, journal, masters")

	require.NoError(t, j.Close())
	ready = hc.Ready(t.Context())
	require.Equal(t, []string{node.CheckJournal}, ready.Failed())
	require.NoError(t, hc.Live(t.Context()).Err())
}
