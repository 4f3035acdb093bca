package node_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/membership"
	"github.com/foreman-actors/foreman/cluster/node"
)

// TestJournalURL: where a node's journal lives is a URL; a bad one, or one
// given to a node without a journal, is ErrInvalidConfig before anything
// starts; a sqlite: URL's directory is created.
func TestJournalURL(t *testing.T) {
	t.Parallel()
	t.Run("LocalSQLiteURL", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "sub", "dir", "j.db")
		n, err := node.StartLocal(context.Background(), node.WithActorSystem(testkit.NewSystem(t)),
			node.WithWorkers(0), node.WithLogger(testLogger()), node.WithJournalURL("sqlite:"+path))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, n.Stop(context.Background())) })
		require.FileExists(t, path)
	})
	t.Run("LocalBadURL", func(t *testing.T) {
		t.Parallel()
		_, err := node.StartLocal(context.Background(), node.WithJournalURL("mysql://db/x"))
		require.ErrorIs(t, err, node.ErrInvalidConfig)
		require.ErrorContains(t, err, `scheme "mysql" is not supported`)
	})
	for _, role := range []node.Role{node.RoleFrontend, node.RoleWorker} {
		t.Run("URLOn"+role.String(), func(t *testing.T) {
			t.Parallel()
			prov, err := membership.New(membership.WithHTTPAddr("127.0.0.1:0"), membership.WithLogger(testLogger()))
			require.NoError(t, err)
			_, err = node.StartCluster(context.Background(), node.ClusterConfig{
				Role: role, Provider: prov, JournalURL: "sqlite:" + filepath.Join(t.TempDir(), "j.db"), Logger: testLogger(),
			})
			require.ErrorIs(t, err, node.ErrInvalidConfig)
			require.ErrorContains(t, err, "has no journal")
		})
	}
	t.Run("BackendBadURL", func(t *testing.T) {
		t.Parallel()
		prov, err := membership.New(membership.WithHTTPAddr("127.0.0.1:0"), membership.WithLogger(testLogger()))
		require.NoError(t, err)
		_, err = node.StartCluster(context.Background(), node.ClusterConfig{
			Role: node.RoleBackend, Provider: prov, JournalURL: "sqlite:", Logger: testLogger(),
		})
		require.ErrorIs(t, err, node.ErrInvalidConfig)
		require.ErrorContains(t, err, "names no file")
	})
}
