package pullcluster

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/foreman-actors/foreman/actors/pulling"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/messages"
)

// retryEvery is the pause between attempts of a cluster request that failed
// (the master's member just died, the membership is converging).
const retryEvery = 100 * time.Millisecond

// Route returns the route to the master of Epic name through the cluster,
// for pulling.RouteWorkerProps: each Resolve looks the master up
// (activating it on its owner if needed) and never answers with an
// activation on a node that is no longer a member.
func (n *Node) Route(name string) route.Master {
	return route.Resolver(func(ctx context.Context) (*actor.PID, error) {
		if n.stopped.Load() {
			return nil, fmt.Errorf("pullcluster: the node has stopped")
		}
		ch := make(chan *actor.PID, 1)
		n.lookups.Add(1)
		go func() { // protoactor's lookup takes no context: it ends at its request timeout
			defer n.lookups.Done()
			ch <- n.c.Get(name, n.cfg.Kind)
		}()
		select {
		case pid := <-ch:
			switch {
			case pid == nil:
				return nil, fmt.Errorf("pullcluster: the master of epic %q cannot be activated now", name)
			case !n.isMember(pid.GetAddress()):
				return nil, fmt.Errorf("pullcluster: the master of epic %q was found on %s, which is not a member now", name, pid.GetAddress())
			}
			return pid, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
}

// WorkerProps returns the props of a worker that pulls from the master of
// Epic name wherever it is in the cluster (pulling.RouteWorkerProps over
// [Node.Route]): it re-resolves the master every second
// (pulling.WithRegisterInterval changes that) and when the master
// terminates. Give it pulling.WithCodec when the master may be on another
// node.
func WorkerProps[T any](n *Node, name string, do pulling.DoFunc[T], opts ...pulling.Option) (*actor.Props, error) {
	opts = append([]pulling.Option{pulling.WithLogger(n.log)}, opts...)
	return pulling.RouteWorkerProps(n.Route(name), do, opts...)
}

// AsyncWorkerProps is WorkerProps for work that reports its completion
// through a callback (pulling.AsyncRouteWorkerProps).
func AsyncWorkerProps[T any](n *Node, name string, do pulling.AsyncFunc[T], opts ...pulling.Option) (*actor.Props, error) {
	opts = append([]pulling.Option{pulling.WithLogger(n.log)}, opts...)
	return pulling.AsyncRouteWorkerProps(n.Route(name), do, opts...)
}

// Start begins Epic name on its master, wherever the cluster places it, and
// returns the master's answer once the start is durable. It is idempotent:
// starting an Epic that has begun (or finished) returns its progress and
// changes nothing. It retries until ctx ends while the master cannot be
// reached.
func (n *Node) Start(ctx context.Context, name string) (*messages.PullingProgress, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: empty epic name", ErrInvalidConfig)
	}
	p, err := n.ask(ctx, name, &messages.PullingStartEpic{Name: name})
	if err != nil {
		return nil, fmt.Errorf("pullcluster: start epic %q: %w", name, err)
	}
	if p.GetError() != "" && !p.GetDone() {
		return p, fmt.Errorf("pullcluster: start epic %q: %s", name, p.GetError())
	}
	return p, nil
}

// Progress returns the durable progress of Epic name (finished items over
// every activation, whether it is done, its error) with the counters of
// its current activation. It retries until ctx ends while the master cannot
// be reached.
func (n *Node) Progress(ctx context.Context, name string) (*messages.PullingProgress, error) {
	p, err := n.ask(ctx, name, &messages.PullingGetProgress{})
	if err != nil {
		return nil, fmt.Errorf("pullcluster: progress of epic %q: %w", name, err)
	}
	return p, nil
}

// Wait polls the progress of Epic name every interval until the Epic is
// done and returns its final progress, or ctx's error. An Epic that ended
// with an error is returned with that error.
func (n *Node) Wait(ctx context.Context, name string, every time.Duration) (*messages.PullingProgress, error) {
	if every <= 0 {
		return nil, fmt.Errorf("%w: poll interval %s, want more than 0", ErrInvalidConfig, every)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		p, err := n.Progress(ctx, name)
		if err != nil {
			return nil, err
		}
		if p.GetDone() {
			if p.GetError() != "" {
				return p, fmt.Errorf("pullcluster: epic %q failed: %s", name, p.GetError())
			}
			return p, nil
		}
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-t.C:
		}
	}
}

// ask sends msg to the master of Epic name until it answers with a
// progress or ctx ends.
func (n *Node) ask(ctx context.Context, name string, msg any) (*messages.PullingProgress, error) {
	for {
		timeout := n.cfg.RequestTimeout
		if dl, ok := ctx.Deadline(); ok {
			timeout = min(timeout, time.Until(dl))
		}
		if timeout <= 0 {
			return nil, ctx.Err()
		}
		res, err := n.c.Request(name, n.cfg.Kind, msg, cluster.WithTimeout(timeout))
		if err == nil {
			if p, ok := res.(*messages.PullingProgress); ok {
				return p, nil
			}
			err = fmt.Errorf("unexpected answer %T", res)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last attempt: %w)", ctx.Err(), err)
		case <-time.After(retryEvery):
		}
	}
}
