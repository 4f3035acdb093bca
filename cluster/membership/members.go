package membership

import (
	"slices"
	"strings"

	"github.com/asynkron/protoactor-go/cluster"
)

// Roles reported by [RoleOf], after the Akka sample's port convention.
const (
	RoleBackend  = "backend"  // ports 2000-2999, or a member hosting kinds
	RoleFrontend = "frontend" // ports 3000-3999
	RoleWorker   = "worker"   // any other port
)

// Port ranges behind the roles (inclusive).
const (
	BackendPortMin  = 2000
	BackendPortMax  = 2999
	FrontendPortMin = 3000
	FrontendPortMax = 3999
)

// Member is one node of the cluster as a status page shows it.
type Member struct {
	// ID is the node's member id (one per process start).
	ID string `json:"id"`
	// Address is the node's remote address host:port.
	Address string `json:"address"`
	// Role is [RoleOf] the node.
	Role string `json:"role"`
	// Kinds are the cluster kinds the node hosts (none for clients).
	Kinds []string `json:"kinds,omitempty"`
	// Client is true for a cluster client (started with StartClient): it
	// is not in the cluster's member list and hosts no kinds.
	Client bool `json:"client,omitempty"`
	// Self is true for the node that answered.
	Self bool `json:"self,omitempty"`
}

// RoleOf derives a node's role from its port (2000-2999 backend, 3000-3999
// frontend) and, outside those ranges, from its kinds: a member that hosts
// a kind besides protoactor's implicit pub-sub kind is a backend, anything
// else a worker.
func RoleOf(port int, kinds []string, client bool) string {
	switch {
	case port >= BackendPortMin && port <= BackendPortMax:
		return RoleBackend
	case port >= FrontendPortMin && port <= FrontendPortMax:
		return RoleFrontend
	case !client && slices.ContainsFunc(kinds, func(k string) bool { return k != cluster.TopicActorKind }):
		return RoleBackend
	default:
		return RoleWorker
	}
}

// Lister is a membership provider that can list the nodes it knows:
// [Provider] and the etcd provider (package etcdmembers) are. Its methods
// are safe to call from any goroutine.
type Lister interface {
	// Members returns the members this node believes alive (itself
	// included when it is a member).
	Members() []Node
	// Clients returns the cluster clients (frontends, workers) it knows.
	Clients() []Node
	// Self returns this node, and whether it is a member (not a client).
	Self() (n Node, member bool)
}

// Members returns the nodes of c with their roles: the members c's member
// list holds and, when c's provider is a [Lister], the clients it knows
// about (frontends and workers). Members come first, sorted by address,
// then clients. It is safe to call from any goroutine when c's provider is
// a [Lister]; with another provider it reads protoactor's member list,
// which protoactor does not lock for readers.
func Members(c *cluster.Cluster) []Member {
	var out []Member
	self := c.ActorSystem.ID
	if p, ok := c.Config.ClusterProvider.(Lister); ok {
		for _, n := range p.Members() {
			out = append(out, memberOf(n, false, self))
		}
		clients := p.Clients()
		if me, member := p.Self(); !member {
			// A client is not in its own view: show it with the clients.
			clients = append(clients, me)
		}
		sortByAddress(out)
		var cs []Member
		for _, n := range clients {
			if n.ID != "" {
				cs = append(cs, memberOf(n, true, self))
			}
		}
		sortByAddress(cs)
		return append(out, cs...)
	}
	for _, m := range c.MemberList.Members().Members() {
		out = append(out, memberOf(Node{ID: m.Id, Host: m.Host, Port: int(m.Port), Kinds: m.Kinds}, false, self))
	}
	sortByAddress(out)
	return out
}

func memberOf(n Node, client bool, self string) Member {
	return Member{
		ID:      n.ID,
		Address: n.Address(),
		Role:    RoleOf(n.Port, n.Kinds, client),
		Kinds:   slices.Clone(n.Kinds),
		Client:  client,
		Self:    n.ID == self,
	}
}

func sortByAddress(ms []Member) {
	slices.SortFunc(ms, func(a, b Member) int {
		if c := strings.Compare(a.Address, b.Address); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// Self returns this node (the zero Node before start) and whether it is a
// member; it implements [Lister].
func (p *Provider) Self() (n Node, member bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.view == nil {
		return Node{}, false
	}
	return p.view.self, p.view.member
}
