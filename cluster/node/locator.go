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
// PID caches can go stale, see PROTOACTOR.md section 3.1).
type MasterLocator struct {
	c   *cluster.Cluster
	ttl time.Duration
	sub *eventstream.Subscription

	mu  sync.Mutex // guards pid and at
	pid *actor.PID
	at  time.Time
}

// NewMasterLocator returns a locator over c.
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
// needed. It honours ctx (protoactor's lookup itself may take up to 5 s).
func (l *MasterLocator) Resolve(ctx context.Context) (*actor.PID, error) {
	l.mu.Lock()
	if l.pid != nil && time.Since(l.at) < l.ttl {
		pid := l.pid
		l.mu.Unlock()
		return pid, nil
	}
	l.mu.Unlock()
	ch := make(chan *actor.PID, 1)
	go func() { ch <- l.c.Get(MasterIdentity, MasterKind) }()
	select {
	case pid := <-ch:
		if pid == nil {
			return nil, ErrNoMaster
		}
		l.mu.Lock()
		l.pid, l.at = pid, time.Now()
		l.mu.Unlock()
		return pid, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
