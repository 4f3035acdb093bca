package node

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/membership"
)

// TestMasterLeaseFor: the master's lease is two fifths of how long the
// seed membership rides out a silent node; a provider that says nothing leaves
// the master's default.
func TestMasterLeaseFor(t *testing.T) {
	t.Parallel()
	p, err := membership.New(membership.WithSeeds("127.0.0.1:2551"))
	require.NoError(t, err)
	ttl, ok := masterLeaseFor(p)
	require.True(t, ok)
	require.Equal(t, membership.DefaultSilence*2/5, ttl)

	p, err = membership.New(membership.WithSeeds("127.0.0.1:2551"), membership.WithSilence(3*time.Second))
	require.NoError(t, err)
	ttl, ok = masterLeaseFor(p)
	require.True(t, ok)
	require.Equal(t, 1200*time.Millisecond, ttl)

	_, ok = masterLeaseFor(nil)
	require.False(t, ok)
}
