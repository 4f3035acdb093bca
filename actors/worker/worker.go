package worker

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/adaptive"
	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/worker/core"
	"github.com/foreman-actors/foreman/messages"
)

// Props returns the props of a Worker that pulls work from master and runs
// it with the job functions of reg. Spawn it once per worker (a node runs K
// of them); each instance gets its own random id unless WithWorkerID is used.
// It fails when master is empty, reg is nil or an option is out of range.
//
// With a sharded route (route.Sharded) the worker registers with every
// shard's master, asks those that told it work is ready (WorkIsReady) or
// just sent it work, and reports each result to its work's shard
// (route.ShardOf); work beyond its window that several masters sent at
// once waits in its queue.
func Props(master route.Master, reg *Registry, opts ...Option) (*actor.Props, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := master.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	if reg == nil {
		return nil, fmt.Errorf("%w: nil registry; use NewRegistry and RegisterBuiltins", ErrInvalidOption)
	}
	if err := cfg.settle(); err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor {
		id := cfg.workerID
		if id == "" {
			id = newWorkerID()
		}
		return &workerActor{cfg: cfg, master: master, reg: reg, id: id}
	}, actor.WithDispatcher(newExecDispatcher(1, execIdle))), nil // its runs too keep the stack they grew (dispatch.go)
}

// resolved is a resolver call's answer, which the worker sends itself.
type resolved struct {
	shard int
	pid   *actor.PID
	err   error
}

// workerActor is the Worker shell: it turns protoactor's messages into the
// core's inputs and the core's effects into protoactor calls, and decides
// nothing (core decides). Every field is owned by the actor's goroutine,
// except wg, which its goroutines signal.
type workerActor struct {
	cfg    config
	master route.Master
	reg    *Registry
	id     string
	log    *slog.Logger
	core   *core.Worker
	now    time.Time // the time of the core's current step

	sys  *actor.ActorSystem
	self *actor.PID
	actx actor.Context // used on the worker's goroutine only
	// ctx is the worker's lifetime, cancelled with ErrWorkerStopping (Halt).
	ctx    context.Context //nolint:containedctx // the actor's lifetime: cancelled on Stopping so running jobs and resolver calls end; never a caller's context
	cancel context.CancelCauseFunc
	// jobs is the running jobs' parent ctx (a child of ctx), cancelled
	// with ErrDrainTimeout when a drain times out (CancelJobs).
	jobs       context.Context //nolint:containedctx // as ctx: the jobs' lifetime, never a caller's context
	cancelJobs context.CancelCauseFunc
	beaters    []*slotBeater  // per slot: its jobs' heartbeats (beat.go)
	wg         sync.WaitGroup // resolver and acquiring goroutines in flight

	// masters[k] is shard k's master as last found, wires[k] as the core
	// holds it (one value per master: a Send finds its PID).
	masters []*actor.PID
	wires   []*messages.PID

	execs        []*actor.PID
	execDispatch *execDispatcher // runs the executors' mailboxes (dispatch.go)
	slotOf       map[string]int  // executor PID id -> slot
	runs         []runRef        // per slot: the ctx of its job
	watchers     []watcherRef    // per slot: its passage's interest watcher

	timers   timerSet
	box      *permitBox // hands over permits from the acquirer
	permits  permitSet
	drainers []*actor.PID // senders of Drain, answered with Drained
}

// watcherRef is the interest watcher of a slot's passage seq.
type watcherRef struct {
	seq uint64
	pid *actor.PID
}

var _ actor.SupervisorStrategy = (*workerActor)(nil)

// Receive handles the worker's messages.
func (w *workerActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		w.start(c)
	case *fired:
		if w.timers.due(m) {
			w.do(w.core.Fired(w.clockNow(), m.name))
		}
	case *resolved:
		w.do(w.core.Resolved(w.clockNow(), m.shard, w.wireOf(m.shard, m.pid), m.err))
	case *actor.Terminated: // a master, or one of the worker's children
		if slices.ContainsFunc(w.masters, m.GetWho().Equal) {
			w.do(w.core.MasterTerminated(w.clockNow(), pids.Wire(m.GetWho())))
		}
	case *messages.WorkIsReady:
		w.do(w.core.WorkIsReady(w.clockNow(), pids.Wire(c.Sender())))
	case *messages.Work:
		w.do(w.core.Work(w.clockNow(), m))
	case *messages.WorkBundle:
		w.do(w.core.Bundle(w.clockNow(), m.GetWorks()))
	case *execResult:
		w.ran(m.slot)
		w.do(w.core.RunDone(w.clockNow(), m.slot, m.workID, m.result, m.err))
	case *messages.Ack:
		w.do(w.core.Ack(w.clockNow(), m.GetWorkId()))
	case *messages.AckBatch:
		w.do(w.core.Ack(w.clockNow(), m.GetWorkIds()...))
	case *core.Answer:
		w.do(w.core.Interest(w.clockNow(), *m))
	case *permitGranted:
		w.onPermit(m)
	case *permitFailed:
		w.onPermitFailed(m)
	case *Drain:
		if s := c.Sender(); s != nil {
			w.drainers = append(w.drainers, s)
		}
		w.do(w.core.DrainWithin(w.clockNow(), m.Timeout))
	case *beatMsg:
		w.do(w.core.Beat(w.clockNow(), m.slot, m.seq, m.progress))
	case *actor.Stopping:
		w.shutdown()
	case *actor.Restarting:
		w.shutdown()
		w.closeExecDispatch() // the restarted instance makes a new pool
	case *actor.Stopped:
		w.wg.Wait()
		w.closeExecDispatch()
	}
}

// clockNow reads the clock for a step of the core (Timers count from it).
func (w *workerActor) clockNow() time.Time {
	w.now = w.cfg.clock.Now()
	return w.now
}

// closeExecDispatch ends the executors' pool goroutines (safe at any time:
// executors that still run later get goroutines of their own).
func (w *workerActor) closeExecDispatch() {
	if w.execDispatch != nil {
		w.execDispatch.close()
		w.execDispatch = nil
	}
}

func (w *workerActor) start(c actor.Context) {
	w.sys, w.self, w.actx = c.ActorSystem(), c.Self(), c
	w.log = w.cfg.logger
	if w.log == nil {
		w.log = c.Logger()
	}
	w.log = w.log.With("component", "worker", "worker_id", w.id)
	w.ctx, w.cancel = context.WithCancelCause(context.Background())
	w.jobs, w.cancelJobs = context.WithCancelCause(w.ctx)
	n := w.master.Shards()
	w.masters, w.wires = make([]*actor.PID, n), make([]*messages.PID, n)
	for k := range n {
		if r := w.master.Shard(k); !r.IsResolver() {
			pid, _ := r.Resolve(w.ctx) // fixed PID: never blocks
			w.masters[k], w.wires[k] = pid, pids.Wire(pid)
		}
	}
	window := w.cfg.window
	w.execDispatch = newExecDispatcher(window, execIdle)
	w.execs, w.slotOf = make([]*actor.PID, window), make(map[string]int, window)
	for i := range w.execs {
		pid := c.Spawn(executorProps(i, w.reg, w.cfg.tracer, w.execDispatch))
		w.execs[i] = pid
		w.slotOf[pid.GetId()] = i
	}
	w.runs, w.watchers = make([]runRef, window), make([]watcherRef, window)
	w.beaters = make([]*slotBeater, window)
	for i := range w.beaters {
		w.beaters[i] = newSlotBeater(c.ActorSystem(), c.Self(), i, w.cfg.clock, w.cfg.beatInterval)
	}
	sys, self := w.sys, w.self
	w.timers = timerSet{clock: w.cfg.clock, send: func(m *fired) { sys.Root.Send(self, m) }, armed: make(map[string]timerRef)}
	w.permits, w.box = permitSet{held: make(map[uint64]*adaptive.Permit)}, newPermitBox()
	w.core = core.New(core.Config{
		ID: w.id, Self: pids.Wire(w.self), Types: w.reg.Types, Masters: append([]*messages.PID(nil), w.wires...),
		Known:  func(t string) bool { _, ok := w.reg.Lookup(t); return ok },
		Window: window, Prefetch: w.cfg.prefetch, MaxUnacked: w.cfg.maxUnacked, Limiter: w.cfg.limiter != nil,
		RegisterInterval: w.cfg.registerInterval, ResendInterval: w.cfg.resendInterval, ResultHold: w.cfg.resultHold,
		InterestTimeout: w.cfg.interestTimeout, InterestRetry: w.cfg.interestRetry, PermitIdle: w.cfg.permitIdle,
		NodeGone: w.cfg.waiterGone, OnWork: w.cfg.onWork, Debug: w.log.Enabled(context.Background(), slog.LevelDebug),
		BeatInterval: w.cfg.beatInterval, BeatTimeout: w.reg.HeartbeatTimeout,
	})
	w.do(w.core.Start(w.clockNow()))
}

// do carries out the core's effects, in order.
func (w *workerActor) do(effs []effect.Effect) {
	for _, e := range effs {
		switch e := e.(type) {
		case effect.Send:
			w.sys.Root.RequestWithCustomSender(w.pidOf(e.To), e.Msg, w.self)
		case effect.Log:
			w.log.Log(context.Background(), e.Level, e.Msg, e.Attrs...)
		case effect.Timer:
			w.timers.arm(e.Name, e.At.Sub(w.now))
		case effect.StopTimer:
			w.timers.stop(e.Name)
		case *core.Run:
			w.run(e)
		case core.Cancel:
			if r := w.runs[e.Slot]; r.seq == e.Seq && r.cancel != nil {
				r.cancel(e.Cause)
			}
		case core.Ask:
			if !w.sys.IsStopped() {
				w.watch(e)
			}
		case core.Unwatch:
			w.unwatch(e.Slot, e.Seq)
		case core.Yield:
			w.sys.Root.Send(w.self, yieldOf(e.Name))
		case core.Resolve:
			w.resolve(e.Shard)
		case core.WatchMaster:
			w.actx.Watch(w.pidOf(e.PID))
		case core.UnwatchMaster:
			w.actx.Unwatch(w.pidOf(e.PID))
		case core.Acquire:
			w.acquire()
		case core.Release:
			w.permits.end(e.Permit, true)
		case core.Abandon:
			w.permits.end(e.Permit, false)
		case core.Drained:
			for _, d := range w.drainers {
				w.sys.Root.Send(d, &Drained{WorkerID: w.id})
			}
			w.drainers = nil
			w.actx.Stop(w.self)
		case core.CancelJobs:
			w.cancelJobs(e.Cause)
		case core.Halt:
			w.halt()
		}
	}
}

// run carries out Run in the slot's executor. A system shut down under a
// worker that was not stopped (a node that exits) starts nothing more: the
// master hands the work out again. Only a job with a waiter gets a ctx of
// its own (Cancel: its caller left); the others run with the worker's
// lifetime, which ends them all with ErrWorkerStopping (a ctx per job cost
// a tenth of the worker's time per job).
func (w *workerActor) run(e *core.Run) {
	if w.sys.IsStopped() {
		return
	}
	ctx, r := w.jobs, runRef{seq: e.Seq}
	if e.Work.GetWaiter() != nil {
		ctx, r.cancel = context.WithCancelCause(w.jobs)
	}
	w.runs[e.Slot] = r
	// The job's ctx names its passage, for Heartbeat and Progress: one
	// small allocation, not a cancellable ctx of its own.
	w.sys.Root.Send(w.execs[e.Slot], &doWork{work: e.Work, ctx: &jobCtx{Context: ctx, b: w.beaters[e.Slot], seq: e.Seq}})
}

// ran releases the ctx of slot's job, which has returned.
func (w *workerActor) ran(slot int) {
	if r := &w.runs[slot]; r.cancel != nil {
		r.cancel(nil)
		r.cancel = nil
	}
}

// pidOf returns the actor.PID of p, a master's as the core holds it.
func (w *workerActor) pidOf(p *messages.PID) *actor.PID {
	for k, wire := range w.wires {
		if wire == p {
			return w.masters[k]
		}
	}
	return pids.Actor(p)
}

// wireOf records pid as shard k's master and returns it as the core knows
// it (the same value while the master stays).
func (w *workerActor) wireOf(k int, pid *actor.PID) *messages.PID {
	if pid == nil {
		return nil
	}
	if !pid.Equal(w.masters[k]) {
		w.masters[k], w.wires[k] = pid, pids.Wire(pid)
	}
	return w.wires[k]
}

// resolve carries out Resolve off the actor's goroutine, bounded by the
// resolve timeout.
func (w *workerActor) resolve(k int) {
	ctx, cancel := context.WithTimeout(w.ctx, w.cfg.resolveTimeout)
	sys, self, ref := w.sys, w.self, w.master.Shard(k)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer cancel()
		pid, err := ref.Resolve(ctx)
		sys.Root.Send(self, &resolved{shard: k, pid: pid, err: err})
	}()
}

// HandleFailure is the worker's supervisor strategy for its WorkExecutors:
// the failed job is reported as WorkFailed (with the panic value and stack)
// and the executor is restarted.
func (w *workerActor) HandleFailure(_ *actor.ActorSystem, supervisor actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason any, _ any) {
	slot, ok := w.slotOf[child.GetId()]
	supervisor.RestartChildren(child)
	if !ok || w.core == nil {
		return
	}
	w.ran(slot)
	err, isErr := reason.(error)
	if !isErr {
		err = &PanicError{Value: reason}
	}
	w.do(w.core.RunPanicked(w.clockNow(), slot, err))
}

// shutdown steps the core with Stop (hand back, deregister, Halt).
func (w *workerActor) shutdown() {
	if w.core != nil {
		w.do(w.core.Stop(w.clockNow()))
	}
}

// halt carries out Halt: jobs cancelled, timers stopped, permits on their
// way given back.
func (w *workerActor) halt() {
	w.cancel(ErrWorkerStopping)
	w.timers.stopAll()
	for _, p := range w.box.close() {
		p.Abandon()
	}
}
