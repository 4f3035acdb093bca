package frontend

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/messages"
)

// Ok answers a Work sent to the Frontend actor: the master acknowledged it,
// so it is durable.
type Ok struct {
	// WorkID is the acknowledged work's id.
	WorkID string
}

// NotOk answers a Work sent to the Frontend actor: the master did not
// acknowledge it in time or rejected it. The sender may retry with the
// same id.
type NotOk struct {
	// WorkID is the work's id.
	WorkID string
	// Err says why: it matches ErrTimeout, route.ErrNoMaster, ErrRejected, ...
	Err error
}

// Props returns the props of the Frontend actor: it takes *messages.Work
// from local senders (the WorkProducer, an HTTP handler's actor), asks the
// master with the ask timeout (default 5 s) and answers the sender Ok or
// NotOk, as the sample's Frontend does. Each request is one attempt; the
// sender decides about retries. It reads WithAskTimeout and WithLogger.
func Props(master route.Master, opts ...Option) (*actor.Props, error) {
	if err := master.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	if _, err := newConfig(opts); err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor { return &frontendActor{master: master, opts: opts} }), nil
}

// frontendActor asks the master from one goroutine per request, so a slow
// master does not block other requests; the goroutines touch no actor
// state and are waited for when the actor stops.
type frontendActor struct {
	master route.Master
	opts   []Option
	client *Client
	log    *slog.Logger
	// ctx is the actor's lifetime context: cancelled when it stops, so
	// requests in flight end at once.
	ctx    context.Context //nolint:containedctx // the actor's lifetime: cancelled on Stopping so requests in flight end; never a caller's context
	cancel context.CancelFunc
	wg     sync.WaitGroup // request goroutines in flight
}

// Receive handles Work and lifecycle messages.
func (f *frontendActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		client, err := NewClient(c.ActorSystem(), f.master, f.opts...)
		if err != nil {
			panic(err) // validated in Props
		}
		f.client = client
		f.log = client.log.With("component", "frontend")
		f.ctx, f.cancel = context.WithCancel(context.Background())
	case *messages.Work:
		sender := c.Sender()
		if sender == nil {
			f.log.Warn("Work without a sender dropped; send it with Request so the answer has somewhere to go", "work_id", m.GetWorkId())
			return
		}
		sys, client, ctx := c.ActorSystem(), f.client, f.ctx
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			if err := client.SubmitOnce(ctx, m); err != nil {
				sys.Root.Send(sender, &NotOk{WorkID: m.GetWorkId(), Err: err})
				return
			}
			sys.Root.Send(sender, &Ok{WorkID: m.GetWorkId()})
		}()
	case *actor.Stopping:
		f.cancel()
	case *actor.Stopped:
		f.wg.Wait()
	}
}
