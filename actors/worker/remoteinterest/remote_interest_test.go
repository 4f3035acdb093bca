package remoteinterest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/waiter"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// Issue 34 item 3, over real protoactor remotes in one process: the callers'
// Interests live on one actor system (the frontend's node), the master and
// a worker with one slot on another (the worker's node). These tests run
// in real time (remote connections), with generous bounds.

// remoteRig is the worker's node: a master on a memory journal, a client,
// and a worker started on demand; callers is the frontend's node.
type remoteRig struct {
	callers *actor.ActorSystem
	sys     *actor.ActorSystem
	master  *actor.PID
	client  *frontend.Client
	reg     *worker.Registry
}

func newRemoteRig(t *testing.T, callers *actor.ActorSystem) *remoteRig {
	t.Helper()
	sys := testkit.NewSystem(t)
	testkit.StartRemote(t, sys)
	mem := journal.NewMemory()
	t.Cleanup(func() { _ = mem.Close() })
	props, err := master.Props(mem, master.WithLeaseTTL(0))
	require.NoError(t, err)
	r := &remoteRig{callers: callers, sys: sys, master: sys.Root.Spawn(props), reg: worker.NewRegistry()}
	r.client, err = frontend.NewClient(sys, route.Fixed(r.master), frontend.WithAskTimeout(testkit.Timeout()))
	require.NoError(t, err)
	require.NoError(t, r.reg.Register("echo", func(_ context.Context, p []byte) ([]byte, error) { return p, nil }))
	return r
}

// startWorker starts the worker: one slot, nothing read ahead.
func (r *remoteRig) startWorker(t *testing.T, opts ...worker.Option) {
	t.Helper()
	props, err := worker.Props(route.Fixed(r.master), r.reg, append([]worker.Option{worker.WithWorkerID("remote"), worker.WithWindow(1),
		worker.WithPrefetch(0), worker.WithRegisterInterval(100 * time.Millisecond)}, opts...)...)
	require.NoError(t, err)
	pid := r.sys.Root.Spawn(props)
	t.Cleanup(func() { _ = r.sys.Root.StopFuture(pid).Wait() })
}

// ended reads the result feed until n works have ended, and returns their
// statuses by id; it fails the test when within passes first.
func (r *remoteRig) ended(t *testing.T, n int, within time.Duration) map[string]messages.WorkStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	got := make(map[string]messages.WorkStatus, n)
	cur := frontend.Cursor{}
	for len(got) < n {
		if ctx.Err() != nil {
			t.Fatalf("only %d of %d works ended within %v: %v", len(got), n, within, got)
		}
		page, err := r.client.ReadFeed(ctx, cur, 1000, 200*time.Millisecond)
		if err != nil {
			continue // the deadline, checked above
		}
		for _, e := range page.Entries {
			got[e.GetWorkId()] = e.GetStatus()
		}
		cur = page.Next
	}
	return got
}

// TestRemoteWorkerSkipsAbandonedJobsAtOnce: 100 jobs whose callers left
// long ago (their Interests have stopped), handed one at a time to a worker
// on another node, are all skipped as cancelled within a second or so: the
// callers' node answers each question with a dead letter, which the worker
// takes as "not interested" at once. Before the fix each cost the interest
// timeout (5 s). The time is logged for BENCHMARKS.md.
func TestRemoteWorkerSkipsAbandonedJobsAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("remote test: skipped with -short")
	}
	callers := testkit.NewSystem(t)
	testkit.StartRemote(t, callers)
	r := newRemoteRig(t, callers)

	const n = 100
	works := make([]*messages.Work, n)
	for i := range works {
		in := waiter.NewInterest(t.Context(), callers)
		pid := in.PID()
		in.Close() // the caller left, and its Interest's linger is over
		require.Eventually(t, func() bool { _, alive := callers.ProcessRegistry.Get(pid); return !alive },
			testkit.Timeout(), time.Millisecond)
		works[i] = &messages.Work{WorkId: fmt.Sprint("abandoned-", i), JobType: "echo", Waiter: pids.Wire(pid)}
	}
	for i, err := range r.client.SubmitMany(t.Context(), works) {
		require.NoError(t, err, works[i].GetWorkId())
	}

	start := time.Now()
	r.startWorker(t)
	got := r.ended(t, n, 30*time.Second) // before the fix: 100 x 5 s
	took := time.Since(start)
	for id, st := range got {
		require.Equal(t, messages.WorkStatus_WORK_STATUS_CANCELLED.String(), st.String(), id)
	}
	t.Logf("%d abandoned jobs skipped by one remote worker slot in %v", n, took.Round(time.Millisecond))
	require.Less(t, took, 10*time.Second, "the issue's target is 1 s in total; 10 s is a bound for a loaded machine")
}

// TestRemoteWorkerRunsLiveCallersJobsThroughABlip: the connection to the
// callers' node is cut for a second while their jobs wait and one runs;
// every job still runs to DONE. A request this node's endpoint could not
// deliver (a connection being re-made) says nothing about the caller, unlike
// a dead letter from the caller's node; and the worker is told a node is
// gone by the rule cluster/node applies to frontends (connection lost and
// not re-made for 2 s, lostFor), which a running job's silence would make
// true after a blip unless the worker asks again before believing it.
func TestRemoteWorkerRunsLiveCallersJobsThroughABlip(t *testing.T) {
	if testing.Short() {
		t.Skip("remote test: skipped with -short")
	}
	// The callers' node is reached only through a proxy that can cut it off.
	proxy := newCutProxy(t)
	callers := testkit.NewSystem(t)
	rem := remote.NewRemote(callers, remote.Configure("127.0.0.1", proxy.backendPort, remote.WithAdvertisedHost(proxy.addr())))
	var serving net.Conn
	testkit.StartRemoteWith(t, func() {
		rem.Start()
		// As testkit.StartRemote does: wait until the server has logged its
		// start-up and serves (its HTTP/2 settings frame), so that no gRPC
		// logging races the next remote's start.
		var err error
		serving, err = net.DialTimeout("tcp", fmt.Sprint("127.0.0.1:", proxy.backendPort), testkit.Timeout())
		require.NoError(t, err)
		_ = serving.SetReadDeadline(time.Now().Add(testkit.Timeout()))
		_, err = io.ReadAtLeast(serving, make([]byte, 9), 1)
		require.NoError(t, err)
	})
	t.Cleanup(func() {
		_ = serving.Close()
		rem.Shutdown(false)
		for _, id := range []string{"EndpointSupervisor", "activator"} {
			_ = callers.Root.StopFuture(actor.NewPID(callers.Address(), id)).Wait()
		}
	})
	r := newRemoteRig(t, callers)
	hold := make(chan struct{})
	started := make(chan string, 16)
	require.NoError(t, r.reg.Register("hold", func(ctx context.Context, p []byte) ([]byte, error) {
		started <- string(p)
		select {
		case <-hold:
			return p, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}))
	// Two slots: one job runs through the cut, the others are asked
	// about during it.
	r.startWorker(t, worker.WithWindow(2), worker.WithWaiterGone(lostFor(t, r.sys, 2*time.Second)))

	submit := func(id, jobType string) {
		in := waiter.NewInterest(t.Context(), callers) // a live caller
		t.Cleanup(in.Close)
		require.NoError(t, r.client.Submit(t.Context(), &messages.Work{WorkId: id, JobType: jobType, Payload: []byte(id), Waiter: pids.Wire(in.PID())}))
	}
	submit("running", "hold")
	select {
	case <-started: // asked over the proxy and told yes
	case <-time.After(testkit.Timeout()):
		t.Fatal("the first job never started")
	}
	// Cut, and wait until this node has seen its connection to the
	// callers' node end.
	lost := make(chan struct{}, 1)
	sub := r.sys.EventStream.Subscribe(func(evt any) {
		if e, ok := evt.(*remote.EndpointTerminatedEvent); ok && e.Address == proxy.addr() {
			select {
			case lost <- struct{}{}:
			default:
			}
		}
	})
	defer r.sys.EventStream.Unsubscribe(sub)
	proxy.cut(time.Second)
	select {
	case <-lost:
	case <-time.After(testkit.Timeout()):
		t.Fatal("the cut connection was not reported lost")
	}
	// Callers whose jobs are asked about while the connection is cut.
	const waiting = 4
	for i := range waiting {
		submit(fmt.Sprint("waiting-", i), "echo")
	}
	// The running job goes on past the time the connection counts as lost
	// (2 s) and the worker's confirmation (3 s) before it ends.
	time.Sleep(6 * time.Second)
	close(hold)
	got := r.ended(t, 1+waiting, 30*time.Second)
	for id, st := range got {
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE.String(), st.String(), "%s: a live caller's job must run", id)
	}
	require.Positive(t, proxy.refused(), "the cut refused connections")
}

// cutProxy forwards TCP connections to a backend port; cut closes them
// and refuses new ones for a while.
type cutProxy struct {
	ln          net.Listener
	backendPort int

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	until    time.Time // refuses connections until then
	refusals int
	wg       sync.WaitGroup
}

func newCutProxy(t *testing.T) *cutProxy {
	t.Helper()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	backendPort := free.Addr().(*net.TCPAddr).Port
	require.NoError(t, free.Close())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{ln: ln, backendPort: backendPort, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.closeAll()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if time.Now().Before(p.until) {
			p.refusals++
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.mu.Unlock()
		b, err := net.Dial("tcp", fmt.Sprint("127.0.0.1:", p.backendPort))
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[b] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, b)
		go p.pipe(b, c)
	}
}

func (p *cutProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	if _, err := io.Copy(dst, src); err != nil && !errors.Is(err, net.ErrClosed) {
		_ = err // a cut connection: closed below
	}
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// cut closes every forwarded connection and refuses new ones for d.
func (p *cutProxy) cut(d time.Duration) {
	p.mu.Lock()
	p.until = time.Now().Add(d)
	p.mu.Unlock()
	p.closeAll()
}

func (p *cutProxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

func (p *cutProxy) refused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refusals
}

// lostFor is the rule cluster/node's peers apply to a frontend's address
// (node.DefaultPeerLostAfter): gone once a remote connection to it was
// reported lost and not re-made for d.
func lostFor(t *testing.T, sys *actor.ActorSystem, d time.Duration) func(addr string) bool {
	var (
		mu   sync.Mutex
		lost = map[string]time.Time{}
	)
	sub := sys.EventStream.Subscribe(func(evt any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := evt.(type) {
		case *remote.EndpointTerminatedEvent:
			if _, ok := lost[e.Address]; !ok {
				lost[e.Address] = time.Now()
			}
		case *remote.EndpointConnectedEvent:
			delete(lost, e.Address)
		}
	})
	t.Cleanup(func() { sys.EventStream.Unsubscribe(sub) })
	return func(addr string) bool {
		mu.Lock()
		defer mu.Unlock()
		since, ok := lost[addr]
		return ok && time.Since(since) >= d
	}
}
