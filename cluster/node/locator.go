package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/eventstream"

	"github.com/foreman-actors/foreman/actors/route"
)

// MasterLocator finds the singleton master's current PID through the
// cluster's identity lookup and caches it. The cache is dropped on every
// membership change (the master may have moved) and after a TTL (protoactor's
// PID caches can go stale). Concurrent callers share one lookup.
type MasterLocator struct {
	c   *cluster.Cluster
	ttl time.Duration
	sub *eventstream.Subscription
	wg  sync.WaitGroup // the lookup goroutines in flight

	mu       sync.Mutex                         // guards the fields below
	alive    map[string]bool                    // member addresses of the last topology; nil before the first
	pid      *actor.PID                         // cached master PID; nil when unknown
	at       time.Time                          // when pid was looked up
	inflight chan struct{}                      // closed when the running lookup ends; nil when none runs
	last     *actor.PID                         // result of the last lookup
	gen      uint64                             // topology generation; a lookup started in an older one is dropped
	closed   bool                               // Close was called: no new lookups
	watches  map[string]map[*goneWatch]struct{} // AfterGone callbacks by member address
}

// goneWatch is one AfterGone callback.
type goneWatch struct{ f func() }

// NewMasterLocator returns a locator over c. Close it when the node stops.
func NewMasterLocator(c *cluster.Cluster, ttl time.Duration) *MasterLocator {
	l := &MasterLocator{c: c, ttl: ttl}
	l.sub = c.ActorSystem.EventStream.Subscribe(func(evt any) {
		t, ok := evt.(*cluster.ClusterTopology)
		if !ok {
			return
		}
		alive := make(map[string]bool, len(t.Members))
		for _, m := range t.Members {
			alive[m.Address()] = true
		}
		l.mu.Lock()
		l.alive, l.pid = alive, nil
		// A lookup in flight may be waiting on a member that just left
		// (protoactor's lookup waits 5 s for a dead owner): let the next
		// caller start a fresh one instead of queueing behind it.
		l.gen++
		l.inflight = nil
		var gone []*goneWatch
		for addr, ws := range l.watches {
			if !alive[addr] {
				for w := range ws {
					gone = append(gone, w)
				}
				delete(l.watches, addr)
			}
		}
		l.mu.Unlock()
		for _, w := range gone {
			w.f()
		}
	})
	return l
}

// AfterGone runs f once the member that pid lives on leaves the cluster
// (at once, on another goroutine, when it is not a member now); it is a
// route.AfterGoneFunc. The frontend uses it to send a request in flight to
// a master whose node was just dropped again at once, instead of waiting
// for the ask timeout. f runs on protoactor's event stream: it must not
// block.
func (l *MasterLocator) AfterGone(pid *actor.PID, f func()) (stop func() bool) {
	addr := pid.GetAddress()
	w := &goneWatch{f: f}
	l.mu.Lock()
	if !l.isAliveLocked(pid) {
		l.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	if l.watches == nil {
		l.watches = make(map[string]map[*goneWatch]struct{})
	}
	ws := l.watches[addr]
	if ws == nil {
		ws = make(map[*goneWatch]struct{})
		l.watches[addr] = ws
	}
	ws[w] = struct{}{}
	l.mu.Unlock()
	return func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		ws := l.watches[addr]
		if _, ok := ws[w]; !ok {
			return false
		}
		delete(ws, w)
		if len(ws) == 0 {
			delete(l.watches, addr)
		}
		return true
	}
}

// Route returns the route to the master through this locator (its
// Resolve; its AfterGone, so that requests in flight to a master whose
// node left are sent again at once; its Forget), for worker.Props and
// frontend.NewClient.
func (l *MasterLocator) Route() route.Master {
	return route.Resolver(l.Resolve, route.WithAfterGone(l.AfterGone), route.WithForget(l.Forget))
}

// Forget drops pid from the cache when it is the cached master: a caller's
// ask to it timed out or came back as a dead letter (a stray activation
// that stopped, a master that moved without a topology change here), so
// the next Resolve looks the master up again instead of handing out the
// same PID until the cache's TTL.
func (l *MasterLocator) Forget(pid *actor.PID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pid != nil && l.pid.Equal(pid) {
		l.pid = nil
	}
}

// Resolve returns the master's PID, activating the master on its owner if
// needed; it is a route.ResolveFunc. It honours ctx (returning ctx.Err());
// every other error wraps route.ErrNoMaster. protoactor's lookup itself may
// take up to 5 s, and goes on in the background for the next caller when ctx
// ends first.
func (l *MasterLocator) Resolve(ctx context.Context) (*actor.PID, error) {
	l.mu.Lock()
	if l.pid != nil && time.Since(l.at) < l.ttl && l.isAliveLocked(l.pid) {
		pid := l.pid
		l.mu.Unlock()
		return pid, nil
	}
	if l.closed {
		l.mu.Unlock()
		return nil, fmt.Errorf("node: %w: the master locator is closed", route.ErrNoMaster)
	}
	done := l.inflight
	if done == nil {
		done = make(chan struct{})
		l.inflight = done
		l.wg.Add(1)
		go l.lookup(done, l.gen)
	}
	l.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	l.mu.Lock()
	pid := l.last
	l.mu.Unlock()
	if pid == nil {
		return nil, fmt.Errorf("node: %w: the cluster lookup of %s/%s found no live activation", route.ErrNoMaster, MasterKind, MasterIdentity)
	}
	return pid, nil
}

func (l *MasterLocator) lookup(done chan struct{}, gen uint64) {
	defer l.wg.Done()
	pid := l.c.Get(MasterIdentity, MasterKind)
	l.mu.Lock()
	if pid != nil && !l.isAliveLocked(pid) {
		// protoactor's PID cache may still hold the activation on a member
		// that has left: never hand that out.
		pid = nil
	}
	if gen == l.gen {
		l.last, l.inflight = pid, nil
		if pid != nil {
			l.pid, l.at = pid, time.Now()
		}
	} else if pid != nil && l.isAliveLocked(pid) {
		l.last = pid // stale generation but still a live member: usable
	}
	l.mu.Unlock()
	close(done)
}

// isAliveLocked reports whether pid is on a member of the last topology
// (true before any topology is known).
func (l *MasterLocator) isAliveLocked(pid *actor.PID) bool {
	return l.alive == nil || l.alive[pid.GetAddress()]
}

// Close stops following membership changes and waits for a lookup in
// flight (protoactor bounds it to 5 s).
func (l *MasterLocator) Close() {
	l.c.ActorSystem.EventStream.Unsubscribe(l.sub)
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.wg.Wait()
}
