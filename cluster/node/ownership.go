package node

import (
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/eventstream"
)

// masterOwnership follows, from this node's cluster topology, whether this
// node is where the cluster places the master: the member that
// protoactor's rendezvous hashing picks for master/master among the
// members that host the kind, as the placement actor computes it.
//
// The master's lease guard asks it. protoactor activates the master on any
// member a lookup reaches and stops activations that are not the owner's
// only on the next topology change, so a lookup that left a node with an
// out-of-date view can start a stray master on a member that no longer
// owns it, after that member's last topology change: such a stray would
// take the lease and keep it, and the owner's master would wait for ever.
// With the guard, a master takes and keeps the lease only where its own
// node's view places it.
type masterOwnership struct {
	sys   *actor.ActorSystem
	self  func() string // this node's address (sys.Address; known once remoting started)
	sub   *eventstream.Subscription
	known atomic.Bool // a topology has been seen
	owns  atomic.Bool // this node owned the master in the last topology
}

func newMasterOwnership(sys *actor.ActorSystem, kind, identity string) *masterOwnership {
	o := &masterOwnership{sys: sys, self: sys.Address}
	o.sub = sys.EventStream.Subscribe(func(evt any) {
		t, ok := evt.(*cluster.ClusterTopology)
		if !ok {
			return
		}
		owner := RendezvousOwner(t.Members, kind, identity)
		o.owns.Store(owner != "" && owner == o.self())
		o.known.Store(true)
	})
	return o
}

// Owns reports whether this node owns the master in its latest topology
// (true before the first: nothing is known to contradict it).
func (o *masterOwnership) Owns() bool { return !o.known.Load() || o.owns.Load() }

// Close stops following the topology.
func (o *masterOwnership) Close() { o.sys.EventStream.Unsubscribe(o.sub) }

// RendezvousOwner returns the address of the member that protoactor's
// rendezvous hashing places kind/identity on among members (those that host
// kind), as the placement actor computes it; "" when none hosts kind. Lease
// guards of cluster singletons ask it with their node's latest topology, so
// that a stray activation on a member that does not own the identity never
// takes or keeps the lease.
func RendezvousOwner(members []*cluster.Member, kind, identity string) string {
	rdv := cluster.NewRendezvous()
	rdv.UpdateMembers(members)
	return rdv.GetByClusterIdentity(&cluster.ClusterIdentity{Kind: kind, Identity: identity})
}
