// Package alias gives each cluster member the id protoactor's member list
// knows it by. Both membership providers (seed nodes and etcd) use it.
//
// protoactor blocks the id of every member that leaves its topology, for
// the life of the process (cluster.MemberList.UpdateClusterTopology), so a
// member taken down during a partition could never be routed to again,
// although the same process answers once the partition heals. Each time a
// member joins this node's view again, it is handed to protoactor under a
// fresh alias, "<id>.r<n>" for the n-th return; the first time under its
// own id. The alias is local to this node: identities are placed by member
// address (rendezvous hashing), remoting addresses processes by host:port,
// and gossip, the one protoactor feature that would compare ids across
// nodes, is not used. This node's own id never changes.
package alias

import "fmt"

// Aliases maps member ids to the ids pushed to protoactor. The zero value
// is not usable: make one with [New]. It is not safe for concurrent use.
type Aliases struct {
	self    string
	current map[string]string // member id -> its alias now
	returns map[string]int    // member id -> how often it came back
	pushed  map[string]bool   // member ids in the last member list pushed
}

// New returns the aliases of a node whose own member id is self.
func New(self string) *Aliases {
	return &Aliases{
		self:    self,
		current: make(map[string]string),
		returns: make(map[string]int),
		pushed:  make(map[string]bool),
	}
}

// Known reports whether id was handed to protoactor before.
func (a *Aliases) Known(id string) bool {
	_, ok := a.current[id]
	return ok
}

// Next returns the ids to push for the member ids, in order, and records
// them as the member list pushed: a member absent from the last list was
// blocked by protoactor when it went, so it comes back under a new alias.
func (a *Aliases) Next(ids []string) []string {
	out := make([]string, len(ids))
	pushed := make(map[string]bool, len(ids))
	for i, id := range ids {
		pushed[id] = true
		alias, ok := a.current[id]
		switch {
		case id == a.self:
			alias = id
		case !ok:
			alias = id
		case !a.pushed[id]:
			a.returns[id]++
			alias = fmt.Sprintf("%s.r%d", id, a.returns[id])
		}
		a.current[id] = alias
		out[i] = alias
	}
	a.pushed = pushed
	return out
}

// Forget treats id as absent from the last list pushed, so that the next
// [Aliases.Next] hands it out under a fresh alias: protoactor refused the
// one it has (an id blocked by it, e.g. propagated by gossip).
func (a *Aliases) Forget(id string) {
	if id != a.self {
		delete(a.pushed, id)
	}
}
