package pullcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/cluster/protolog"
)

// Defaults of a node.
const (
	// ClusterName is the protoactor cluster name of a pulling cluster.
	ClusterName = "foreman-pulling"
	// DefaultKind is the cluster kind of Epic masters.
	DefaultKind = "pulling-epic"
	// DefaultRequestTimeout bounds one cluster request (a start, a
	// progress ask, a lookup).
	DefaultRequestTimeout = 2 * time.Second
	// DefaultSendQueue is the size of the ring protoactor's remote keeps per
	// peer for outgoing messages. protoactor's default, 1,000,000 slots,
	// preallocates about 16 MB per peer; a pulling master's traffic is
	// bounded by the workers' windows, so a small ring suffices.
	DefaultSendQueue = 4096
)

// ErrInvalidConfig reports a bad Config field or argument.
var ErrInvalidConfig = errors.New("pullcluster: invalid configuration")

// Config describes a node of a pulling cluster.
type Config struct {
	// Provider is the membership provider (required), e.g.
	// cluster/membership's.
	Provider cluster.ClusterProvider
	// Host to bind and advertise (default 127.0.0.1) and Port of the remote
	// endpoint (0: a free port).
	Host string
	Port int
	// Member makes the node a cluster member, which hosts Epic masters
	// (Master is required then); otherwise it joins as a client, which runs
	// workers and asks but hosts nothing.
	Member bool
	// Master is the Epic master kind a member hosts (see [EpicMaster]).
	Master Master
	// MasterMailbox is the mailbox of the Epic masters a member hosts
	// (default protoactor's unbounded one), e.g. one that records its
	// depth.
	MasterMailbox actor.MailboxProducer
	// Kind is the cluster kind of Epic masters (default DefaultKind). Nodes
	// that pull from one another's Epics use the same.
	Kind string
	// RequestTimeout bounds one cluster request (default
	// DefaultRequestTimeout).
	RequestTimeout time.Duration
	// SendQueue is the per-peer ring of protoactor's remote (default
	// DefaultSendQueue).
	SendQueue int
	// Logger for the node and its actor system (default slog.Default()).
	Logger *slog.Logger
	// WrapStart, when set, is called with the function that starts the
	// node's remote and joins the cluster, and must call it (tests that run
	// several members in one process serialise start-ups with it).
	WrapStart func(start func())
}

// Node is a running node of a pulling cluster.
type Node struct {
	cfg     Config
	log     *slog.Logger
	sys     *actor.ActorSystem
	c       *cluster.Cluster
	members atomic.Pointer[[]*cluster.Member] // the latest topology; nil before the first
	stopped atomic.Bool
	lookups sync.WaitGroup // Route's lookups in flight; Stop and Kill wait for them
}

// Join starts a node and joins the cluster: a member that hosts Epic
// masters (Config.Member and Config.Master) or a client.
func Join(ctx context.Context, cfg Config) (*Node, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch {
	case cfg.Provider == nil:
		return nil, fmt.Errorf("%w: Provider is required", ErrInvalidConfig)
	case cfg.Member && cfg.Master == nil:
		return nil, fmt.Errorf("%w: a member hosts Epic masters: set Master (pullcluster.EpicMaster)", ErrInvalidConfig)
	case !cfg.Member && cfg.Master != nil:
		return nil, fmt.Errorf("%w: a client hosts nothing: Master is set but Member is false", ErrInvalidConfig)
	case cfg.Port < 0 || cfg.RequestTimeout < 0 || cfg.SendQueue < 0:
		return nil, fmt.Errorf("%w: Port, RequestTimeout and SendQueue must not be negative", ErrInvalidConfig)
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.Kind == "" {
		cfg.Kind = DefaultKind
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.SendQueue == 0 {
		cfg.SendQueue = DefaultSendQueue
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	role := "client"
	if cfg.Member {
		role = "member"
	}
	n := &Node{cfg: cfg, log: log.With("component", "pullcluster", "role", role)}
	lib := protolog.NewHandler(log.Handler())
	n.sys = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(lib).With("lib", "protoactor")
	}))
	// The placement the lease guard asks about, and the members a lookup
	// may answer with, come from the latest topology.
	n.sys.EventStream.Subscribe(func(evt any) {
		t, ok := evt.(*cluster.ClusterTopology)
		if !ok {
			return
		}
		members := t.GetMembers()
		n.members.Store(&members)
		addrs := make([]string, 0, len(members))
		for _, m := range members {
			addrs = append(addrs, m.Address())
		}
		lib.SetMembers(addrs)
	})
	var kinds []*cluster.Kind
	if cfg.Member {
		k, err := cfg.Master.kind(n)
		if err != nil {
			n.sys.Shutdown()
			return nil, err
		}
		kinds = append(kinds, k)
	}
	ccfg := cluster.Configure(ClusterName, cfg.Provider, disthash.New(),
		remote.Configure(cfg.Host, cfg.Port, remote.WithEndpointWriterQueueSize(cfg.SendQueue),
			remote.WithEndpointManagerQueueSize(cfg.SendQueue)),
		cluster.WithKinds(kinds...),
		cluster.WithRequestTimeout(cfg.RequestTimeout))
	// Membership comes from the provider, not from gossip (see
	// cluster/node: protoactor's gossip races with its remote).
	ccfg.GossipInterval = time.Hour
	n.c = cluster.New(n.sys, ccfg)
	if err := n.start(); err != nil {
		n.sys.Shutdown()
		return nil, err
	}
	n.log.Info("joined", "address", n.sys.Address(), "kind", cfg.Kind)
	return n, nil
}

func (n *Node) start() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("pullcluster: cannot start the node on %s:%d: %v (is the port in use? pick another port)", n.cfg.Host, n.cfg.Port, r)
		}
	}()
	start := n.c.StartClient
	if n.cfg.Member {
		start = n.c.StartMember
	}
	if n.cfg.WrapStart != nil {
		n.cfg.WrapStart(start)
	} else {
		start()
	}
	return nil
}

// System returns the node's actor system (spawn workers there).
func (n *Node) System() *actor.ActorSystem { return n.sys }

// Cluster returns the node's protoactor cluster.
func (n *Node) Cluster() *cluster.Cluster { return n.c }

// Address returns the node's remote address.
func (n *Node) Address() string { return n.sys.Address() }

// owns reports whether this node's latest topology places the master of
// Epic name here (true before the first topology: nothing contradicts it).
func (n *Node) owns(name string) bool {
	members := n.members.Load()
	if members == nil {
		return true
	}
	return node.RendezvousOwner(*members, n.cfg.Kind, name) == n.sys.Address()
}

// isMember reports whether addr is a member in the latest topology.
func (n *Node) isMember(addr string) bool {
	members := n.members.Load()
	if members == nil {
		return false
	}
	for _, m := range *members {
		if m.Address() == addr {
			return true
		}
	}
	return false
}

// cutOff reports whether the membership provider says this node heard
// from no other for a while.
func (n *Node) cutOff() bool {
	p, ok := n.cfg.Provider.(interface{ CutOff() bool })
	return ok && p.CutOff()
}

// Stop leaves the cluster gracefully: the members see it leave at once, a
// master hosted here stops (its runtime flushes and releases the lease, so
// the next owner's activation takes over at once), then the remote closes.
// Stop the node's workers first if their unconfirmed items should go back
// at once rather than when the master notices they are gone.
func (n *Node) Stop(ctx context.Context) error {
	if !n.stopped.CompareAndSwap(false, true) {
		return nil
	}
	_ = n.cfg.Provider.Shutdown(true)
	if n.cfg.Member {
		n.c.IdentityLookup.Shutdown() // stops the activations here and waits
		n.c.Gossip.Shutdown()
	}
	n.sys.Shutdown()
	n.c.Remote.Shutdown(false) // see cluster/node's leave: the graceful one waits on dead peers
	n.waitLookups()
	n.log.Info("left the cluster")
	return ctx.Err()
}

// Kill stops the node abruptly, as if its process died: it does not leave
// the membership, its master is not stopped gracefully (the lease lapses
// instead). Tests use it.
func (n *Node) Kill() {
	if !n.stopped.CompareAndSwap(false, true) {
		return
	}
	_ = n.cfg.Provider.Shutdown(false)
	if n.cfg.Member {
		n.c.Shutdown(false)
	} else {
		n.sys.Shutdown()
		n.c.Remote.Shutdown(false)
	}
	n.waitLookups()
}

// waitLookups waits for Route's lookups in flight, which protoactor ends
// at their request timeout, so that no goroutine of the node outlives it.
func (n *Node) waitLookups() {
	done := make(chan struct{})
	go func() {
		n.lookups.Wait()
		close(done)
	}()
	t := time.NewTimer(n.cfg.RequestTimeout + time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		n.log.Warn("cluster lookups still running after the node stopped", "waited", n.cfg.RequestTimeout+time.Second)
	}
}
