package pulling

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/route"
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
	return AsyncWorkerProps(master, goAsync(do), opts...)
}

// AsyncWorkerProps is WorkerProps for work that reports its completion
// through a callback.
func AsyncWorkerProps[T any](master *actor.PID, do AsyncFunc[T], opts ...Option) (*actor.Props, error) {
	if master == nil {
		return nil, fmt.Errorf("%w: nil master pid", ErrInvalidConfig)
	}
	return AsyncRouteWorkerProps(route.Fixed(master), do, opts...)
}

// RouteWorkerProps returns the props of a worker that finds its master
// through r (actors/route), for masters that move: a durable master that
// is a cluster kind (cluster/pullcluster). With a resolver route the worker
// resolves the master when it starts, again every register interval
// (WithRegisterInterval) and at once when the master it watches
// terminates; it registers with each master it finds (every interval, so
// a new activation at the same PID learns it) and asks a new one for work
// at once. Confirmations made while no master is known wait for the next.
// Options: those of WorkerProps, WithRegisterInterval, WithClock.
func RouteWorkerProps[T any](r route.Master, do DoFunc[T], opts ...Option) (*actor.Props, error) {
	if do == nil {
		return nil, fmt.Errorf("%w: nil DoFunc", ErrInvalidConfig)
	}
	return AsyncRouteWorkerProps(r, goAsync(do), opts...)
}

// AsyncRouteWorkerProps is RouteWorkerProps for work that reports its
// completion through a callback.
func AsyncRouteWorkerProps[T any](r route.Master, do AsyncFunc[T], opts ...Option) (*actor.Props, error) {
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
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
		return &worker[T]{route: r, do: do, codec: codec, window: cfg.window, logger: cfg.logger,
			clock: cfg.clock, interval: cfg.registerInterval}
	}), nil
}

// goAsync runs do in a goroutine of its own per item; a panic counts as an
// error.
func goAsync[T any](do DoFunc[T]) AsyncFunc[T] {
	return func(ctx context.Context, item T, done func(error)) {
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
	}
}

type completed struct {
	id  ItemID
	err error
}

// Internal messages of a route worker.
type (
	resolved struct {
		pid *actor.PID
		err error
	}
	registerTick struct{}
)

type worker[T any] struct {
	route    route.Master
	do       AsyncFunc[T]
	codec    Codec[T]
	window   int
	logger   *slog.Logger
	clock    clock.Clock
	interval time.Duration

	master    *actor.PID // nil while none is known
	resolving bool
	tick      clock.Timer
	unsent    []*messages.PullingWorkDone // confirmations made while no master was known

	log      *slog.Logger
	self     *actor.PID
	wire     *messages.PID // self as the protocol names it
	root     *actor.RootContext
	inflight int
	ctx      context.Context //nolint:containedctx // the actor's lifetime: cancelled on Stopping so running work ends; never a caller's context
	cancel   context.CancelFunc
}

func (w *worker[T]) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case *actor.Started:
		w.self, w.root = c.Self(), c.ActorSystem().Root
		w.wire = pids.Wire(w.self)
		w.log = w.logger.With("component", "pulling_worker", "pid", c.Self().String())
		w.ctx, w.cancel = context.WithCancel(context.Background())
		if !w.route.IsResolver() {
			pid, _ := w.route.Resolve(w.ctx) // a fixed route answers at once
			w.setMaster(c, pid)
			return
		}
		w.resolve()
		w.armTick()
	case *actor.Stopping:
		w.cancel()
		if w.tick != nil {
			w.tick.Stop()
		}
	case *resolved:
		w.resolving = false
		if msg.err != nil {
			w.log.Debug("master not found; will look again", "error", msg.err, "in", w.interval)
			return
		}
		w.setMaster(c, msg.pid)
	case registerTick:
		w.resolve()
		w.armTick()
	case *actor.Terminated:
		if w.master != nil && msg.GetWho().GetAddress() == w.master.GetAddress() && msg.GetWho().GetId() == w.master.GetId() {
			w.log.Info("master terminated; looking for its successor", "master", w.master.String())
			w.route.Forget(w.master)
			w.master = nil
			w.resolve()
		}
	case *messages.PullingWorkAvailable:
		w.ask(c)
	case *Work[T]:
		w.start(c, msg.ID, msg.Item)
	case *messages.PullingWork:
		w.startRemote(c, msg)
	case *completed:
		w.inflight--
		done := &messages.PullingWorkDone{Worker: w.wire, ItemId: uint64(msg.id), Credit: 1}
		if msg.err != nil {
			done.Error = msg.err.Error()
			w.log.Warn("work failed", "item", uint64(msg.id), "error", msg.err)
		}
		w.sendDone(c, done)
	}
}

// resolve looks the master up off the actor's goroutine (a cluster lookup
// blocks); the answer comes back as *resolved.
func (w *worker[T]) resolve() {
	if w.resolving {
		return
	}
	w.resolving = true
	r, root, self, parent := w.route, w.root, w.self, w.ctx
	timeout := max(w.interval, time.Second)
	go func() {
		ctx, cancel := context.WithTimeout(parent, timeout)
		defer cancel()
		pid, err := r.Resolve(ctx)
		root.Send(self, &resolved{pid: pid, err: err})
	}()
}

func (w *worker[T]) armTick() {
	root, self := w.root, w.self
	w.tick = w.clock.AfterFunc(w.interval, func() { root.Send(self, registerTick{}) })
}

// setMaster registers with pid; a master new to this worker is watched
// (resolver routes) and asked for work at once.
func (w *worker[T]) setMaster(c actor.Context, pid *actor.PID) {
	if pid == nil {
		return
	}
	same := w.master != nil && w.master.GetAddress() == pid.GetAddress() && w.master.GetId() == pid.GetId()
	if !same {
		if w.master != nil && w.route.IsResolver() {
			c.Unwatch(w.master)
		}
		// A fresh PID per worker: protoactor caches the process in a PID,
		// and a PID shared by two actor systems in one process would route
		// wrongly.
		w.master = actor.NewPID(pid.GetAddress(), pid.GetId())
		if w.route.IsResolver() {
			c.Watch(w.master)
			w.log.Info("master found", "master", w.master.String())
		}
	}
	c.Send(w.master, &messages.PullingRegister{Worker: w.wire, Window: uint32(w.window)})
	if same {
		return
	}
	for _, d := range w.unsent {
		c.Send(w.master, d)
	}
	w.unsent = nil
	w.ask(c)
}

func (w *worker[T]) sendDone(c actor.Context, done *messages.PullingWorkDone) {
	if w.master == nil {
		w.unsent = append(w.unsent, done)
		return
	}
	c.Send(w.master, done)
}

// ask asks the master for as many items as the window has room for.
func (w *worker[T]) ask(c actor.Context) {
	if w.master == nil {
		return // asked when a master is found
	}
	if credit := w.window - w.inflight; credit > 0 {
		c.Send(w.master, &messages.PullingGimmeWork{Worker: w.wire, Credit: uint32(credit)})
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
		w.sendDone(c, &messages.PullingWorkDone{
			Worker: w.wire, ItemId: msg.GetItemId(), Error: fmt.Sprintf("pulling: decode item: %v", err), Credit: 1,
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
