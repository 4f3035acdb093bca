package node

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/cluster"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/throttler"
	"github.com/foreman-actors/foreman/messages"
)

// Cluster-wide rate limits (ClusterConfig.RateLimits): one throttler actor
// per limited job type, a cluster kind every backend registers, so the
// cluster places exactly one activation and moves it when its node leaves.
// It owns the type's Issuer. Every master shard hands work of the type out
// only with a permit from its PermitPool, which asks that actor for permits
// in small batches, without ever blocking the master.

// ThrottleKind returns the cluster kind of the throttler of jobType:
// "throttle-" and the type, path-escaped (a kind must not contain "/"; see
// ShardKind). Its identity is the job type.
func ThrottleKind(jobType string) string { return throttleKindPrefix + url.PathEscape(jobType) }

// issuerOptions are the Issuer's options for a limit.
func issuerOptions(l RateLimit, log *slog.Logger) []throttler.IssuerOption {
	opts := []throttler.IssuerOption{throttler.WithIssuerLogger(log)}
	if l.Strict {
		opts = append(opts, throttler.WithIssuerMode(throttler.ModeSlidingWindow))
	}
	return opts
}

// throttleKinds returns the kinds of the throttlers of limits.
func throttleKinds(limits []RateLimit, log *slog.Logger) ([]*cluster.Kind, error) {
	kinds := make([]*cluster.Kind, 0, len(limits))
	seen := map[string]bool{}
	for _, l := range limits {
		if seen[l.JobType] {
			return nil, fmt.Errorf("%w: rate limit %s: job type %q is limited twice", ErrInvalidConfig, l, l.JobType)
		}
		seen[l.JobType] = true
		props, err := throttler.IssuerProps(l.JobType, l.Rate, clock.Real, issuerOptions(l, log)...)
		if err != nil {
			return nil, fmt.Errorf("%w: rate limit %s: %w", ErrInvalidConfig, l, err)
		}
		kinds = append(kinds, cluster.NewKind(ThrottleKind(l.JobType), props))
	}
	return kinds, nil
}

// permitAsker sends PermitRequests for the master shards of one process
// once the cluster runs.
type permitAsker struct {
	c   atomic.Pointer[cluster.Cluster] // set once the cluster is built
	log *slog.Logger
}

// permitOptions returns, for one master shard, a dispatch limiter per
// limit: a PermitPool fed by the type's throttler.
func (a *permitAsker) permitOptions(limits []RateLimit) []master.Option {
	opts := make([]master.Option, 0, len(limits))
	for _, l := range limits {
		var pool *throttler.PermitPool
		pool = throttler.NewPermitPool(func(want int) { go a.ask(l.JobType, want, pool) }, 0)
		opts = append(opts, master.WithDispatchLimiter(l.JobType, pool))
	}
	return opts
}

// ask requests want permits for jobType and adds the grant to pool. A
// failed request is only logged: the pool asks again after its timeout.
func (a *permitAsker) ask(jobType string, want int, pool *throttler.PermitPool) {
	c := a.c.Load()
	if c == nil {
		return // not started yet; the pool asks again
	}
	res, err := c.Request(jobType, ThrottleKind(jobType), &messages.PermitRequest{JobType: jobType, Want: int32(want)})
	if err != nil {
		a.log.Debug("asking the throttler for permits", "job_type", jobType, "error", err)
		return
	}
	g, ok := res.(*messages.PermitGrant)
	switch {
	case !ok:
		a.log.Warn("the throttler answered a permit request with something else", "job_type", jobType, "type", fmt.Sprintf("%T", res))
		return
	case g.GetError() != "":
		a.log.Warn("the throttler refused a permit request", "job_type", jobType, "error", g.GetError())
		return
	}
	pool.Add(throttler.GrantPermits(g))
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

// Throttlers says where each cluster-wide rate limit's throttler runs: the
// limited types are those whose throttler kind a member registers (every
// backend registers the kinds of its --rate), so any node can answer, a
// frontend included. Looking a throttler up places it if it had no
// activation, as a master's first permit request would. Sorted by type;
// empty without cluster-wide limits. ctx bounds the lookups.
func (n *ClusterNode) Throttlers(ctx context.Context) []ThrottlerPlace {
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
	places := make([]ThrottlerPlace, 0, len(types))
	for _, jobType := range slices.Sorted(maps.Keys(types)) {
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
