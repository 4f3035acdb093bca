package pulling

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/messages"
)

// Run starts epic on master and blocks until the Epic ends, returning its
// final Stats. It returns an error wrapping [ErrBusy] when another Epic is
// running, the Epic's error when it was aborted, and ctx.Err() when ctx ends
// first (the Epic keeps running then).
func Run[T any](ctx context.Context, root *actor.RootContext, master *actor.PID, epic Epic[T]) (Stats, error) {
	type result struct {
		stats Stats
		err   error
	}
	ch := make(chan result, 1)
	pid := root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch msg := c.Message().(type) {
		case *actor.Started:
			c.Request(master, &StartEpic[T]{Epic: epic})
		case *CurrentlyBusy:
			ch <- result{err: msg.Err}
		case *EpicDone:
			ch <- result{stats: msg.Stats, err: msg.Err}
		}
	}))
	defer root.Stop(pid)
	select {
	case r := <-ch:
		return r.stats, r.err
	case <-ctx.Done():
		return Stats{}, ctx.Err()
	}
}

// Progress asks master for its Stats, waiting at most until ctx's deadline
// (or DefaultProgressTimeout when ctx has none).
func Progress(ctx context.Context, root *actor.RootContext, master *actor.PID) (Stats, error) {
	timeout := DefaultProgressTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	res, err := root.RequestFuture(master, &messages.PullingGetProgress{}, timeout).Result()
	if err != nil {
		return Stats{}, fmt.Errorf("pulling: progress of %s: %w", master, err)
	}
	p, ok := res.(*messages.PullingProgress)
	if !ok {
		return Stats{}, fmt.Errorf("pulling: progress of %s: unexpected answer %T", master, res)
	}
	return StatsFromProgress(p), nil
}

// DefaultProgressTimeout bounds [Progress] when its context has no deadline.
const DefaultProgressTimeout = 5 * time.Second
