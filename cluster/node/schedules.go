package node

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/cluster"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/schedule"
	"github.com/foreman-actors/foreman/actors/schedule/core"
	"github.com/foreman-actors/foreman/cluster/metrics"
	"github.com/foreman-actors/foreman/messages"
)

// Periodic jobs: one scheduler (actors/schedule) per cluster, a singleton
// kind every backend registers, like the master: the cluster places it,
// its lease on the journal stream "schedules" keeps a second activation
// from firing, and a backend's keep-alive touches it so that it comes back
// on another backend soon after its node dies. It submits each tick's job
// to the masters like any frontend, through a client over the node's route.
// On the all-in-one node the scheduler is a plain actor beside the master.

// Names of the scheduler in the cluster.
const (
	// SchedulerKind is the cluster kind of the scheduler.
	SchedulerKind = "scheduler"
	// SchedulerIdentity is its fixed identity.
	SchedulerIdentity = "scheduler"
)

// DefaultScheduleTimeout bounds one request to the scheduler.
const DefaultScheduleTimeout = 5 * time.Second

// lateSubmitter is the scheduler's Submitter on a backend: the client is
// made once the cluster runs, after the kinds are registered.
type lateSubmitter struct {
	client atomic.Pointer[frontend.Client]
}

func (s *lateSubmitter) Submit(ctx context.Context, w *messages.Work) error {
	c := s.client.Load()
	if c == nil {
		return fmt.Errorf("node: the cluster is still starting; the scheduler retries")
	}
	return c.Submit(ctx, w)
}

// schedulerKind builds the scheduler's kind for a backend.
func (n *ClusterNode) schedulerKind(log *slog.Logger) (*cluster.Kind, error) {
	own := newMasterOwnership(n.sys, SchedulerKind, SchedulerIdentity)
	n.ownership = append(n.ownership, own)
	guard := own.Owns
	if p, ok := n.cfg.Provider.(cutOffReporter); ok {
		guard = func() bool { return own.Owns() && !p.CutOff() }
	}
	ttl := 300 * time.Millisecond
	if d, ok := masterLeaseFor(n.cfg.Provider); ok {
		ttl = d
	}
	n.schedSub = &lateSubmitter{}
	opts := []schedule.Option{
		schedule.WithLogger(log),
		schedule.WithLease(ttl), schedule.WithLeaseGuard(guard),
		schedule.WithFenceCheck(250 * time.Millisecond),
	}
	if n.cfg.Metrics != nil {
		opts = append(opts, schedule.WithObserver(n.cfg.Metrics.SchedulerObserver()))
	}
	props, err := schedule.Props(n.jrnl, n.schedSub, opts...)
	if err != nil {
		return nil, err
	}
	return cluster.NewKind(SchedulerKind, props), nil
}

// startScheduler gives a backend's scheduler its client and keeps it
// activated.
func (n *ClusterNode) startScheduler(bg context.Context) error {
	c, err := frontend.NewClient(n.sys, n.route, frontend.WithLogger(n.log),
		frontend.WithAskTimeout(DefaultFrontendAskTimeout), frontend.WithRetryBackoff(20*time.Millisecond, 500*time.Millisecond))
	if err != nil {
		return err
	}
	n.schedSub.client.Store(c)
	n.loop(bg, n.cfg.KeepAlive, func(ctx context.Context) {
		// Bounded like the master's keep-alive; the answer does not matter.
		_, _ = n.c.Request(SchedulerIdentity, SchedulerKind, &messages.ScheduleRequest{Op: "list"}, cluster.WithTimeout(time.Second))
	})
	return nil
}

// Schedules sends req to the cluster's scheduler (placing it if it has no
// activation) and returns its reply; ctx bounds the wait.
func (n *ClusterNode) Schedules(ctx context.Context, req *messages.ScheduleRequest) (*messages.ScheduleReply, error) {
	return askScheduler(ctx, func(timeout time.Duration) (any, error) {
		return n.c.Request(SchedulerIdentity, SchedulerKind, req, cluster.WithTimeout(timeout))
	})
}

// Schedules sends req to the node's scheduler; ctx bounds the wait.
func (n *Local) Schedules(ctx context.Context, req *messages.ScheduleRequest) (*messages.ScheduleReply, error) {
	return askScheduler(ctx, func(timeout time.Duration) (any, error) {
		return n.sys.Root.RequestFuture(n.scheduler, req, timeout).Result()
	})
}

func askScheduler(ctx context.Context, ask func(time.Duration) (any, error)) (*messages.ScheduleReply, error) {
	// A scheduler that is recovering or waiting for its lease (just after
	// a start or a failover) answers "unavailable" at once: ask again
	// until ctx ends, so that a request right after a start succeeds.
	for {
		timeout := DefaultScheduleTimeout
		if d, ok := ctx.Deadline(); ok {
			timeout = max(time.Until(d), time.Millisecond)
		}
		res, err := ask(timeout)
		var rep *messages.ScheduleReply
		switch r, ok := res.(*messages.ScheduleReply); {
		case err != nil:
			rep = &messages.ScheduleReply{Code: core.CodeUnavailable, Error: fmt.Sprintf("the scheduler did not answer: %v; retry in a second", err)}
		case !ok:
			return nil, fmt.Errorf("node: the scheduler answered with a %T", res)
		default:
			rep = r
		}
		if rep.GetCode() != core.CodeUnavailable {
			return rep, nil
		}
		select {
		case <-ctx.Done():
			return rep, nil
		case <-time.After(askSchedulerRetry):
		}
	}
}

// askSchedulerRetry is the pause before asking an unavailable scheduler again.
const askSchedulerRetry = 50 * time.Millisecond

// startLocalScheduler spawns the all-in-one node's scheduler: no lease
// (nothing else activates it), submitting through the node's client.
func (n *Local) startLocalScheduler(log *slog.Logger, m *metrics.Metrics) error {
	opts := []schedule.Option{schedule.WithLogger(log)}
	if m != nil {
		opts = append(opts, schedule.WithObserver(m.SchedulerObserver()))
	}
	props, err := schedule.Props(n.jrnl, n.client, opts...)
	if err != nil {
		return err
	}
	pid, err := n.sys.Root.SpawnNamed(props, "scheduler")
	if err != nil {
		return fmt.Errorf("node: spawn scheduler: %w", err)
	}
	n.scheduler = pid
	return nil
}

// stopScheduler stops the all-in-one node's scheduler, before the master.
func (n *Local) stopScheduler() error {
	if n.scheduler == nil {
		return nil
	}
	if err := n.sys.Root.StopFuture(n.scheduler).Wait(); err != nil {
		return fmt.Errorf("node: stop scheduler: %w", err)
	}
	return nil
}
