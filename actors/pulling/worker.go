package pulling

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/messages"
)

// DoFunc does the work for one item and returns when it is done. The worker
// runs it in its own goroutine (at most window at once) so that it stays
// responsive; a panic counts as an error. ctx is cancelled when the worker
// stops.
type DoFunc[T any] func(ctx context.Context, item T) error

// AsyncFunc starts the work for one item and returns at once; it calls done
// exactly once, from any goroutine, when the work has finished. It runs in
// the worker's actor goroutine, so it must not block (send a message, start
// a request, hand the item to another actor). Extra calls of done are
// ignored.
type AsyncFunc[T any] func(ctx context.Context, item T, done func(error))

// WorkerProps returns the props of a worker that pulls items of type T from
// master and runs do for each. Options: WithWindow, WithCodec (needed when
// the master is on another node), WithLogger.
func WorkerProps[T any](master *actor.PID, do DoFunc[T], opts ...Option) (*actor.Props, error) {
	if do == nil {
		return nil, fmt.Errorf("%w: nil DoFunc", ErrInvalidConfig)
	}
	return AsyncWorkerProps(master, func(ctx context.Context, item T, done func(error)) {
		go func() {
			var err error
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("pulling: work panicked: %v\n%s", r, debug.Stack())
				}
				done(err)
			}()
			err = do(ctx, item)
		}()
	}, opts...)
}

// AsyncWorkerProps is WorkerProps for work that reports its completion
// through a callback.
func AsyncWorkerProps[T any](master *actor.PID, do AsyncFunc[T], opts ...Option) (*actor.Props, error) {
	if master == nil {
		return nil, fmt.Errorf("%w: nil master pid", ErrInvalidConfig)
	}
	if do == nil {
		return nil, fmt.Errorf("%w: nil AsyncFunc", ErrInvalidConfig)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	codec, err := codecFor[T](cfg)
	if err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor {
		// A fresh PID per worker: protoactor caches the process in a PID, and
		// a PID shared by two actor systems in one process would route wrongly.
		return &worker[T]{master: actor.NewPID(master.Address, master.Id), do: do, codec: codec, window: cfg.window, logger: cfg.logger}
	}), nil
}

type completed struct {
	id  ItemID
	err error
}

type worker[T any] struct {
	master *actor.PID
	do     AsyncFunc[T]
	codec  Codec[T]
	window int
	logger *slog.Logger

	log      *slog.Logger
	self     *actor.PID
	root     *actor.RootContext
	inflight int
	ctx      context.Context //nolint:containedctx // the actor's lifetime: cancelled on Stopping so running work ends; never a caller's context
	cancel   context.CancelFunc
}

func (w *worker[T]) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case *actor.Started:
		w.self, w.root = c.Self(), c.ActorSystem().Root
		w.log = w.logger.With("component", "pulling_worker", "pid", c.Self().String())
		w.ctx, w.cancel = context.WithCancel(context.Background())
		c.Send(w.master, &messages.PullingRegister{Worker: w.self, Window: uint32(w.window)})
		w.ask(c)
	case *actor.Stopping:
		w.cancel()
	case *messages.PullingWorkAvailable:
		w.ask(c)
	case *Work[T]:
		w.start(c, msg.ID, msg.Item)
	case *messages.PullingWork:
		w.startRemote(c, msg)
	case *completed:
		w.inflight--
		done := &messages.PullingWorkDone{Worker: w.self, ItemId: uint64(msg.id), Credit: 1}
		if msg.err != nil {
			done.Error = msg.err.Error()
			w.log.Warn("work failed", "item", uint64(msg.id), "error", msg.err)
		}
		c.Send(w.master, done)
	}
}

// ask asks the master for as many items as the window has room for.
func (w *worker[T]) ask(c actor.Context) {
	if credit := w.window - w.inflight; credit > 0 {
		c.Send(w.master, &messages.PullingGimmeWork{Worker: w.self, Credit: uint32(credit)})
	}
}

func (w *worker[T]) startRemote(c actor.Context, msg *messages.PullingWork) {
	var item T
	err := ErrNoCodec
	if w.codec != nil {
		item, err = w.codec.Decode(msg.GetPayload())
	}
	if err != nil {
		w.log.Error("cannot decode item", "item", msg.GetItemId(), "error", err)
		c.Send(w.master, &messages.PullingWorkDone{
			Worker: w.self, ItemId: msg.GetItemId(), Error: fmt.Sprintf("pulling: decode item: %v", err), Credit: 1,
		})
		return
	}
	w.start(c, ItemID(msg.GetItemId()), item)
}

func (w *worker[T]) start(c actor.Context, id ItemID, item T) {
	w.inflight++
	root, self := w.root, w.self
	var once sync.Once
	done := func(err error) {
		once.Do(func() { root.Send(self, &completed{id: id, err: err}) })
	}
	defer func() {
		if r := recover(); r != nil {
			done(fmt.Errorf("pulling: work panicked: %v\n%s", r, debug.Stack()))
		}
	}()
	w.do(w.ctx, item, done)
}
