package node

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
)

// DefaultPeerLostAfter is how long a remote connection reported lost must
// stay lost before its node counts as gone for the interest protocol: long
// enough for protoactor to re-make a connection a blip broke.
const DefaultPeerLostAfter = 2 * time.Second

// peers tells workers whether the node of a caller's waiter has gone for
// good (worker.WithWaiterGone), so a job whose caller's node left is given
// up at once instead of after the interest timeout, and a running one is
// cancelled. Two signs count:
//
//   - a member that left the cluster topology is gone at once (until it is
//     in the topology again: a restart on the same address);
//   - frontends are cluster clients, in no topology: for them a remote
//     connection reported lost (EndpointTerminatedEvent) and not re-made
//     (EndpointConnectedEvent) within lostAfter counts as gone.
type peers struct {
	es        *eventstream.EventStream
	sub       *eventstream.Subscription
	lostAfter time.Duration
	now       func() time.Time

	mu   sync.Mutex
	left map[string]struct{}  // addresses of members that left
	lost map[string]time.Time // addresses whose connection was lost, since
}

func newPeers(sys *actor.ActorSystem, lostAfter time.Duration) *peers {
	p := &peers{es: sys.EventStream, lostAfter: lostAfter, now: time.Now,
		left: make(map[string]struct{}), lost: make(map[string]time.Time)}
	p.sub = sys.EventStream.Subscribe(p.on)
	return p
}

// on handles the event stream's news about members and connections.
func (p *peers) on(evt any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e := evt.(type) {
	case *cluster.ClusterTopology:
		for _, m := range e.GetLeft() {
			p.left[m.Address()] = struct{}{}
		}
		for _, m := range e.GetMembers() {
			delete(p.left, m.Address())
		}
	case *remote.EndpointTerminatedEvent:
		if _, ok := p.lost[e.Address]; !ok {
			p.lost[e.Address] = p.now()
		}
	case remote.EndpointTerminatedEvent:
		if _, ok := p.lost[e.Address]; !ok {
			p.lost[e.Address] = p.now()
		}
	case *remote.EndpointConnectedEvent:
		delete(p.lost, e.Address)
	case remote.EndpointConnectedEvent:
		delete(p.lost, e.Address)
	}
}

// Gone reports whether the node at addr has gone for good (see peers).
func (p *peers) Gone(addr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.left[addr]; ok {
		return true
	}
	since, ok := p.lost[addr]
	return ok && p.now().Sub(since) >= p.lostAfter
}

// close stops listening.
func (p *peers) close() {
	if p.sub != nil {
		p.es.Unsubscribe(p.sub)
		p.sub = nil
	}
}

// peerWatch returns the node's peers, made on first use.
func (n *ClusterNode) peerWatch() *peers {
	if n.peers == nil {
		n.peers = newPeers(n.sys, DefaultPeerLostAfter)
	}
	return n.peers
}
