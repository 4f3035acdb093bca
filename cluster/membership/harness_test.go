package membership_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/membership"
)

// echoKind is the grain kind registered on test members: it answers a
// StringValue with the address of the member hosting it.
const echoKind = "echo"

func echoProps() *actor.Props {
	return actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*wrapperspb.StringValue); ok {
			c.Respond(wrapperspb.String(c.ActorSystem().Address()))
		}
	})
}

// node is one cluster node of a test.
type node struct {
	sys     *actor.ActorSystem
	c       *cluster.Cluster
	p       *membership.Provider
	member  bool
	mu      sync.Mutex
	stopped bool
	conn    net.Conn // idle connection proving the gRPC server is serving
	// placedMu guards placed: the member addresses of the last topology
	// n's cluster consumed. Not mu, which stop holds while it publishes one.
	placedMu sync.Mutex
	placed   []string
}

// watchTopology records the member addresses of every cluster topology
// n's member list publishes. disthash's partition manager swaps the
// rendezvous that Cluster.Get reads without a lock when it handles a
// topology (a data race inside protoactor, which -race reported under a
// request sent while a member came back). The event stream runs handlers
// in subscription order on the publishing goroutine, so a handler added
// after the manager's sees each topology only once the manager has swapped
// it in: waitView waits for that, and requests sent afterwards are ordered
// after the swap. The provider's started hook is the point to subscribe:
// after the manager (set up before the provider starts), before the first
// topology.
func (n *node) watchTopology() {
	n.sys.EventStream.Subscribe(func(ev any) {
		tp, ok := ev.(*cluster.ClusterTopology)
		if !ok {
			return
		}
		addrs := make([]string, 0, len(tp.Members))
		for _, m := range tp.Members {
			addrs = append(addrs, m.Address())
		}
		slices.Sort(addrs)
		n.placedMu.Lock()
		n.placed = addrs
		n.placedMu.Unlock()
	})
}

// consumed reports whether the last topology n's cluster consumed lists
// exactly the members n's provider believes alive.
func (n *node) consumed() bool {
	var view []string
	for _, m := range n.p.Members() {
		view = append(view, m.Address())
	}
	slices.Sort(view)
	n.placedMu.Lock()
	defer n.placedMu.Unlock()
	return slices.Equal(n.placed, view)
}

// waitServing waits until the node's gRPC server has logged its start-up
// and is serving: connect and read its HTTP/2 settings frame. The
// connection stays open, unanswered, until stop, so the server logs
// nothing meanwhile (testkit.StartRemote does the same).
func (n *node) waitServing() {
	conn, err := net.DialTimeout("tcp", n.sys.Address(), testkit.Timeout())
	if err != nil {
		panic(fmt.Sprintf("cannot connect to the new remote at %s: %v", n.sys.Address(), err))
	}
	_ = conn.SetReadDeadline(time.Now().Add(testkit.Timeout()))
	if _, err := io.ReadAtLeast(conn, make([]byte, 9), 1); err != nil {
		panic(fmt.Sprintf("the remote at %s did not answer: %v", n.sys.Address(), err))
	}
	n.conn = conn
}

// spec describes a node to start.
type spec struct {
	member bool
	seeds  []string // membership endpoints (WithSeedHTTP)
	opts   []membership.Option
	// ownSystem: the test may shut the actor system down itself
	// (testkit.NewSystem's clean-up would shut it down a second time).
	ownSystem bool
}

// startMu serialises remote starts across the test process; see
// testkit.StartRemote for why (Remote.Start replaces gRPC's global logger).
var startMu sync.Mutex

// startNodes starts the nodes in order, each knowing the seeds in its spec
// plus, when seedFirst is set, the first node's endpoint. Remote starts are
// serialised, the rest of the starts (StartMember sleeps 1 s) overlap.
//
// Race-detector ordering: each start is preceded by an I/O barrier and its
// gRPC logger write followed by one (see testkit.StartRemote), which
// orders it against other remotes' logger reads that are followed by
// socket I/O. A remote that is stopping (or whose peer just stopped) reads
// the logger while closing connections without further I/O, so tests start
// no node right after stopping one while others still run.
func startNodes(t testing.TB, seedFirst bool, specs ...spec) []*node {
	t.Helper()
	nodes := make([]*node, len(specs))
	var done sync.WaitGroup
	var first string
	for i, s := range specs {
		seeds := slices.Clone(s.seeds)
		if seedFirst && i > 0 {
			seeds = append(seeds, first)
		}
		n := newNode(t, s, seeds)
		nodes[i] = n
		startMu.Lock()
		ioBarrier(t)
		started := make(chan struct{})
		membership.SetStartedHook(n.p, func() {
			n.watchTopology()
			ioBarrier(t) // the new gRPC logger write happens before later socket reads
			n.waitServing()
			close(started)
		})
		done.Add(1)
		go func() {
			defer done.Done()
			if n.member {
				n.c.StartMember()
			} else {
				n.c.StartClient()
			}
		}()
		select {
		case <-started:
		case <-time.After(2 * testkit.Timeout()):
			startMu.Unlock()
			t.Fatalf("node %d did not start within %v", i, 2*testkit.Timeout())
		}
		startMu.Unlock()
		if i == 0 {
			first = n.p.HTTPAddr()
		}
	}
	done.Wait()
	return nodes
}

func newNode(t testing.TB, s spec, seeds []string) *node {
	t.Helper()
	var sys *actor.ActorSystem
	if s.ownSystem {
		sys = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
			return slog.New(slog.DiscardHandler)
		}))
		t.Cleanup(func() {
			testkit.StopAll(sys)
			if !sys.IsStopped() {
				sys.Shutdown()
			}
		})
	} else {
		sys = testkit.NewSystem(t)
	}
	opts := append([]membership.Option{
		membership.WithHTTPAddr("127.0.0.1:0"),
		membership.WithSeedHTTP(seeds...),
	}, s.opts...)
	p, err := membership.New(opts...)
	require.NoError(t, err)
	var kinds []*cluster.Kind
	if s.member {
		kinds = append(kinds, cluster.NewKind(echoKind, echoProps()))
	}
	cfg := cluster.Configure("membership-test", p, disthash.New(),
		remote.Configure("127.0.0.1", 0), cluster.WithKinds(kinds...),
		cluster.WithRequestTimeout(time.Second))
	// No gossip traffic: protoactor's member list calls BlockList.Block on
	// every gossiped topology while the endpoint reader reads the block
	// list without a lock (a data race inside protoactor that -race
	// reports). Membership does not need gossip.
	cfg.GossipInterval = time.Hour
	n := &node{sys: sys, c: cluster.New(sys, cfg), p: p, member: s.member}
	t.Cleanup(func() { n.stop(false) })
	return n
}

// stop stops the node: graceful runs the provider's graceful leave; not
// graceful looks like a crash to the others (endpoint and remote gone at
// once). It does not call cluster.Shutdown, which sleeps 2 s when graceful
// and races inside protoactor (Remote.Shutdown(true)).
func (n *node) stop(graceful bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return
	}
	n.stopped = true
	_ = n.p.Shutdown(graceful)
	if n.conn != nil {
		_ = n.conn.Close()
	}
	if n.member {
		n.c.Gossip.Shutdown()
	}
	n.c.Remote.Shutdown(false)
	for _, id := range []string{"EndpointSupervisor", "activator"} {
		_ = n.sys.Root.StopFuture(actor.NewPID(n.sys.Address(), id)).Wait()
	}
	if n.member {
		n.stopGrains()
	}
	// testkit.NewSystem's clean-up stops the remaining actors and the system.
}

// stopGrains stops the grains of a member whose remote is down. Two
// protoactor habits make this necessary: the placement actor, when
// stopped with live grains, poisons them and waits for the futures inside
// its own Stopping handler, which stalls for the futures' 10 s timeout;
// and every stopped grain is announced to all members in the member list
// (ActivationTerminated), which would dial them through a remote that is
// down, leaving gRPC connections behind that retry and log at random
// times. So the member list is first reduced to the member itself.
func (n *node) stopGrains() {
	host, port, _ := n.sys.GetHostPort()
	n.c.MemberList.UpdateClusterTopology(cluster.Members{{
		Id: n.sys.ID, Host: host, Port: int32(port), Kinds: n.c.GetClusterKinds(),
	}})
	var grains []*actor.Future
	for _, bucket := range n.sys.ProcessRegistry.LocalPIDs.LocalPIDs {
		if bucket.Count() == 0 {
			continue // Keys starts a goroutine per shard: skip empty buckets
		}
		for _, id := range bucket.Keys() {
			if strings.HasPrefix(id, "partition-activator/") {
				grains = append(grains, n.sys.Root.StopFuture(actor.NewPID(n.sys.Address(), id)))
			}
		}
	}
	for _, f := range grains {
		_ = f.Wait()
	}
}

// ids returns the ids of the members n's provider believes alive.
func (n *node) ids() []string {
	var out []string
	for _, m := range n.p.Members() {
		out = append(out, m.ID)
	}
	slices.Sort(out)
	return out
}

// idsOf returns the sorted member ids of nodes.
func idsOf(nodes ...*node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.sys.ID)
	}
	slices.Sort(out)
	return out
}

// waitView waits until every node in watchers sees exactly want and its
// cluster has consumed that view (see watchTopology), and returns how long
// it took.
func waitView(t testing.TB, within time.Duration, want []string, watchers ...*node) time.Duration {
	t.Helper()
	start := time.Now()
	require.Eventually(t, func() bool {
		for _, w := range watchers {
			if !slices.Equal(w.ids(), want) || !w.consumed() {
				return false
			}
		}
		return true
	}, within, 5*time.Millisecond, "views did not converge to %v", want)
	return time.Since(start)
}

// ask sends a StringValue to the echo grain id from n and returns the
// answering member's address.
func (n *node) ask(id string, timeout time.Duration) (string, error) {
	res, err := n.c.Request(id, echoKind, wrapperspb.String("hello"),
		cluster.WithTimeout(timeout), cluster.WithRetryCount(2))
	if err != nil {
		return "", err
	}
	s, ok := res.(*wrapperspb.StringValue)
	if !ok {
		return "", os.ErrInvalid
	}
	return s.GetValue(), nil
}

// ioBarrier writes and reads one byte through a pipe: under the race
// detector it orders this goroutine's past before later socket reads of
// other goroutines, and their earlier socket writes before what follows
// (testkit.StartRemote uses the same trick).
func ioBarrier(tb testing.TB) {
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	defer func() {
		// A failed close of the pipe does not undo the barrier: note it only.
		if err := errors.Join(w.Close(), r.Close()); err != nil {
			tb.Log("ioBarrier: closing the pipe:", err)
		}
	}()
	if _, err := w.Write([]byte{0}); err != nil {
		panic(err)
	}
	if _, err := r.Read(make([]byte, 1)); err != nil {
		panic(err)
	}
}

// warm makes client ask grains until every member in members has answered
// once, so that client and members hold remote connections both ways.
// Later requests then open no new connection: protoactor's endpoint reader
// checks the block list of every new connection without a lock while the
// member list writes it when a member leaves (a data race inside
// protoactor that -race reports).
func warm(t testing.TB, client *node, members ...*node) {
	t.Helper()
	want := make(map[string]bool, len(members))
	for _, m := range members {
		want[m.sys.Address()] = true
	}
	for i := 0; i < 50*len(members) && len(want) > 0; i++ {
		addr, err := client.ask(fmt.Sprintf("warm-%d", i), testkit.Timeout())
		require.NoError(t, err, "warm-up request %d", i)
		delete(want, addr)
	}
	require.Empty(t, want, "no grain landed on these members")
}
