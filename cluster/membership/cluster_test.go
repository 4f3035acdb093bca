package membership_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/membership"
)

// The cluster tests start real protoactor clusters on loopback. They do not
// run in parallel with each other (remote starts are serialised and busy
// remotes must not see a new one start unordered), and each keeps its
// bounds generous: the machine is shared.

// TestClusterCrashFailover: three members and a client converge from the
// seed alone; a grain answers the client; the member hosting it stops
// abruptly and is dropped by every other node, and the grain answers from
// another member; a member that cannot be probed any more is declared down
// by the others and taken back when it answers again.
//
// It kills a member in-process, which leaves the survivors' gRPC
// connections to it re-dialling for the life of the process (protoactor's
// Remote.Shutdown(false) never closes them); any remote started after that
// races with them on gRPC's global logger. So, like
// TestClusterGracefulLeaveAndJoin, it runs without -race (CI's second step).
func TestClusterCrashFailover(t *testing.T) {
	if raceDetector {
		t.Skip("SKIPPED UNDER -race: the crash leaves gRPC connections that race with later remote starts on gRPC's global logger; run: go test -count=1 -run TestClusterCrashFailover ./cluster/membership/")
	}
	t0 := time.Now()
	t.Cleanup(func() { t.Logf("T+%v clean-up done", time.Since(t0)) })
	nodes := startNodes(t, true, spec{member: true}, spec{member: true}, spec{member: true}, spec{member: false})
	t.Logf("T+%v started", time.Since(t0))
	members, client := nodes[:3], nodes[3]

	d := waitView(t, testkit.Timeout(), idsOf(members...), nodes...)
	t.Logf("converged %v after the last start returned", d)

	warm(t, client, members...)
	addr, err := client.ask("g1", 2*time.Second)
	require.NoError(t, err, "grain request from the client")
	var owner *node
	var survivors []*node
	for _, m := range members {
		if m.sys.Address() == addr {
			owner = m
		} else {
			survivors = append(survivors, m)
		}
	}
	require.NotNil(t, owner, "the grain answered from %s, which is no member", addr)

	// Members helper: members with roles, then the client itself.
	got := membership.Members(client.c)
	require.Len(t, got, 4)
	require.True(t, got[3].Client && got[3].Self, "the client lists itself last: %+v", got)
	for _, m := range got[:3] {
		require.False(t, m.Client)
		require.Contains(t, m.Kinds, echoKind)
		require.Equal(t, membership.RoleBackend, m.Role, "a member hosting kinds on a free port")
	}
	require.Eventually(t, func() bool { // members report the client that polls them
		ms := membership.Members(members[0].c)
		return len(ms) == 4 && ms[3].ID == client.sys.ID && ms[3].Role == membership.RoleWorker
	}, testkit.Timeout(), 5*time.Millisecond)

	// Crash: endpoint and remote gone at once, no leave.
	owner.stop(false)
	d = waitView(t, 3*testkit.Timeout(), idsOf(survivors...), append(slices.Clone(survivors), client)...)
	t.Logf("crashed member dropped by every node after %v (defaults: refresh %v, failures %d)",
		d, membership.DefaultRefresh, membership.DefaultFailures)

	var again string
	require.Eventually(t, func() bool {
		again, err = client.ask("g1", time.Second)
		return err == nil
	}, 5*testkit.Timeout(), 10*time.Millisecond, "the grain never answered after the crash: %v", err)
	require.NotEqual(t, addr, again, "the grain answered from the crashed member")
	t.Logf("T+%v grain answered again", time.Since(t0))

	// A member that answers its probes badly for a while is taken down by
	// the others and joins again once it answers: the same process, under
	// the same id, with grains placed on it again (protoactor blocked its
	// id when it left; the provider hands it back under an alias).
	sick, other := survivors[1], survivors[0]
	membership.SetFailServing(sick.p, true)
	waitView(t, 3*testkit.Timeout(), idsOf(other), other, client)
	t.Logf("T+%v the sick member was dropped", time.Since(t0))
	membership.SetFailServing(sick.p, false)
	d = waitView(t, 3*testkit.Timeout(), idsOf(survivors...), append(slices.Clone(survivors), client)...)
	t.Logf("T+%v the sick member was taken back %v after it answered again", time.Since(t0), d)
	require.Eventually(t, func() bool {
		for i := range 32 {
			if a, err := client.ask(fmt.Sprintf("r%d", i), time.Second); err == nil && a == sick.sys.Address() {
				return true
			}
		}
		return false
	}, 5*testkit.Timeout(), 50*time.Millisecond, "no grain was placed on the member that came back")
}

// TestClusterGracefulLeaveAndJoin: with a failure threshold far too high to
// matter, a member that leaves gracefully is still dropped at once; a new
// member that knows only the seed is learned by every node.
//
// A member joins here while the other nodes' gRPC connections are live:
// protoactor's Remote.Start writes gRPC's global logger
// (grpclog.SetLoggerV2) while those connections read it, a data race in
// the library that -race reported in 3 of 10 runs. It runs without -race
// (CI's second test step).
func TestClusterGracefulLeaveAndJoin(t *testing.T) {
	if raceDetector {
		t.Skip("SKIPPED UNDER -race: protoactor's Remote.Start races with live gRPC connections on gRPC's global logger; run: go test -count=1 -run TestClusterGracefulLeaveAndJoin ./cluster/membership/")
	}
	slow := []membership.Option{membership.WithFailures(1000)}
	t0 := time.Now()
	t.Cleanup(func() { t.Logf("T+%v clean-up done", time.Since(t0)) })
	nodes := startNodes(t, true,
		spec{member: true, opts: slow}, spec{member: true, opts: slow}, spec{member: true, opts: slow},
		spec{member: false, opts: slow})
	members, client := nodes[:3], nodes[3]
	waitView(t, testkit.Timeout(), idsOf(members...), nodes...)

	// The seed is the only endpoint the new member knows. (Joining before
	// the leave: a remote started after another node stopped may see that
	// node's last gRPC log reads unordered, see startNodes.)
	joined := startNodes(t, false, spec{member: true, opts: slow, seeds: []string{members[0].p.HTTPAddr()}})[0]
	d := waitView(t, testkit.Timeout(), idsOf(append(slices.Clone(members), joined)...), append(slices.Clone(nodes), joined)...)
	t.Logf("new member learned by all %v after its start returned", d)
	warm(t, client, members[0], members[1], members[2], joined)

	start := time.Now()
	members[2].stop(true)
	leave := time.Since(start)
	rest := []*node{members[0], members[1], joined}
	d = waitView(t, testkit.Timeout(), idsOf(rest...), rest...)
	t.Logf("graceful leave took %v, dropped by the members %v after it returned", leave, d)
	// The client is waited for too: it sees the 503 at its next poll.
	waitView(t, testkit.Timeout(), idsOf(rest...), client)

	addr, err := client.ask("g2", 2*time.Second)
	require.NoError(t, err)
	require.Contains(t, []string{members[0].sys.Address(), members[1].sys.Address(), joined.sys.Address()}, addr)

	// A client's graceful shutdown serves nothing and must not panic
	// (automanaged's does); members forget it after the client TTL.
	client.stop(true)
	require.Eventually(t, func() bool { return len(members[0].p.Clients()) == 0 },
		testkit.Timeout(), 5*time.Millisecond, "members still report the stopped client")
	t.Logf("T+%v done", time.Since(t0))
}

// TestMemberEndpoint: GET /members answers this node's identity and view as
// JSON; a lone member hosts grains; when the actor system stops without the provider being shut down
// (cluster.Shutdown(false) does not call it), the provider stops by itself.
func TestMemberEndpoint(t *testing.T) {
	n := startNodes(t, false, spec{member: true, ownSystem: true})[0]
	url := "http://" + n.p.HTTPAddr() + membership.Path

	resp, err := http.Get(url)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var st membership.Status
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	require.NoError(t, resp.Body.Close())
	host, port, err := n.sys.GetHostPort()
	require.NoError(t, err)
	require.Equal(t, n.sys.ID, st.ID)
	require.Equal(t, host, st.Host)
	require.Equal(t, port, st.Port)
	require.Equal(t, n.p.HTTPAddr(), st.HTTP)
	require.Equal(t, "membership-test", st.Cluster)
	require.Contains(t, st.Kinds, echoKind)
	require.False(t, st.Leaving)
	require.Equal(t, []string{n.sys.ID}, idsOfNodes(st.Members))

	// A lone member (the first seed) must be in its own member list, or
	// no identity has an owner.
	addr, err := n.ask("solo", testkit.Timeout())
	require.NoError(t, err, "a lone member cannot host its grains")
	require.Equal(t, n.sys.Address(), addr)

	resp, err = http.Post(url, "application/json", nil)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

	n.sys.Shutdown()
	require.Eventually(t, func() bool {
		resp, err := http.Get(url)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err != nil
	}, testkit.Timeout(), 5*time.Millisecond, "the endpoint still answers after the actor system stopped")
}

func idsOfNodes(ns []membership.Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.ID)
	}
	return out
}

// TestClusterSilentMemberRejoins: a member that stops answering (as one cut
// off by a partition, or paused, does: probes time out) is not dropped for
// a few silent probes, is dropped once the silence period has passed, and
// is taken back, grains and all, as soon as it answers again: the same
// process, no restart.
func TestClusterSilentMemberRejoins(t *testing.T) {
	nodes := startNodes(t, true, spec{member: true}, spec{member: true}, spec{member: false})
	a, b, client := nodes[0], nodes[1], nodes[2]
	waitView(t, testkit.Timeout(), idsOf(a, b), nodes...)

	start := time.Now()
	membership.SetHangServing(b.p, true)
	d := waitView(t, membership.DefaultSilence+3*testkit.Timeout(), idsOf(a), a, client)
	dropped := time.Since(start)
	t.Logf("the silent member was dropped after %v (silence %v)", dropped, membership.DefaultSilence)
	// Timeouts alone never drop a member before the silence has passed:
	// its last good answer came about a refresh before the hang (two, to be
	// generous). Were timeouts counted like refused connections, two of
	// them (300 ms each, one at a time) would drop it after 0.6-0.7 s.
	require.GreaterOrEqual(t, dropped, membership.DefaultSilence-2*membership.DefaultRefresh, "dropped before the silence period (waited %v)", d)

	healed := time.Now()
	membership.SetHangServing(b.p, false)
	waitView(t, 3*testkit.Timeout(), idsOf(a, b), a, client)
	t.Logf("taken back %v after it answered again", time.Since(healed))
	require.Eventually(t, func() bool {
		for i := range 32 {
			if addr, err := client.ask(fmt.Sprintf("s%d", i), time.Second); err == nil && addr == b.sys.Address() {
				return true
			}
		}
		return false
	}, 5*testkit.Timeout(), 50*time.Millisecond, "no grain was placed on the member that came back")
}
