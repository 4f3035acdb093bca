package node

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/eventstream"
)

// ErrNoMaster means the cluster could not place or reach the master.
var ErrNoMaster = errors.New("node: no master reachable")

// MasterLocator finds the singleton master's current PID through the
// cluster's identity lookup and caches it. The cache is dropped on every
// membership change (the master may have moved) and after a TTL (protoactor's
// PID caches can go stale). Concurrent callers share one lookup.
type MasterLocator struct {
	c   *cluster.Cluster
	ttl time.Duration
	sub *eventstream.Subscription
	wg  sync.WaitGroup // the lookup goroutine in flight

	mu       sync.Mutex    // guards the fields below
	pid      *actor.PID    // cached master PID; nil when unknown
	at       time.Time     // when pid was looked up
	inflight chan struct{} // closed when the running lookup ends; nil when none runs
	last     *actor.PID    // result of the last lookup
}

// NewMasterLocator returns a locator over c. Close it when the node stops.
func NewMasterLocator(c *cluster.Cluster, ttl time.Duration) *MasterLocator {
	l := &MasterLocator{c: c, ttl: ttl}
	l.sub = c.ActorSystem.EventStream.Subscribe(func(evt any) {
		if _, ok := evt.(*cluster.ClusterTopology); ok {
			l.Invalidate()
		}
	})
	return l
}

// Invalidate drops the cached PID.
func (l *MasterLocator) Invalidate() {
	l.mu.Lock()
	l.pid = nil
	l.mu.Unlock()
}

// Resolve returns the master's PID, activating the master on its owner if
// needed. It honours ctx; protoactor's lookup itself may take up to 5 s, and
// goes on in the background for the next caller when ctx ends first.
func (l *MasterLocator) Resolve(ctx context.Context) (*actor.PID, error) {
	l.mu.Lock()
	if l.pid != nil && time.Since(l.at) < l.ttl {
		pid := l.pid
		l.mu.Unlock()
		return pid, nil
	}
	done := l.inflight
	if done == nil {
		done = make(chan struct{})
		l.inflight = done
		l.wg.Add(1)
		go l.lookup(done)
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
		return nil, ErrNoMaster
	}
	return pid, nil
}

func (l *MasterLocator) lookup(done chan struct{}) {
	defer l.wg.Done()
	pid := l.c.Get(MasterIdentity, MasterKind)
	l.mu.Lock()
	l.last, l.inflight = pid, nil
	if pid != nil {
		l.pid, l.at = pid, time.Now()
	}
	l.mu.Unlock()
	close(done)
}

// Close stops following membership changes and waits for a lookup in
// flight (protoactor bounds it to 5 s).
func (l *MasterLocator) Close() {
	l.c.ActorSystem.EventStream.Unsubscribe(l.sub)
	l.wg.Wait()
}
