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
	c        *cluster.Cluster
	kind     string // the master's cluster kind and identity (shard k's with several shards)
	identity string
	ttl      time.Duration
	sub      *eventstream.Subscription
	wg       sync.WaitGroup // the lookup goroutines in flight

	mu       sync.Mutex                         // guards the fields below
	alive    map[string]string                  // member address -> member id, of the last topology; nil before the first
	pid      *actor.PID                         // cached master PID; nil when unknown
	at       time.Time                          // when pid was looked up
	inflight *lookupCall                        // the newest lookup running; nil when none runs
	gen      uint64                             // topology generation; a lookup started in an older one is dropped
	closed   bool                               // Close was called: no new lookups
	watches  map[string]map[*goneWatch]struct{} // AfterGone callbacks by member address
}

// Lookup timing. protoactor's lookup is an activation request that waits
// up to 5 s for an answer, and the answer can be lost on a connection
// that a killed process broke; when the owner comes back on the same
// address (etcd swaps the old member for the new one in one topology
// change), nothing else would wake the callers waiting on it.
const (
	// lookupStuckAfter is how long a lookup may run before a caller starts
	// a fresh one beside it.
	lookupStuckAfter = time.Second
	// resolveRecheck is how often a caller waiting on a lookup checks
	// again (the cache, a stuck lookup).
	resolveRecheck = 750 * time.Millisecond
)

// lookupCall is one lookup of the master; pid is set before done closes.
type lookupCall struct {
	done  chan struct{}
	start time.Time
	pid   *actor.PID
}

// goneWatch is one AfterGone callback on the member that had id at its
// address when the callback was armed ("" before any topology).
type goneWatch struct {
	f  func()
	id string
}

// NewMasterLocator returns a locator over c. Close it when the node stops.
func NewMasterLocator(c *cluster.Cluster, ttl time.Duration) *MasterLocator {
	return NewShardLocator(c, ttl, 0, 1)
}

// NewShardLocator returns a locator of shard k's master of n (kind
// ShardKind, identity route.ShardName: with n=1 it is NewMasterLocator's).
// Close it when the node stops.
func NewShardLocator(c *cluster.Cluster, ttl time.Duration, k, n int) *MasterLocator {
	l := &MasterLocator{c: c, ttl: ttl, kind: ShardKind(k, n), identity: route.ShardName(MasterIdentity, k, n)}
	l.sub = c.ActorSystem.EventStream.Subscribe(func(evt any) {
		t, ok := evt.(*cluster.ClusterTopology)
		if !ok {
			return
		}
		alive := make(map[string]string, len(t.Members))
		for _, m := range t.Members {
			alive[m.Address()] = m.Id
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
			// Gone: the address left, or another process holds it now (a
			// restart on the same address: the actors were lost with the
			// old one).
			id, ok := alive[addr]
			for w := range ws {
				if !ok || (w.id != "" && w.id != id) {
					gone = append(gone, w)
					delete(ws, w)
				}
			}
			if len(ws) == 0 {
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
// or another member takes its address (a process restarted there), at
// once, on another goroutine, when it is not a member now; it is a
// route.AfterGoneFunc. The frontend uses it to send a request in flight to
// a master whose node was just dropped again at once, instead of waiting
// for the ask timeout. f runs on protoactor's event stream: it must not
// block.
func (l *MasterLocator) AfterGone(pid *actor.PID, f func()) (stop func() bool) {
	addr := pid.GetAddress()
	w := &goneWatch{f: f}
	l.mu.Lock()
	w.id = l.alive[addr]
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
// node left are sent again at once; its Forget; its cache, read without
// blocking), for worker.Props and frontend.NewClient.
func (l *MasterLocator) Route() route.Master {
	return route.Resolver(l.Resolve, route.WithAfterGone(l.AfterGone), route.WithForget(l.Forget), route.WithCached(l.cached))
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
// ends first; a lookup running for over lookupStuckAfter gets a fresh one
// beside it.
func (l *MasterLocator) Resolve(ctx context.Context) (*actor.PID, error) {
	if pid := l.cached(); pid != nil { // every ask resolves: no timer for a hit
		return pid, nil
	}
	recheck := time.NewTimer(resolveRecheck)
	defer recheck.Stop()
	for {
		l.mu.Lock()
		if pid := l.cachedLocked(); pid != nil {
			l.mu.Unlock()
			return pid, nil
		}
		if l.closed {
			l.mu.Unlock()
			return nil, fmt.Errorf("node: %w: the master locator is closed", route.ErrNoMaster)
		}
		call := l.inflight
		if call == nil || time.Since(call.start) > lookupStuckAfter {
			call = &lookupCall{done: make(chan struct{}), start: time.Now()}
			l.inflight = call
			l.wg.Add(1)
			go l.lookup(call, l.gen)
		}
		l.mu.Unlock()
		select {
		case <-call.done:
			if call.pid == nil {
				return nil, fmt.Errorf("node: %w: the cluster lookup of %s/%s found no live activation", route.ErrNoMaster, l.kind, l.identity)
			}
			return call.pid, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-recheck.C:
			recheck.Reset(resolveRecheck)
		}
	}
}

// cached returns the cached master PID while it is fresh and on a live
// member, else nil.
func (l *MasterLocator) cached() *actor.PID {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cachedLocked()
}

func (l *MasterLocator) cachedLocked() *actor.PID {
	if l.pid != nil && time.Since(l.at) < l.ttl && l.isAliveLocked(l.pid) {
		return l.pid
	}
	return nil
}

func (l *MasterLocator) lookup(call *lookupCall, gen uint64) {
	defer l.wg.Done()
	pid := l.c.Get(l.identity, l.kind)
	l.mu.Lock()
	if pid != nil && !l.isAliveLocked(pid) {
		// protoactor's PID cache may still hold the activation on a member
		// that has left: never hand that out.
		pid = nil
	}
	// A lookup from an older topology is still usable when its member is
	// alive, but only a current one fills the cache.
	call.pid = pid
	if l.inflight == call {
		l.inflight = nil
	}
	if gen == l.gen && pid != nil {
		l.pid, l.at = pid, time.Now()
	}
	l.mu.Unlock()
	close(call.done)
}

// isAliveLocked reports whether pid is on a member of the last topology
// (true before any topology is known).
func (l *MasterLocator) isAliveLocked(pid *actor.PID) bool {
	if l.alive == nil {
		return true
	}
	_, ok := l.alive[pid.GetAddress()]
	return ok
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
