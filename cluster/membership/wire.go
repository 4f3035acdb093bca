package membership

import (
	"net"
	"strconv"
)

// Path is the membership endpoint served by every member.
const Path = "/members"

// Request headers a probe carries, so that the probed member learns the
// prober (members) or reports it as a client (clients).
const (
	// HeaderID carries the prober's member id (its actor system id).
	HeaderID = "Foreman-Node-Id"
	// HeaderAddr carries the prober's remote address host:port.
	HeaderAddr = "Foreman-Node-Addr"
	// HeaderHTTP carries a member prober's membership endpoint; clients
	// leave it out.
	HeaderHTTP = "Foreman-Node-Http"
	// HeaderCluster carries the prober's cluster name.
	HeaderCluster = "Foreman-Cluster"
)

// Node is one cluster node as GET /members reports it.
type Node struct {
	// ID is the node's member id (protoactor's ActorSystem.ID): one per
	// process start.
	ID string `json:"id"`
	// Host and Port are the node's remote (gRPC) address.
	Host string `json:"host"`
	Port int    `json:"port"`
	// HTTP is the node's membership endpoint host:port; empty for clients.
	HTTP string `json:"http,omitempty"`
	// Kinds are the cluster kinds the node hosts; empty for clients.
	Kinds []string `json:"kinds,omitempty"`
}

// Address returns the node's remote address host:port.
func (n Node) Address() string { return net.JoinHostPort(n.Host, strconv.Itoa(n.Port)) }

// Status is the JSON body of GET /members: the answering node, and the
// members and clients it currently believes alive. A leaving member
// answers 503 with Leaving set.
type Status struct {
	Node
	// Cluster is the cluster name; nodes of other clusters are ignored.
	Cluster string `json:"cluster"`
	// Leaving is true once the node has started a graceful leave.
	Leaving bool `json:"leaving,omitempty"`
	// Members are the members the node believes alive, itself included,
	// sorted by id.
	Members []Node `json:"members"`
	// Clients are the cluster clients that polled this node recently,
	// sorted by id (each member reports only the clients it saw itself).
	Clients []Node `json:"clients,omitempty"`
}
