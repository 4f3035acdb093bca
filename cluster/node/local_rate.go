package node

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/throttler"
	"github.com/foreman-actors/foreman/messages"
)

// WithRateLimits limits the dispatch of job types (--rate): each limited
// type gets the same throttler actor a cluster runs
// (throttler.PermitThrottlerProps), journaling its rate and grants to the
// node's journal, and the master hands work of the type out only with its
// permits. The node's master is one actor that nothing re-activates, so the
// throttler takes no lease, as the master takes none.
func WithRateLimits(limits []RateLimit) LocalOption {
	return func(c *localConfig) { c.rateLimits = append(c.rateLimits, limits...) }
}

// startThrottlers spawns the throttler of each limit and returns the
// master options that make the master ask them.
func (n *Local) startThrottlers(cfg localConfig, log *slog.Logger) ([]master.Option, error) {
	if len(cfg.rateLimits) == 0 {
		return nil, nil
	}
	n.throttles = map[string]*actor.PID{}
	for _, l := range cfg.rateLimits {
		if _, dup := n.throttles[l.JobType]; dup {
			return nil, fmt.Errorf("%w: rate limit %s: job type %q is limited twice", ErrInvalidConfig, l, l.JobType)
		}
		props, err := throttlerProps(n.jrnl, l, cfg.metrics, log.With("component", "throttler"))
		if err != nil {
			return nil, err
		}
		pid, err := n.sys.Root.SpawnNamed(props, ThrottleKind(l.JobType))
		if err != nil {
			return nil, fmt.Errorf("node: spawn the throttler of %q: %w", l.JobType, err)
		}
		n.throttles[l.JobType] = pid
	}
	asker := newPermitAsker(log)
	if err := asker.start(n.sys, func(jobType string) *actor.PID { return n.throttles[jobType] }); err != nil {
		return nil, err
	}
	return asker.permitOptions(cfg.rateLimits), nil
}

// stopThrottlers stops the throttlers, which hand their last events to the
// journal first.
func (n *Local) stopThrottlers() {
	for _, jobType := range slices.Sorted(maps.Keys(n.throttles)) {
		if err := n.sys.Root.StopFuture(n.throttles[jobType]).Wait(); err != nil {
			n.log.Warn("stopping a throttler", "job_type", jobType, "error", err)
		}
	}
	n.throttles = nil
}

// localAsk asks jobType's throttler, bounded by ctx.
func (n *Local) localAsk(ctx context.Context, jobType string, msg any) (any, error) {
	pid := n.throttles[jobType]
	if pid == nil {
		limited := slices.Sorted(maps.Keys(n.throttles))
		return nil, fmt.Errorf("%w: %q is not limited (limited: %q); give it a rate with --rate", ErrNotLimited, jobType, limited)
	}
	f := n.sys.Root.RequestFuture(pid, msg, DefaultClusterAskLimit)
	done := make(chan struct{})
	var res any
	var err error
	go func() {
		res, err = f.Result()
		close(done)
	}()
	select {
	case <-done:
		return res, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// SetRate changes jobType's rate: the throttler records it in its journal
// stream before it answers, so a restart keeps it (see ClusterNode.SetRate).
func (n *Local) SetRate(ctx context.Context, jobType string, r throttler.Rate, strict bool) error {
	msg, err := setRateMsg(jobType, r, strict)
	if err != nil {
		return err
	}
	res, err := n.localAsk(ctx, jobType, msg)
	if err != nil {
		return err
	}
	return statusOf(jobType, res, nil).Err
}

// Rates reports the node's throttlers, sorted by job type.
func (n *Local) Rates(ctx context.Context) ([]RateStatus, error) {
	types := slices.Sorted(maps.Keys(n.throttles))
	out := make([]RateStatus, 0, len(types))
	for _, jobType := range types {
		res, err := n.localAsk(ctx, jobType, &messages.ThrottleGetStatus{JobType: jobType})
		out = append(out, statusOf(jobType, res, err))
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	return out, nil
}
