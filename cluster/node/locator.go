package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/eventstream"

	"github.com/foreman-actors/foreman/actors/route"
)

// MasterLocator finds the singleton master's current PID as the cluster's
// disthash identity lookup does (it asks the placement actor of the owner
// in the last topology, which activates the master), but so that a lookup
// ends when the locator closes, and caches it. The cache is dropped on
// every membership change (the master may have moved) and after a TTL
// (protoactor's PID caches can go stale). Concurrent callers share one
// lookup.
type MasterLocator struct {
	c        *cluster.Cluster
	kind     string // the master's cluster kind and identity (shard k's with several shards)
	identity string
	ttl      time.Duration
	sub      *eventstream.Subscription
	wg       sync.WaitGroup // the lookup goroutines in flight
	stop     chan struct{}  // closed by Close: lookups in flight give up

	mu       sync.Mutex                         // guards the fields below
	alive    map[string]string                  // member address -> member id, of the last topology; nil before the first
	members  []*cluster.Member                  // the last topology's members (where lookups go); nil before the first
	pid      *actor.PID                         // cached master PID; nil when unknown
	at       time.Time                          // when pid was looked up
	inflight *lookupCall                        // the newest lookup running; nil when none runs
	gen      uint64                             // topology generation; a lookup started in an older one is dropped
	closed   bool                               // Close was called: no new lookups
	watches  map[string]map[*goneWatch]struct{} // AfterGone callbacks by member address
}

// Lookup timing. A lookup is an activation request that waits up to 5 s
// for an answer (as protoactor's does), and the answer can be lost on a
// connection that a killed process broke; when the owner comes back on the
// same address (etcd swaps the old member for the new one in one topology
// change), nothing else would wake the callers waiting on it.
const (
	// lookupTimeout bounds one lookup: protoactor's disthash lookup's.
	lookupTimeout = 5 * time.Second
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

// NewMasterLocator returns a locator over c. Make it before the cluster
// starts, so that it sees the first topology (until it has seen one, it
// looks up through Cluster.Get, which Close must wait for); close it when
// the node stops.
func NewMasterLocator(c *cluster.Cluster, ttl time.Duration) *MasterLocator {
	return NewShardLocator(c, ttl, 0, 1)
}

// NewShardLocator returns a locator of shard k's master of n (kind
// ShardKind, identity route.ShardName: with n=1 it is NewMasterLocator's).
// Make and close it as NewMasterLocator's.
func NewShardLocator(c *cluster.Cluster, ttl time.Duration, k, n int) *MasterLocator {
	l := &MasterLocator{c: c, ttl: ttl, kind: ShardKind(k, n), identity: route.ShardName(MasterIdentity, k, n), stop: make(chan struct{})}
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
		l.alive, l.members, l.pid = alive, t.Members, nil
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
		if err := ctx.Err(); err != nil {
			// A caller that has gone starts no lookup (a stopping node's
			// reader would leave one behind for Close to end).
			l.mu.Unlock()
			return nil, err
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
	pid := l.activate()
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

// activate asks the placement actor of the master's owner in the last
// topology for the master's PID, which activates the master there if
// needed: protoactor's disthash lookup (Cluster.Get), but one that gives up
// when the locator closes. Cluster.Get waits for its answer for 5 s
// whatever happens, so a lookup in flight to a member that had just died,
// or whose answer could no longer arrive because the node's remote had
// stopped, held the node's Stop for those 5 s (Close waits for lookups so
// that none outlives the node). Before the locator has seen a topology
// (one made after the cluster started) it falls back to Cluster.Get.
func (l *MasterLocator) activate() *actor.PID {
	l.mu.Lock()
	members, known := l.members, l.alive != nil
	l.mu.Unlock()
	if !known {
		return l.c.Get(l.identity, l.kind)
	}
	owner := RendezvousOwner(members, l.kind, l.identity)
	if owner == "" {
		return nil // no member hosts the master's kind
	}
	sys := l.c.ActorSystem
	reply := &lookupReply{ch: make(chan any, 1)}
	self, ok := sys.ProcessRegistry.Add(reply, "master-lookup$"+sys.ProcessRegistry.NextId())
	if !ok {
		return nil
	}
	defer sys.ProcessRegistry.Remove(self)
	sys.Root.RequestWithCustomSender(actor.NewPID(owner, disthash.PartitionActivatorActorName),
		&cluster.ActivationRequest{ClusterIdentity: cluster.NewClusterIdentity(l.identity, l.kind)}, self)
	timeout := time.NewTimer(lookupTimeout)
	defer timeout.Stop()
	select {
	case m := <-reply.ch:
		if r, ok := m.(*cluster.ActivationResponse); ok {
			return r.GetPid()
		}
		return nil // a dead letter: the owner's placement actor is gone
	case <-timeout.C:
		return nil
	case <-l.stop:
		return nil
	}
}

// lookupReply is a lookup's one-shot reply address in the process
// registry.
type lookupReply struct{ ch chan any }

func (r *lookupReply) SendUserMessage(_ *actor.PID, m any) {
	_, msg, _ := actor.UnwrapEnvelope(m)
	select {
	case r.ch <- msg:
	default: // only the first answer counts
	}
}

func (r *lookupReply) SendSystemMessage(*actor.PID, any) {}

func (r *lookupReply) Stop(*actor.PID) {}

// isAliveLocked reports whether pid is on a member of the last topology
// (true before any topology is known).
func (l *MasterLocator) isAliveLocked(pid *actor.PID) bool {
	if l.alive == nil {
		return true
	}
	_, ok := l.alive[pid.GetAddress()]
	return ok
}

// Close stops following membership changes, ends the lookups in flight
// (their callers get no master) and waits for their goroutines.
func (l *MasterLocator) Close() {
	l.mu.Lock()
	first := !l.closed
	l.closed = true
	l.mu.Unlock()
	if first {
		l.c.ActorSystem.EventStream.Unsubscribe(l.sub)
		close(l.stop)
	}
	l.wg.Wait()
}
