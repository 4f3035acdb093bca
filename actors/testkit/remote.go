package testkit

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
)

// remoteStartMu serialises StartRemote across the whole test process.
var remoteStartMu sync.Mutex

// StartRemote starts protoactor remote for sys on 127.0.0.1 with a free
// port, so actors of several systems (cluster members) in one test process
// can message each other; it shuts the remote down in t.Cleanup (before a
// system made by [NewSystem] earlier in the test). opts are passed to
// remote.Configure.
//
// Use it instead of calling remote.Start directly: every Remote.Start
// replaces gRPC's process-wide logger (grpclog.SetLoggerV2), which the race
// detector reports as a data race against the gRPC goroutines of remotes
// already running. StartRemote starts remotes one at a time and orders each
// start after the previous servers' start-up and before any later gRPC
// activity, which keeps `go test -race` clean. Start all members' remotes
// before they exchange traffic, and do not start remotes in tests that run
// in parallel with other tests whose remotes are busy.
func StartRemote(t TB, sys *actor.ActorSystem, opts ...remote.ConfigOption) *remote.Remote {
	t.Helper()
	remoteStartMu.Lock()
	defer remoteStartMu.Unlock()

	r := remote.NewRemote(sys, remote.Configure("127.0.0.1", 0, opts...))
	ioBarrier(t) // earlier gRPC log reads (followed by socket I/O) happen before Start
	r.Start()
	ioBarrier(t) // Start's logger write happens before any later socket read

	// Wait until the new server has logged its start-up and is serving:
	// connect and read its HTTP/2 settings frame. The connection stays open
	// (unanswered) until clean-up, so the server logs nothing meanwhile.
	conn, err := net.DialTimeout("tcp", sys.Address(), Timeout())
	if err != nil {
		r.Shutdown(false)
		t.Fatalf("testkit: StartRemote: cannot connect to the new remote at %s: %v", sys.Address(), err)
		return nil
	}
	_ = conn.SetReadDeadline(time.Now().Add(Timeout()))
	if _, err := io.ReadAtLeast(conn, make([]byte, 9), 1); err != nil {
		_ = conn.Close()
		r.Shutdown(false)
		t.Fatalf("testkit: StartRemote: the remote at %s did not answer within %v: %v", sys.Address(), Timeout(), err)
		return nil
	}
	t.Cleanup(func() {
		_ = conn.Close()
		stopRemote(sys, r)
	})
	return r
}

// ioBarrier writes and reads one byte through a pipe. Under the race
// detector every syscall write releases, and every successful syscall read
// acquires, one process-wide synchronisation object, so this orders what
// happened before other goroutines' socket writes before what follows, and
// what precedes the barrier before other goroutines' later socket reads.
func ioBarrier(t TB) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("testkit: StartRemote: cannot create a pipe: %v", err)
		return
	}
	defer func() {
		// A failed close of the pipe does not undo the barrier: note it only.
		if err := errors.Join(w.Close(), r.Close()); err != nil {
			t.Log("testkit: StartRemote: closing the barrier pipe:", err)
		}
	}()
	if _, err := w.Write([]byte{0}); err != nil {
		t.Fatalf("testkit: StartRemote: pipe write: %v", err)
	}
	if _, err := r.Read(make([]byte, 1)); err != nil {
		t.Fatalf("testkit: StartRemote: pipe read: %v", err)
	}
}

// stopRemote shuts r down without protoactor's graceful path. The graceful
// Remote.Shutdown(true) clears the endpoint manager's connection map while
// endpoint-writer goroutines (of this member, and of the members told to
// disconnect) may still read it: a data race inside protoactor that
// `go test -race` reports when members shut down one after another. Instead
// stop the gRPC server (closing every inbound stream), then the endpoint
// supervisor (whose writers close their outbound client connections) and
// the activator, which leaves no goroutine behind and never writes the map.
func stopRemote(sys *actor.ActorSystem, r *remote.Remote) {
	r.Shutdown(false)
	for _, id := range []string{"EndpointSupervisor", "activator"} {
		_ = sys.Root.StopFuture(actor.NewPID(sys.Address(), id)).Wait()
	}
}

// StartRemoteWith runs start, which starts one or more protoactor remotes
// (cluster.StartMember and StartClient start theirs inside), under the same
// process-wide serialisation and ordering as [StartRemote], so that several
// cluster members can be started in one `go test -race` process.
func StartRemoteWith(t TB, start func()) {
	t.Helper()
	remoteStartMu.Lock()
	defer remoteStartMu.Unlock()
	ioBarrier(t)
	start()
	ioBarrier(t)
}
