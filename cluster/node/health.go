package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/health"
	"github.com/foreman-actors/foreman/messages"
)

// healthStream is the journal stream the backend's readiness check reads a
// snapshot of: none is ever written, so the read is one cheap query that
// still crosses to the journal's database.
const healthStream = "foreman/health"

// Names of the checks (the lines of /readyz?verbose and /livez?verbose).
const (
	// CheckActors is the liveness check: the actor system runs a message
	// through a mailbox and answers.
	CheckActors = "actors"
	// CheckJoined: a backend is a member in its cluster's topology.
	CheckJoined = "joined"
	// CheckJournal: a backend's (or all-in-one node's) journal answers a
	// read.
	CheckJournal = "journal"
	// CheckMasters: every shard's master answers a status request (a
	// frontend's and an all-in-one node's readiness).
	CheckMasters = "masters"
	// CheckRegistered: every shard's master has registered each of the
	// worker node's workers.
	CheckRegistered = "registered"
)

// healthPing and healthPong are what the liveness check's actor is asked
// and answers: local messages, never on the wire.
type (
	healthPing struct{}
	healthPong struct{}
)

// ActorSystemCheck returns the liveness check of sys: an actor it spawns
// answers a request through its mailbox and dispatcher, so the check fails
// when the system is blocked (its dispatcher starved or its actors stuck)
// rather than when a dependency is away. Call it once per system: each call
// spawns its actor.
func ActorSystemCheck(sys *actor.ActorSystem) health.Check {
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*healthPing); ok {
			c.Respond(&healthPong{})
		}
	}))
	return health.Check{Name: CheckActors, Run: func(ctx context.Context) error {
		_, err := sys.Root.RequestFuture(pid, &healthPing{}, untilDeadline(ctx)).Result()
		if err != nil {
			return fmt.Errorf("the actor system did not answer: %w", err)
		}
		return nil
	}}
}

// JournalCheck returns the readiness check of a journal: it reads a
// snapshot no one writes, one query bounded by the check's timeout.
func JournalCheck(j persistence.Journal) health.Check {
	return health.Check{Name: CheckJournal, Run: func(ctx context.Context) error {
		if _, _, err := j.LoadSnapshot(ctx, healthStream); err != nil {
			return fmt.Errorf("the journal did not answer a read: %w", err)
		}
		return nil
	}}
}

// untilDeadline returns the time left before ctx's deadline (the checker
// always sets one), at least a millisecond.
func untilDeadline(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return max(time.Until(dl), time.Millisecond)
	}
	return health.DefaultTimeout
}

// askMaster sends msg to the master at pid and returns its answer before
// ctx ends.
func askMaster(ctx context.Context, sys *actor.ActorSystem, pid *actor.PID, msg any) (any, error) {
	return sys.Root.RequestFuture(pid, msg, untilDeadline(ctx)).Result()
}

// Health returns the node's checks, to serve as Kubernetes' probes (see
// cluster/health): live while its actor system answers; ready, for a
// backend, while it is a member of the cluster and its journal answers a
// read; for a frontend, while every shard's master answers; for a worker
// node, while every shard's master has registered each of its workers.
// opts configure the checker (health.WithTimeout, health.WithLogger;
// default logger: the node's). Each call spawns the liveness check's actor:
// call it once.
func (n *ClusterNode) Health(opts ...health.Option) (*health.Checker, error) {
	var ready []health.Check
	switch n.cfg.Role {
	case RoleBackend:
		ready = append(ready, health.Check{Name: CheckJoined, Run: func(context.Context) error {
			if !n.joined.Load() {
				return errors.New("this backend is not yet (or no longer) in the cluster's topology")
			}
			return nil
		}}, JournalCheck(n.jrnl))
	case RoleFrontend:
		ready = append(ready, health.Check{Name: CheckMasters, Run: n.mastersAnswer})
	case RoleWorker:
		ready = append(ready, health.Check{Name: CheckRegistered, Run: n.workersRegistered})
	}
	return health.New(append([]health.Option{
		health.WithLogger(n.log),
		health.WithLive(ActorSystemCheck(n.sys)),
		health.WithReady(ready...),
	}, opts...)...)
}

// eachShard runs fn for every shard concurrently and joins the errors of
// those that failed, naming the shard.
func (n *ClusterNode) eachShard(ctx context.Context, fn func(ctx context.Context, k int, pid *actor.PID) error) error {
	errs := make([]error, len(n.shards))
	var wg sync.WaitGroup
	for k, l := range n.shards {
		wg.Go(func() {
			pid, err := l.Resolve(ctx)
			if err == nil {
				err = fn(ctx, k, pid)
			}
			if err != nil {
				errs[k] = fmt.Errorf("shard %d: %w", k, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// mastersAnswer is a frontend's readiness: every shard's master answers
// a status request.
func (n *ClusterNode) mastersAnswer(ctx context.Context) error {
	return n.eachShard(ctx, func(ctx context.Context, _ int, pid *actor.PID) error {
		ans, err := askMaster(ctx, n.sys, pid, &messages.GetMasterStatus{})
		if err != nil {
			return err
		}
		if _, ok := ans.(*messages.MasterStatus); !ok {
			return fmt.Errorf("the master answered %T", ans)
		}
		return nil
	})
}

// workersRegistered is a worker node's readiness: every shard's master
// knows each of its workers.
func (n *ClusterNode) workersRegistered(ctx context.Context) error {
	if len(n.workerIDs) == 0 {
		return nil // a worker node without workers has nothing to register
	}
	return n.eachShard(ctx, func(ctx context.Context, _ int, pid *actor.PID) error {
		ans, err := askMaster(ctx, n.sys, pid, &messages.GetWorkersKnown{WorkerIds: n.workerIDs})
		if err != nil {
			return err
		}
		known, ok := ans.(*messages.WorkersKnown)
		if !ok {
			return fmt.Errorf("the master answered %T", ans)
		}
		if missing := len(n.workerIDs) - len(known.GetKnown()); missing > 0 {
			return fmt.Errorf("%d of %d workers not registered (known: %s)", missing, len(n.workerIDs), strings.Join(known.GetKnown(), ","))
		}
		return nil
	})
}

// Health returns the all-in-one node's checks (see ClusterNode.Health):
// live while its actor system answers, ready while its journal answers a
// read and its master answers a status request.
func (n *Local) Health(opts ...health.Option) (*health.Checker, error) {
	return health.New(append([]health.Option{
		health.WithLogger(n.log),
		health.WithLive(ActorSystemCheck(n.sys)),
		health.WithReady(JournalCheck(n.jrnl), health.Check{Name: CheckMasters, Run: func(ctx context.Context) error {
			ans, err := askMaster(ctx, n.sys, n.master, &messages.GetMasterStatus{})
			if err != nil {
				return fmt.Errorf("the master did not answer: %w", err)
			}
			if _, ok := ans.(*messages.MasterStatus); !ok {
				return fmt.Errorf("the master answered %T", ans)
			}
			return nil
		}}),
	}, opts...)...)
}
