package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/throttler"
	"github.com/foreman-actors/foreman/cluster/metrics"
	"github.com/foreman-actors/foreman/messages"
)

// Rate limits (--rate): one throttler actor per limited job type,
// throttler.PermitThrottlerProps (seed 002's FSM over permit requests, on
// the persistence runtime). On a cluster it is a cluster kind every backend
// registers, so the cluster places one activation and moves it when its
// node leaves; its lease (the master's lease settings and a guard that
// follows where this node's view places it) makes sure only one activation
// grants at a time. On the all-in-one node it is the same actor, spawned
// once. Every master shard hands work of the type out only with a permit
// from its PermitPool, which asks the throttler for permits without ever
// blocking the master; the throttler grants them to the node's permit
// receiver, which hands them to the pool.

// ThrottleKind returns the cluster kind of the throttler of jobType:
// "throttle-" and the type, path-escaped (a kind must not contain "/"; see
// ShardKind). Its identity is the job type.
func ThrottleKind(jobType string) string { return throttleKindPrefix + url.PathEscape(jobType) }

// throttlerProps returns the props of the throttler of l on journal j.
func throttlerProps(j persistence.Journal, l RateLimit, m *metrics.Metrics, log *slog.Logger, popts ...persistence.Option) (*actor.Props, error) {
	opts := []throttler.PermitOption{throttler.WithPermitLogger(log), throttler.WithPermitPersistence(popts...)}
	if m != nil {
		o, err := m.ThrottleObserver()
		if err != nil {
			return nil, fmt.Errorf("node: throttler metrics: %w", err)
		}
		opts = append(opts, throttler.WithPermitObserver(o))
	}
	props, err := throttler.PermitThrottlerProps(j, l.JobType, l.Rate, l.Strict, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: rate limit %s: %w", ErrInvalidConfig, l, err)
	}
	return props, nil
}

// throttleKinds returns the kinds of the throttlers of the node's limits.
func (n *ClusterNode) throttleKinds(log *slog.Logger) ([]*cluster.Kind, error) {
	limits := n.cfg.RateLimits
	kinds := make([]*cluster.Kind, 0, len(limits))
	seen := map[string]bool{}
	for _, l := range limits {
		if seen[l.JobType] {
			return nil, fmt.Errorf("%w: rate limit %s: job type %q is limited twice", ErrInvalidConfig, l, l.JobType)
		}
		seen[l.JobType] = true
		kind := ThrottleKind(l.JobType)
		// As a shard master's: the lease only where this node's view
		// places the throttler, and never on a cut-off node.
		own := newMasterOwnership(n.sys, kind, l.JobType)
		n.ownership = append(n.ownership, own)
		guard := own.Owns
		if p, ok := n.cfg.Provider.(cutOffReporter); ok {
			guard = func() bool { return own.Owns() && !p.CutOff() }
		}
		ttl := master.DefaultLeaseTTL
		if d, ok := masterLeaseFor(n.cfg.Provider); ok {
			ttl = d
		}
		props, err := throttlerProps(n.jrnl, l, n.cfg.Metrics, log, persistence.WithLease(ttl), persistence.WithLeaseGuard(guard))
		if err != nil {
			return nil, err
		}
		kinds = append(kinds, cluster.NewKind(kind, props))
	}
	return kinds, nil
}

// permitAsker sends the PermitRequests of one process's master shards and
// hands the grants, which come to its receiver actor, to their pools.
type permitAsker struct {
	log *slog.Logger
	// locate finds the throttler of a job type (nil: not yet); set once
	// the node runs.
	locate atomic.Pointer[func(jobType string) *actor.PID]
	root   atomic.Pointer[actor.RootContext]
	self   atomic.Pointer[actor.PID] // the receiver

	mu    sync.Mutex
	pools map[uint64]*throttler.PermitPool
	next  uint64
}

func newPermitAsker(log *slog.Logger) *permitAsker {
	return &permitAsker{log: log, pools: map[uint64]*throttler.PermitPool{}}
}

// start spawns the receiver in sys and asks through locate from now on.
func (a *permitAsker) start(sys *actor.ActorSystem, locate func(jobType string) *actor.PID) error {
	pid, err := sys.Root.SpawnNamed(actor.PropsFromFunc(a.receive), "permits")
	if err != nil {
		return fmt.Errorf("node: spawn the permit receiver: %w", err)
	}
	a.root.Store(sys.Root)
	a.self.Store(pid)
	a.locate.Store(&locate)
	return nil
}

// receive hands a grant to its pool.
func (a *permitAsker) receive(c actor.Context) {
	g, ok := c.Message().(*messages.PermitGrant)
	if !ok {
		return
	}
	if e := g.GetError(); e != "" {
		a.log.Warn("the throttler refused a permit request", "error", e)
		return
	}
	a.mu.Lock()
	pool := a.pools[g.GetPool()]
	others := slices.Collect(maps.Values(a.pools))
	a.mu.Unlock()
	if pool != nil {
		pool.Add(throttler.GrantPermits(g))
	}
	// A grant is the node's clock for its idle pools: a pool whose master
	// has no more work of the type calls no Reserve, so without a sweep
	// its expired strict permits would go unreported and hold their places
	// in the throttler's window for a whole period (the end of a backlog).
	now := time.Now()
	for _, p := range others {
		p.Sweep(now)
	}
}

// permitAskTimeout is how long a pool waits for permits before it asks
// again: after a failover, the successor hears from the pools within it.
// Asking again is cheap (the throttler tops the pool's queued permits up,
// it does not add to them).
const permitAskTimeout = 250 * time.Millisecond

// permitOptions returns, for one master shard, a dispatch limiter per
// limit: a PermitPool fed by the type's throttler.
func (a *permitAsker) permitOptions(limits []RateLimit) []master.Option {
	opts := make([]master.Option, 0, len(limits))
	for _, l := range limits {
		a.mu.Lock()
		a.next++
		id := a.next
		pool := throttler.NewPermitPool(func(want int) { go a.ask(l.JobType, id, want) }, permitAskTimeout)
		pool.ReportUses(func(uses []throttler.PermitUse) { go a.report(l.JobType, id, uses) })
		a.pools[id] = pool
		a.mu.Unlock()
		opts = append(opts, master.WithDispatchLimiter(l.JobType, pool))
	}
	return opts
}

// ask requests want permits for pool id of jobType. A lost request is only
// logged: the pool asks again after its timeout, and the throttler tops the
// pool's queued permits up rather than adding to them.
func (a *permitAsker) ask(jobType string, id uint64, want int) {
	loc, self, root := a.locate.Load(), a.self.Load(), a.root.Load()
	if loc == nil || self == nil || root == nil {
		return // not started yet; the pool asks again
	}
	pid := (*loc)(jobType)
	if pid == nil {
		a.log.Debug("no throttler to ask for permits", "job_type", jobType)
		return
	}
	root.RequestWithCustomSender(pid, &messages.PermitRequest{JobType: jobType, Want: int32(min(want, 1<<30)), Pool: id}, self)
}

// report sends a pool's strict permit reports to jobType's throttler. A
// lost report only costs rate: the throttler takes an unreported permit as
// spent at the end of its validity.
func (a *permitAsker) report(jobType string, pool uint64, uses []throttler.PermitUse) {
	loc, self, root := a.locate.Load(), a.self.Load(), a.root.Load()
	if loc == nil || self == nil || root == nil {
		return
	}
	if pid := (*loc)(jobType); pid != nil {
		root.RequestWithCustomSender(pid, throttler.UsedMessage(jobType, pool, uses), self)
	}
}

// ThrottlerPlace says where a job type's throttler runs.
type ThrottlerPlace struct {
	// JobType is the limited job type.
	JobType string
	// Address is the actor system address of the node that hosts the
	// throttler (empty when Err is set).
	Address string
	// Err says why the throttler could not be found.
	Err error
}

// throttleKindPrefix starts every throttler kind (see ThrottleKind).
const throttleKindPrefix = "throttle-"

// limitedTypes returns the job types whose throttler kind a member
// registers (every backend registers the kinds of its --rate), sorted.
func (n *ClusterNode) limitedTypes() []string {
	types := map[string]bool{}
	for _, m := range n.c.MemberList.Members().Members() {
		for _, kind := range m.GetKinds() {
			escaped, ok := strings.CutPrefix(kind, throttleKindPrefix)
			if !ok {
				continue
			}
			if jobType, err := url.PathUnescape(escaped); err == nil {
				types[jobType] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(types))
}

// Throttlers says where each cluster-wide rate limit's throttler runs: the
// limited types are those whose throttler kind a member registers, so any
// node can answer, a frontend included. Looking a throttler up places it if
// it had no activation, as a master's first permit request would. Sorted by
// type; empty without cluster-wide limits. ctx bounds the lookups.
func (n *ClusterNode) Throttlers(ctx context.Context) []ThrottlerPlace {
	types := n.limitedTypes()
	places := make([]ThrottlerPlace, 0, len(types))
	for _, jobType := range types {
		places = append(places, n.throttlerPlace(ctx, jobType))
	}
	return places
}

// throttlerPlace looks up jobType's throttler, giving up when ctx ends
// (cluster.Get itself waits for the cluster's request timeout).
func (n *ClusterNode) throttlerPlace(ctx context.Context, jobType string) ThrottlerPlace {
	found := make(chan string, 1)
	go func() {
		address := ""
		if pid := n.c.Get(jobType, ThrottleKind(jobType)); pid != nil {
			address = pid.GetAddress()
		}
		found <- address
	}()
	select {
	case address := <-found:
		if address == "" {
			return ThrottlerPlace{JobType: jobType, Err: fmt.Errorf("node: no member could host the throttler of %q", jobType)}
		}
		return ThrottlerPlace{JobType: jobType, Address: address}
	case <-ctx.Done():
		return ThrottlerPlace{JobType: jobType, Err: fmt.Errorf("node: looking up the throttler of %q: %w", jobType, ctx.Err())}
	}
}

// RateStatus is one throttler's state, as Rates reports it.
type RateStatus struct {
	// JobType is the limited job type.
	JobType string
	// Rate is the throttler's current rate (run-time changes included).
	Rate throttler.Rate
	// Strict: the strict sliding-window mode (else the seed's timer mode).
	Strict bool
	// Node is the actor system address of the node hosting the throttler.
	Node string
	// Queued is the number of permits waiting in its queue.
	Queued int
	// Granted and Refused count the permits the throttler granted and
	// refused since its activation started.
	Granted, Refused uint64
	// Err says why the throttler could not be reached (the other fields
	// but JobType are then zero).
	Err error
}

// ErrNotLimited means a rate was asked for a job type that has no
// throttler: rate limits are given with --rate when the cluster starts.
var ErrNotLimited = errors.New("node: the job type has no rate limit")

// statusOf decodes a throttler's answer.
func statusOf(jobType string, res any, err error) RateStatus {
	if err != nil {
		return RateStatus{JobType: jobType, Err: fmt.Errorf("node: asking the throttler of %q: %w", jobType, err)}
	}
	st, ok := res.(*messages.ThrottleStatus)
	if !ok {
		return RateStatus{JobType: jobType, Err: fmt.Errorf("node: the throttler of %q answered with a %T", jobType, res)}
	}
	rs := RateStatus{
		JobType: jobType, Rate: throttler.Rate{Calls: int(st.GetCalls()), Per: time.Duration(st.GetPerNanos())},
		Strict: st.GetStrict(), Node: st.GetAddress(), Queued: int(st.GetQueued()), Granted: st.GetGranted(), Refused: st.GetRefused(),
	}
	if e := st.GetError(); e != "" {
		rs.Err = fmt.Errorf("node: the throttler of %q: %s", jobType, e)
	}
	return rs
}

// setRateMsg validates a rate and makes the message that sets it.
func setRateMsg(jobType string, r throttler.Rate, strict bool) (*messages.ThrottleSetRate, error) {
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("%w: rate %s for %q: %w", ErrInvalidConfig, r, jobType, err)
	}
	if r.Calls > throttler.MaxStrictCalls {
		return nil, fmt.Errorf("%w: rate %s for %q: at most %d calls per period; use a shorter period with proportionally fewer calls",
			ErrInvalidConfig, r, jobType, throttler.MaxStrictCalls)
	}
	return &messages.ThrottleSetRate{JobType: jobType, Calls: int64(r.Calls), PerNanos: int64(r.Per), Strict: strict}, nil
}

// clusterAsk asks jobType's throttler, bounded by ctx and the node's
// request timeout.
func (n *ClusterNode) clusterAsk(ctx context.Context, jobType string, msg any) (any, error) {
	type answer struct {
		res any
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := n.c.Request(jobType, ThrottleKind(jobType), msg)
		done <- answer{res, err}
	}()
	select {
	case a := <-done:
		return a.res, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// SetRate changes jobType's rate cluster-wide: its throttler records the
// new rate (and mode: strict for the sliding window) in its journal stream
// before it answers, so a restart or a failover keeps it; it holds until
// the next SetRate, or until the cluster's --rate is changed with
// --change-rate (docs/rates.md). jobType must be limited (--rate):
// ErrNotLimited otherwise.
func (n *ClusterNode) SetRate(ctx context.Context, jobType string, r throttler.Rate, strict bool) error {
	msg, err := setRateMsg(jobType, r, strict)
	if err != nil {
		return err
	}
	if !slices.Contains(n.limitedTypes(), jobType) {
		return fmt.Errorf("%w: %q is not limited (limited: %q); give it a rate with --rate when the cluster starts", ErrNotLimited, jobType, n.limitedTypes())
	}
	res, err := n.clusterAsk(ctx, jobType, msg)
	st := statusOf(jobType, res, err)
	return st.Err
}

// Rates reports every throttler of the cluster, sorted by job type; a
// throttler that cannot be reached has Err set. The error is ctx's if it
// ended first.
func (n *ClusterNode) Rates(ctx context.Context) ([]RateStatus, error) {
	types := n.limitedTypes()
	out := make([]RateStatus, 0, len(types))
	for _, jobType := range types {
		res, err := n.clusterAsk(ctx, jobType, &messages.ThrottleGetStatus{JobType: jobType})
		out = append(out, statusOf(jobType, res, err))
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	return out, nil
}

// RateController is what changes and reads the rate limits at run time:
// *ClusterNode and *Local, for the HTTP API and the CLI.
type RateController interface {
	SetRate(ctx context.Context, jobType string, r throttler.Rate, strict bool) error
	Rates(ctx context.Context) ([]RateStatus, error)
}

var (
	_ RateController = (*ClusterNode)(nil)
	_ RateController = (*Local)(nil)
)
