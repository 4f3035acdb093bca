package membership

import "fmt"

// aliases gives each member the id protoactor's member list knows it by.
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
type aliases struct {
	self    string
	current map[string]string // member id -> its alias now
	returns map[string]int    // member id -> how often it came back
	pushed  map[string]bool   // member ids in the last member list pushed
}

func newAliases(self string) aliases {
	return aliases{
		self:    self,
		current: make(map[string]string),
		returns: make(map[string]int),
		pushed:  make(map[string]bool),
	}
}

// known reports whether id was handed to protoactor before.
func (a *aliases) known(id string) bool {
	_, ok := a.current[id]
	return ok
}

// next returns the ids to push for nodes, in order, and records them as
// the member list pushed: a member absent from the last list was blocked
// by protoactor when it went, so it comes back under a new alias.
func (a *aliases) next(nodes []Node) []string {
	out := make([]string, len(nodes))
	pushed := make(map[string]bool, len(nodes))
	for i, n := range nodes {
		pushed[n.ID] = true
		alias, ok := a.current[n.ID]
		switch {
		case n.ID == a.self:
			alias = n.ID
		case !ok:
			alias = n.ID
		case !a.pushed[n.ID]:
			a.returns[n.ID]++
			alias = fmt.Sprintf("%s.r%d", n.ID, a.returns[n.ID])
		}
		a.current[n.ID] = alias
		out[i] = alias
	}
	a.pushed = pushed
	return out
}
