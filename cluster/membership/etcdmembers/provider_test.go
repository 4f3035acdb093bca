package etcdmembers

import (
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/membership"
	"github.com/foreman-actors/foreman/cluster/membership/etcdmembers/etcdtest"
)

// recorder is a sink that keeps the last member list pushed.
type recorder struct {
	mu     sync.Mutex
	last   []string
	pushes int
}

func (r *recorder) push(ns []membership.Node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last, r.pushes = ids(ns), r.pushes+1
}

func (r *recorder) members() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.last)
}

type testNode struct {
	*Provider
	rec *recorder
}

// startNode starts a provider for a node id on port, registered with srv.
func startNode(t *testing.T, srv *etcdtest.Server, id string, port int, member bool, opts ...Option) testNode {
	t.Helper()
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", id)
	p, err := New([]string{srv.Endpoint()}, append([]Option{WithTTL(time.Second), WithLogger(log)}, opts...)...)
	require.NoError(t, err)
	rec := &recorder{}
	require.NoError(t, p.start(node(id, port), member, "c", rec, nil, log))
	t.Cleanup(func() { _ = p.Shutdown(false) })
	return testNode{p, rec}
}

// eventually waits for cond, failing t after testkit.Timeout.
func eventually(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > testkit.Timeout() {
			t.Fatalf("%s: not within %v", what, testkit.Timeout())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

func hasMembers(n testNode, want ...string) func() bool {
	return func() bool { return slices.Equal(n.rec.members(), want) }
}

func TestJoinAndGracefulLeave(t *testing.T) {
	srv := etcdtest.Start(t)
	// A lease of 3 s: a leave seen well within it came from the revoke.
	a := startNode(t, srv, "a", 2551, true, WithTTL(3*time.Second))
	require.Equal(t, []string{"a"}, a.rec.members(), "a lone member sees itself when it starts")
	b := startNode(t, srv, "b", 2552, true, WithTTL(3*time.Second))
	require.Equal(t, []string{"a", "b"}, b.rec.members(), "a new member reads the others before it starts")
	f := startNode(t, srv, "f", 3000, false)
	require.Equal(t, []string{"a", "b"}, f.rec.members(), "a client sees the members")
	eventually(t, "a sees b", hasMembers(a, "a", "b"))
	eventually(t, "a lists the client", func() bool { return len(a.Clients()) == 1 && a.Clients()[0].ID == "f" })
	me, member := f.Self()
	require.Equal(t, "f", me.ID)
	require.False(t, member)
	require.Equal(t, 3*time.Second, a.DropAfter(), "the lease granted")

	require.NoError(t, b.Shutdown(true))
	took := eventually(t, "a drops b after its leave", hasMembers(a, "a"))
	require.Less(t, took, 1500*time.Millisecond, "a leave is seen at once, not when the 3 s lease expires")
	require.NoError(t, b.Shutdown(true), "a second Shutdown is a no-op")
	require.False(t, a.CutOff())
}

func TestCrashDroppedWhenTheLeaseExpires(t *testing.T) {
	srv := etcdtest.Start(t)
	a := startNode(t, srv, "a", 2551, true)
	b := startNode(t, srv, "b", 2552, true)
	eventually(t, "a sees b", hasMembers(a, "a", "b"))
	require.NoError(t, b.Shutdown(false)) // no revoke: as if it crashed
	time.Sleep(200 * time.Millisecond)
	require.Equal(t, []string{"a", "b"}, a.rec.members(), "a crashed member stays for its lease")
	eventually(t, "a drops b when its lease expires", hasMembers(a, "a"))
}

func TestRestartOnTheSameAddressReplacesTheOldRegistration(t *testing.T) {
	srv := etcdtest.Start(t)
	a := startNode(t, srv, "a", 2551, true, WithTTL(3*time.Second))
	b := startNode(t, srv, "b", 2552, true, WithTTL(3*time.Second))
	eventually(t, "a sees b", hasMembers(a, "a", "b"))
	require.NoError(t, b.Shutdown(false)) // b crashes; its key stays for 3 s
	start := time.Now()
	b2 := startNode(t, srv, "b2", 2552, true, WithTTL(3*time.Second))
	require.Equal(t, []string{"a", "b2"}, b2.rec.members(), "the new process does not see its predecessor")
	eventually(t, "a swaps b for b2", hasMembers(a, "a", "b2"))
	require.Less(t, time.Since(start), 2*time.Second, "swapped at once, not when b's lease expired")
}

func TestEtcdOutage(t *testing.T) {
	for _, wipe := range []bool{false, true} {
		name := "etcd restarted with its data"
		if wipe {
			name = "etcd restarted without its data"
		}
		t.Run(name, func(t *testing.T) {
			srv := etcdtest.Start(t)
			a := startNode(t, srv, "a", 2551, true)
			b := startNode(t, srv, "b", 2552, true)
			f := startNode(t, srv, "f", 3000, false)
			eventually(t, "a sees b", hasMembers(a, "a", "b"))
			require.False(t, a.CutOff())

			if wipe {
				srv.Wipe()
			} else {
				srv.Kill()
			}
			eventually(t, "a knows it is cut off", a.CutOff)
			eventually(t, "b knows it is cut off", b.CutOff)
			time.Sleep(2 * time.Second) // well past every lease
			require.Equal(t, []string{"a", "b"}, a.rec.members(), "the view stays as it was while etcd is away")
			srv.Restart()

			eventually(t, "a registered again", func() bool { return !a.CutOff() })
			eventually(t, "b registered again", func() bool { return !b.CutOff() })
			eventually(t, "a sees b again", hasMembers(a, "a", "b"))
			eventually(t, "b sees a again", hasMembers(b, "a", "b"))
			eventually(t, "the client is listed again", func() bool { return len(a.Clients()) == 1 })
			// f learns of a and b through its own watch, in its own time.
			eventually(t, "the client sees a and b again", hasMembers(f, "a", "b"))

			// The watches work again: a leave is seen.
			require.NoError(t, b.Shutdown(true))
			eventually(t, "a drops b after its leave", hasMembers(a, "a"))
		})
	}
}

func TestStartFailsWithoutEtcd(t *testing.T) {
	etcdtest.Binary(t) // same skip rules as the other tests
	port := etcdtest.FreePort(t)
	p, err := New([]string{"127.0.0.1:" + strconv.Itoa(port)}, WithStartTimeout(time.Second))
	require.NoError(t, err)
	start := time.Now()
	err = p.start(node("a", 2551), true, "c", &recorder{}, nil, slog.New(slog.DiscardHandler))
	require.ErrorIs(t, err, ErrStart)
	require.ErrorContains(t, err, "etcd://127.0.0.1:"+strconv.Itoa(port))
	require.ErrorContains(t, err, "within 1s")
	require.Less(t, time.Since(start), 3*time.Second)
	require.NoError(t, p.Shutdown(true), "Shutdown after a failed start is a no-op")
	require.ErrorIs(t, p.start(node("a", 2551), true, "c", &recorder{}, nil, slog.New(slog.DiscardHandler)), ErrStart, "started once only")
}
