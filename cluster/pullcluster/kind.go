package pullcluster

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/pulling"
)

// Defaults of the Epic master kind's journal runtime.
const (
	// DefaultLeaseTTL is the master's lease on its stream. Its renewals
	// share the journal with the confirmations' group commits; on a loaded
	// host a short lease was lost behind them (and the master restarted),
	// so it is longer than the distributed-workers master's.
	DefaultLeaseTTL = 2 * time.Second
	// DefaultFenceCheck is how often an activation looks for a newer
	// activation's events (the recovery marker) and stops if it finds one.
	DefaultFenceCheck = 500 * time.Millisecond
	// DefaultLeaseMaxWait is how long a stray activation (one this node's
	// view does not place here, or that finds the lease renewed by
	// another) waits before it stops; above the lease's ttl, so that the
	// successor of a holder that died is never the one that gives up.
	DefaultLeaseMaxWait = 3 * DefaultLeaseTTL
)

// Master is an Epic master kind for [Config.Master]; make one with
// [EpicMaster].
type Master interface {
	kind(n *Node) (*cluster.Kind, error)
}

// EpicMaster returns the Epic master kind for Epics of items of type T:
// one durable master (pulling.DurableMasterProps) per Epic name, which is
// the activation's cluster identity. Each activation opens its Epic with
// open on the member that hosts it and journals its position in j (every
// member hosting the kind must reach the same journal: a PostgreSQL one
// across hosts, a SQLite file on one host). opts are the master's options
// (pulling.WithCodec is needed for workers on other nodes); the kind sets
// the Epic's name and the runtime's lease, lease guard, fence check and max
// lease wait itself.
func EpicMaster[T any](j persistence.Journal, open pulling.EpicOpener[T], opts ...pulling.Option) Master {
	return &epicMaster[T]{j: j, open: open, opts: opts}
}

type epicMaster[T any] struct {
	j    persistence.Journal
	open pulling.EpicOpener[T]
	opts []pulling.Option
}

func (e *epicMaster[T]) kind(n *Node) (*cluster.Kind, error) {
	opts := append([]pulling.Option{pulling.WithLogger(n.log)}, e.opts...)
	opts = append(opts,
		pulling.WithEpicNameFrom(func(c actor.Context) string { return cluster.GetClusterIdentity(c).GetIdentity() }),
		pulling.WithPersistence(func(name string) []persistence.Option {
			return []persistence.Option{
				persistence.WithLease(DefaultLeaseTTL),
				// The master holds the lease only where this node's view
				// places it (a stray activation, started by a lookup from
				// a node whose view was out of date, must not keep it from
				// the owner), and lets go of it when this node hears from
				// nobody (the other side of a partition takes over).
				persistence.WithLeaseGuard(func() bool { return n.owns(name) && !n.cutOff() }),
				persistence.WithFenceCheck(DefaultFenceCheck),
				persistence.WithLeaseMaxWait(DefaultLeaseMaxWait),
			}
		}))
	props, err := pulling.DurableMasterProps(e.j, e.open, opts...)
	if err != nil {
		return nil, fmt.Errorf("pullcluster: the Epic master kind: %w", err)
	}
	if n.cfg.MasterMailbox != nil {
		props = props.Configure(actor.WithMailbox(n.cfg.MasterMailbox))
	}
	return cluster.NewKind(n.cfg.Kind, props), nil
}
