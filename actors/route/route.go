package route

import (
	"context"
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/route/core"
)

// Errors of the route package.
var (
	// ErrNoMaster means the master could not be found or reached: the route
	// is empty, the resolver failed or found nothing, or the master's PID is
	// gone. It is the one sentinel for "no master" in Foreman; the worker,
	// frontend and cluster packages wrap it, so errors.Is(err, ErrNoMaster)
	// tells a caller to retry later.
	ErrNoMaster = errors.New("route: no master reachable")
	// ErrEmpty is returned by Master.Validate for the zero Master.
	ErrEmpty = errors.New("route: empty master route; use route.Fixed(pid) or route.Resolver(fn)")
)

// ResolveFunc finds the master's current PID. It must honour ctx, is called
// off the caller's actor goroutine and may block (a cluster lookup).
type ResolveFunc func(ctx context.Context) (*actor.PID, error)

// AfterGoneFunc arranges for f to run once the resolver knows that pid is
// gone (the node it lives on left the cluster), at once (on another
// goroutine) if it knows already. The returned stop cancels that: it
// reports whether it stopped f from running, as context.AfterFunc's does.
// f must not block.
type AfterGoneFunc func(pid *actor.PID, f func()) (stop func() bool)

// ResolverOption configures a [Resolver] route.
type ResolverOption func(*Master)

// WithAfterGone lets callers of the route learn at once that a PID they
// are waiting on is gone ([Master.AfterGone]), so that a request in flight
// to a master whose node was just dropped is sent again at once instead of
// waiting for its timeout.
func WithAfterGone(fn AfterGoneFunc) ResolverOption {
	return func(m *Master) { m.afterGone = fn }
}

// WithForget lets callers of the route report a PID that did not answer
// (an ask timed out, or came back as a dead letter) so that the resolver
// stops handing it out from a cache and looks the master up again.
func WithForget(fn func(pid *actor.PID)) ResolverOption {
	return func(m *Master) { m.forget = fn }
}

// WithCached gives the route a lookup that never blocks: fn returns the
// master's PID when the resolver has it at hand (a cache hit), nil
// otherwise. [Master.Cached] uses it, so that callers that resolve on
// every request skip preparing a bounded [Master.Resolve] when the answer
// is already known.
func WithCached(fn func() *actor.PID) ResolverOption {
	return func(m *Master) { m.cached = fn }
}

// Master says how to reach the master: a fixed PID or a [ResolveFunc]. The
// zero value is invalid (see [Master.Validate]). A Master is a small value,
// safe to copy and to use from several goroutines when its ResolveFunc is.
//
// A route may span several shards ([Sharded]); [Master.ForWork] and
// [Master.Shard] pick one.
type Master struct {
	pid         *actor.PID
	resolveFunc ResolveFunc
	afterGone   AfterGoneFunc // nil: the route never says a PID is gone
	forget      func(pid *actor.PID)
	cached      func() *actor.PID // nil: Cached knows only a fixed PID
	shards      []Master          // the shards' routes (see Sharded); nil: one shard
}

// Fixed returns a route to a master at a fixed PID (one process).
func Fixed(pid *actor.PID) Master { return Master{pid: pid} }

// Resolver returns a route that finds the master by calling fn (the
// cluster, where the master moves). Callers re-resolve whenever the master
// seems gone (its PID terminated, a message went unanswered) and, for the
// Worker, on every register tick.
func Resolver(fn ResolveFunc, opts ...ResolverOption) Master {
	m := Master{resolveFunc: fn}
	for _, o := range opts {
		o(&m)
	}
	return m
}

// Forget reports that pid did not answer, so that the next Resolve looks
// the master up afresh rather than returning a cached pid (see
// [WithForget]). It does nothing for a fixed route.
func (m Master) Forget(pid *actor.PID) {
	if m.forget != nil && pid != nil {
		m.forget(pid)
	}
}

// AfterGone runs f once the route knows that pid is gone (see
// [WithAfterGone]); stop cancels it. A fixed route, or a resolver without
// WithAfterGone, never runs f: callers then rely on their timeouts.
func (m Master) AfterGone(pid *actor.PID, f func()) (stop func() bool) {
	if m.afterGone == nil || pid == nil {
		return func() bool { return true }
	}
	return m.afterGone(pid, f)
}

// IsResolver reports whether the route uses a ResolveFunc, so the master
// may move and the caller should resolve it again when it seems gone.
func (m Master) IsResolver() bool { return m.resolveFunc != nil }

// Resolve returns the master's current PID: the fixed PID, or the
// ResolveFunc's answer. It blocks as long as the ResolveFunc does. Every
// error it returns wraps ErrNoMaster (and the ResolveFunc's error, if any,
// so ctx.Err() still matches).
func (m Master) Resolve(ctx context.Context) (*actor.PID, error) {
	if m.resolveFunc != nil {
		pid, err := m.resolveFunc(ctx)
		if err != nil {
			if errors.Is(err, ErrNoMaster) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %w", ErrNoMaster, err)
		}
		if pid == nil {
			return nil, fmt.Errorf("%w: the resolver returned no PID", ErrNoMaster)
		}
		return pid, nil
	}
	if m.pid == nil {
		return nil, fmt.Errorf("%w: %w", ErrNoMaster, ErrEmpty)
	}
	return m.pid, nil
}

// Cached returns the master's PID without blocking when the route knows
// it at once: the fixed PID, or a resolver's cache hit ([WithCached]); ok
// is false otherwise, and the caller calls Resolve.
func (m Master) Cached() (pid *actor.PID, ok bool) {
	switch {
	case m.resolveFunc == nil:
		return m.pid, m.pid != nil
	case m.cached != nil:
		pid = m.cached()
		return pid, pid != nil
	}
	return nil, false
}

// Validate returns ErrEmpty for the zero Master and nil otherwise;
// constructors that take a Master call it and wrap the error.
func (m Master) Validate() error {
	if m.pid == nil && m.resolveFunc == nil {
		return ErrEmpty
	}
	return nil
}

// Sharded returns a route over the masters of n shards (shards[k] reaches
// shard k's master): the frontend sends each Work, and each question
// about one work id, to the shard [ShardOf] picks ([Master.ForWork]);
// questions about the whole cluster go to every shard ([Master.Shard]).
// With one shard it returns that shard's route unchanged, so a cluster of
// one shard behaves exactly as an unsharded one. Without a key (Resolve,
// AfterGone, Forget) the route acts as shard 0's.
func Sharded(shards ...Master) (Master, error) {
	if len(shards) == 0 {
		return Master{}, fmt.Errorf("%w: Sharded needs at least one shard", ErrEmpty)
	}
	for k, s := range shards {
		if err := s.Validate(); err != nil {
			return Master{}, fmt.Errorf("shard %d: %w", k, err)
		}
		if len(s.shards) > 0 {
			return Master{}, fmt.Errorf("%w: shard %d is itself sharded", ErrEmpty, k)
		}
	}
	if len(shards) == 1 {
		return shards[0], nil
	}
	m := shards[0]
	m.shards = append([]Master(nil), shards...)
	return m, nil
}

// Shards returns how many shards the route spans (1 when unsharded).
func (m Master) Shards() int { return max(len(m.shards), 1) }

// Shard returns the route to shard k's master (m itself when unsharded
// and k is 0). It panics when k is out of range, like an index.
func (m Master) Shard(k int) Master {
	if len(m.shards) == 0 {
		if k != 0 {
			panic(fmt.Sprintf("route: shard %d of an unsharded route", k))
		}
		return m
	}
	return m.shards[k]
}

// ForWork returns the route to the master of the shard that owns workID.
func (m Master) ForWork(workID string) Master {
	return m.Shard(ShardOf(workID, m.Shards()))
}

// Member is a cluster member as the placement sees it (route/core's).
type Member = core.Member

// Owner returns the address of the member that the cluster places
// kind/identity on among members: protoactor's rendezvous hashing, as
// cluster/node's RendezvousOwner and the placement actor compute it (the
// tests check it against protoactor's), without protoactor's types, so
// that the pure cores and the simulator place masters as the cluster does.
// "" when no member hosts kind.
func Owner(members []Member, kind, identity string) string {
	return core.Owner(members, kind, identity)
}
