package node

import (
	"net"
	"strconv"
	"testing"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
)

// TestMasterOwnership: this node owns the master exactly when rendezvous
// hashing over the backends of its latest topology picks its address
// (members without the master kind never own it), and is presumed to
// before any topology is known.
func TestMasterOwnership(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	member := func(host string, port int32, kinds ...string) *cluster.Member {
		return &cluster.Member{Id: host, Host: host, Port: port, Kinds: kinds}
	}
	a := member("10.0.0.1", 2551, MasterKind)
	b := member("10.0.0.2", 2552, MasterKind)
	client := member("10.0.0.3", 3001)

	rdv := cluster.NewRendezvous()
	rdv.UpdateMembers(cluster.Members{a, b})
	owner := rdv.GetByClusterIdentity(&cluster.ClusterIdentity{Kind: MasterKind, Identity: MasterIdentity})
	other := map[string]string{a.Address(): b.Address(), b.Address(): a.Address()}[owner]
	require.NotEmpty(t, other)

	for _, tc := range []struct {
		name    string
		self    string
		members cluster.Members
		want    bool
	}{
		{name: "the owner of two", self: owner, members: cluster.Members{a, b, client}, want: true},
		{name: "the other of two", self: other, members: cluster.Members{a, b, client}, want: false},
		{name: "alone, the other owns it", self: other, members: cluster.Members{backendAt(t, other)}, want: true},
		{name: "a client never", self: client.Address(), members: cluster.Members{a, b, client}, want: false},
		{name: "no backend at all", self: owner, members: cluster.Members{client}, want: false},
	} {
		o := newMasterOwnership(sys, MasterKind, MasterIdentity)
		self := tc.self
		o.self = func() string { return self }
		require.True(t, o.Owns(), "%s: presumed before any topology", tc.name)
		sys.EventStream.Publish(&cluster.ClusterTopology{Members: tc.members})
		require.Equal(t, tc.want, o.Owns(), tc.name)
		o.Close()
	}
}

// backendAt is a member hosting the master kind at addr (host:port).
func backendAt(t *testing.T, addr string) *cluster.Member {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	return &cluster.Member{Id: addr, Host: host, Port: int32(p), Kinds: []string{MasterKind}}
}
