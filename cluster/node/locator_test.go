package node_test

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/membership"
	"github.com/foreman-actors/foreman/cluster/node"
)

// TestMasterLocatorAfterGone: callbacks on a PID run once a topology
// without its member arrives, at once for a member already gone, never
// after stop; callbacks on live members stay armed; a callback fires when
// another process takes its member's address. The cluster is never
// started: topologies are published as protoactor's member list would.
func TestMasterLocatorAfterGone(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	prov, err := membership.New()
	require.NoError(t, err)
	c := cluster.New(sys, cluster.Configure("locator-test", prov, disthash.New(), remote.Configure("127.0.0.1", 0)))
	l := node.NewMasterLocator(c, time.Minute)
	t.Cleanup(l.Close)
	topology := func(addrs ...string) {
		var ms []*cluster.Member
		for _, a := range addrs {
			host, port, err := net.SplitHostPort(a)
			require.NoError(t, err)
			p, err := strconv.Atoi(port)
			require.NoError(t, err)
			ms = append(ms, &cluster.Member{Id: a, Host: host, Port: int32(p)})
		}
		sys.EventStream.Publish(&cluster.ClusterTopology{Members: ms})
	}
	onA := actor.NewPID("10.0.0.1:2551", "master")
	onB := actor.NewPID("10.0.0.2:2552", "master")
	fired := make(chan string, 8)
	watch := func(pid *actor.PID, name string) func() bool {
		return l.AfterGone(pid, func() { fired <- name })
	}
	expect := func(want string) {
		t.Helper()
		select {
		case got := <-fired:
			require.Equal(t, want, got)
		case <-time.After(testkit.Timeout()):
			t.Fatalf("%s did not fire", want)
		}
	}

	topology("10.0.0.1:2551", "10.0.0.2:2552")
	watch(onA, "a1")
	stopA2 := watch(onA, "a2")
	watch(onB, "b")
	require.True(t, stopA2(), "stopped before it ran")
	require.False(t, stopA2(), "stopped once")

	topology("10.0.0.2:2552") // A leaves
	expect("a1")
	require.Empty(t, fired, "a stopped watch and a live member's watch stay silent")

	stop := watch(onA, "late") // A is gone already: at once
	expect("late")
	require.False(t, stop())

	topology("10.0.0.1:2551", "10.0.0.2:2552") // A back, B stays
	require.Empty(t, fired)
	topology()
	expect("b")

	// A process restarted on A's address: the actors of the old one are
	// gone with it, though the address never left the topology.
	member := func(id string) {
		sys.EventStream.Publish(&cluster.ClusterTopology{Members: []*cluster.Member{{Id: id, Host: "10.0.0.1", Port: 2551}}})
	}
	member("a-old")
	watch(onA, "restarted")
	member("a-old")
	require.Empty(t, fired, "the same process: still armed")
	member("a-new")
	expect("restarted")
}
