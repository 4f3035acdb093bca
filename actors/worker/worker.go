package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/route"
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
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.prefetch < 0 {
		cfg.prefetch = cfg.window
	}
	if cfg.limiter != nil {
		cfg.prefetch = 0 // the permits decide (see WithPrefetch)
	}
	if cfg.maxUnacked == 0 {
		cfg.maxUnacked = max(DefaultMaxUnacked, unackedPerSlot*(cfg.window+cfg.prefetch))
	}
	cfg.clock = clock.OrReal(cfg.clock)
	return actor.PropsFromProducer(func() actor.Actor {
		id := cfg.workerID
		if id == "" {
			id = newWorkerID()
		}
		return &workerActor{cfg: cfg, master: master, reg: reg, id: id, goneBook: newGoneBook()}
	}, actor.WithDispatcher(newExecDispatcher(1, execIdle))), nil // its runs too keep the stack they grew (dispatch.go)
}

// Timer messages and piped results (all sent to the worker itself).
type (
	registerTick struct{}
	// flushTick sends the results gathered since it was queued (see
	// onResult); one is queued at a time.
	flushTick  struct{}
	resendTick struct{ workID string }
	drainCheck struct{}
	resolved   struct {
		shard int
		pid   *actor.PID
		err   error
	}
)

// workerActor is the Worker shell. Every field is owned by the actor's
// goroutine, except wg, which the resolver goroutines signal.
type workerActor struct {
	cfg    config
	master route.Master
	reg    *Registry
	id     string
	log    *slog.Logger

	sys  *actor.ActorSystem
	self *actor.PID
	// wire is self as the protocol names it, made once.
	wire *messages.PID
	// actx is the worker's own actor.Context, used only on its goroutine to
	// spawn and stop interest watchers outside Receive's call chain.
	actx actor.Context
	// ctx is the worker's lifetime context, cancelled with the cause
	// ErrWorkerStopping when it stops; jobs and resolver calls derive from
	// it.
	ctx    context.Context //nolint:containedctx // the actor's lifetime: cancelled on Stopping so running jobs and resolver calls end; never a caller's context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup // resolver goroutines in flight

	// conns are the worker's masters, one per shard of the route (one
	// when it is not sharded).
	conns []*masterConn

	// goneBook is the suspicion of waiter nodes reported gone, shared by
	// the worker's interest watchers (gate.go).
	goneBook *goneBook

	execs []*actor.PID
	// execDispatch runs the executors' mailboxes (dispatch.go).
	execDispatch *execDispatcher
	slotOf       map[string]int // executor PID id -> slot
	st           *slots
	ra           readAhead // how far ahead of its window the worker asks
	seq          int

	registerTimer clock.Timer
	resendTimers  map[string]clock.Timer

	// doneOut holds the results completed since the last flush, by
	// shard; flushing says whether a flushTick is queued, and askAfter
	// whether the flush also asks for work.
	// holdTimer, while results wait for company (holdResults), sends the
	// flushTick that ends the wait.
	doneOut   [][]*messages.WorkIsDone
	flushing  bool
	askAfter  bool
	holdTimer clock.Timer

	// The gates (gate.go): gates[i] is where slot i's work is.
	gates         []gate
	gateSeq       uint64      // numbers the passages through the gates
	permitQueue   []int       // slots waiting for a permit, FIFO
	spare         []spare     // permits held for work asked from the master
	box           *permitBox  // hands over permits from the acquirer
	acquiring     bool        // an Acquire is in flight
	hungry        bool        // the worker wants work (cleared by idle permits)
	limiterClosed bool        // Acquire failed: the limiter was closed
	idleTimer     clock.Timer // fires permitIdleTick while spare permits wait
	stopped       bool
	drainers      []*actor.PID // senders of Drain, answered with Drained
	draining      bool
	deregistered  bool
}

// masterConn is the worker's link to one shard's master.
type masterConn struct {
	route     route.Master
	pid       *actor.PID             // current master; nil while unknown
	resolving bool                   // a resolver call is in flight
	outbox    []*messages.WorkFailed // failures waiting for this master
	// ready: the master told the worker work is ready, or just sent it
	// work, so the worker asks it (with several shards; with one the
	// worker always asks its master).
	ready bool
	// batches: this master sent a WorkBundle, so it also reads a
	// WorkIsDoneBatch (the two came in one release). Until then results go
	// one WorkIsDone each: a master from before batches, met in a rolling
	// upgrade, would drop a batch it does not know, and its results would
	// reach it only when their resend timers fire. Cleared when the master
	// changes.
	batches bool
}

// Drain asks a worker to finish gracefully: it stops asking for work, hands
// back work that has not started (WorkFailed with ErrWorkerStopping), lets
// running jobs finish, waits for the Acks of their results, deregisters,
// answers the sender Drained and stops. If the master never acknowledges,
// the drain never ends: bound it with a timeout and then stop the worker,
// which hands the rest back.
type Drain struct{}

// Drained answers Drain once the worker has nothing left and is stopping.
type Drained struct {
	// WorkerID is the drained worker's id.
	WorkerID string
}

var _ actor.SupervisorStrategy = (*workerActor)(nil)

// Receive handles the worker's messages.
func (w *workerActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		w.start(c)
	case *registerTick:
		w.armRegister()
		w.register()
	case *resolved:
		w.onResolved(c, m)
	case *actor.Terminated:
		for k, mc := range w.conns {
			if mc.route.IsResolver() && mc.pid != nil && m.GetWho().Equal(mc.pid) {
				w.log.Info("master terminated, resolving again", "master", mc.pid.String(), "shard", k)
				mc.pid, mc.batches = nil, false
				w.resolve(k)
			}
		}
	case *messages.WorkIsReady:
		if s := c.Sender(); s != nil {
			for _, mc := range w.conns {
				if mc.pid != nil && mc.pid.Equal(s) {
					mc.ready = true
				}
			}
		}
		w.ra.nothingReady()
		w.maybeRequest()
	case *Drain:
		w.onDrain(c)
	case *drainCheck:
		w.checkDrained(c)
	case *messages.Work:
		// The shard that sent work may have more: ask it again.
		w.conns[route.ShardOf(m.GetWorkId(), len(w.conns))].ready = true
		w.ra.delivered(w.cfg.clock.Now().UnixNano())
		w.onWork(m)
	case *execResult:
		w.onResult(m)
		w.checkDrained(c)
	case *messages.Ack:
		w.onAck(m.GetWorkId())
		w.checkDrained(c)
	case *messages.AckBatch:
		for _, id := range m.GetWorkIds() {
			w.onAck(id)
		}
		w.checkDrained(c)
	case *messages.WorkBundle:
		if ws := m.GetWorks(); len(ws) > 0 {
			mc := w.conns[w.shardOf(ws[0].GetWorkId())]
			mc.ready = true // see Work
			mc.batches = true
			w.ra.delivered(w.cfg.clock.Now().UnixNano())
		}
		for _, m := range m.GetWorks() {
			w.onWork(m)
		}
	case *flushTick:
		w.flush()
	case *resendTick:
		w.onResend(m.workID)
	case *interestAnswer:
		w.onInterest(m)
	case *callerLeft:
		w.onCallerLeft(m)
	case *permitGranted:
		w.onPermit(m)
	case *permitFailed:
		w.onPermitFailed(m)
	case *permitIdleTick:
		w.onPermitIdle()
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

// closeExecDispatch ends the executors' pool goroutines. Executors that
// still run later get goroutines of their own, so this is safe at any time.
func (w *workerActor) closeExecDispatch() {
	if w.execDispatch != nil {
		w.execDispatch.close()
		w.execDispatch = nil
	}
}

func (w *workerActor) start(c actor.Context) {
	w.sys, w.self, w.actx = c.ActorSystem(), c.Self(), c
	w.wire = pids.Wire(w.self)
	w.log = w.cfg.logger
	if w.log == nil {
		w.log = c.Logger()
	}
	w.log = w.log.With("component", "worker", "worker_id", w.id)
	w.ctx, w.cancel = context.WithCancelCause(context.Background())
	w.st = newSlots(w.cfg.window, w.cfg.maxUnacked)
	w.ra = readAhead{max: w.cfg.prefetch, window: w.cfg.window}
	w.resendTimers = make(map[string]clock.Timer)
	w.slotOf = make(map[string]int, w.cfg.window)
	w.execs = make([]*actor.PID, w.cfg.window)
	w.gates = make([]gate, w.cfg.window)
	w.box = newPermitBox()
	w.hungry = true
	for k := range w.master.Shards() {
		w.conns = append(w.conns, &masterConn{route: w.master.Shard(k), ready: true})
	}
	w.doneOut = make([][]*messages.WorkIsDone, len(w.conns))
	w.execDispatch = newExecDispatcher(w.cfg.window, execIdle)
	for i := range w.execs {
		pid := c.Spawn(executorProps(i, w.reg, w.execDispatch))
		w.execs[i] = pid
		w.slotOf[pid.GetId()] = i
	}
	w.log.Info("Worker started", "window", w.cfg.window, "job_types", w.reg.Types())
	w.armRegister()
	w.register()
	if !w.master.IsResolver() {
		// Ask at once rather than wait for WorkIsReady: work may be pending
		// already. (With a resolver this happens when the master is found.)
		w.maybeRequest()
	}
}

func (w *workerActor) armRegister() {
	if w.stopped {
		return
	}
	sys, self := w.sys, w.self
	w.registerTimer = w.cfg.clock.AfterFunc(w.cfg.registerInterval, func() { sys.Root.Send(self, &registerTick{}) })
}

// register sends RegisterWorker to every shard's master, resolving each
// first when it is found through a resolver (the answer arrives as a
// resolved message).
func (w *workerActor) register() {
	for k, mc := range w.conns {
		if mc.route.IsResolver() {
			w.resolve(k)
			continue
		}
		if mc.pid == nil {
			mc.pid, _ = mc.route.Resolve(w.ctx) // fixed PID: never blocks
		}
		w.sendRegister(k)
	}
}

func (w *workerActor) sendRegister(k int) {
	w.tellTo(k, &messages.RegisterWorker{WorkerId: w.id, Worker: w.wire, JobTypes: w.reg.Types(), Shards: int32(len(w.conns))})
}

// resolve calls shard k's resolver off the actor goroutine; one call at a
// time per shard.
func (w *workerActor) resolve(k int) {
	mc := w.conns[k]
	if mc.resolving || w.stopped {
		return
	}
	mc.resolving = true
	ctx, cancel := context.WithTimeout(w.ctx, w.cfg.resolveTimeout)
	sys, self, ref := w.sys, w.self, mc.route
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer cancel()
		pid, err := ref.Resolve(ctx)
		sys.Root.Send(self, &resolved{shard: k, pid: pid, err: err})
	}()
}

func (w *workerActor) onResolved(c actor.Context, m *resolved) {
	mc := w.conns[m.shard]
	mc.resolving = false
	if w.stopped {
		return
	}
	if m.err != nil {
		w.log.Warn("cannot find the master; retrying at the next register tick", "shard", m.shard, "error", m.err)
		return
	}
	changed := mc.pid == nil || !mc.pid.Equal(m.pid)
	if changed {
		if mc.pid != nil {
			c.Unwatch(mc.pid)
		}
		mc.pid, mc.batches = m.pid, false
		c.Watch(m.pid)
		w.log.Info("master found", "master", m.pid.String(), "shard", m.shard)
	}
	w.sendRegister(m.shard)
	if !changed {
		return
	}
	// A new master: hand it what the old one may have missed.
	out := mc.outbox
	mc.outbox = nil
	for _, f := range out {
		w.tellTo(m.shard, f)
	}
	for id, res := range w.st.unacked {
		if w.shardOf(id) == m.shard {
			w.tellTo(m.shard, &messages.WorkIsDone{WorkerId: w.id, WorkId: id, Result: res})
		}
	}
	mc.ready = true
	w.maybeRequest()
}

// shardOf returns the shard of a work id among the worker's masters.
func (w *workerActor) shardOf(workID string) int { return route.ShardOf(workID, len(w.conns)) }

// tell sends msg to the master it concerns with the worker as sender: a
// work's result or failure to its shard's master, (de)registration to
// every master.
func (w *workerActor) tell(msg any) {
	switch m := msg.(type) {
	case *messages.WorkIsDone:
		w.tellTo(w.shardOf(m.GetWorkId()), msg)
	case *messages.WorkFailed:
		w.tellTo(w.shardOf(m.GetWorkId()), msg)
	default:
		for k := range w.conns {
			w.tellTo(k, msg)
		}
	}
}

// tellTo sends msg to shard k's master with the worker as sender;
// WorkFailed waits in the outbox while no master is known, other messages
// are re-created when one is found.
func (w *workerActor) tellTo(k int, msg any) {
	mc := w.conns[k]
	if mc.pid == nil {
		if f, ok := msg.(*messages.WorkFailed); ok {
			mc.outbox = append(mc.outbox, f)
		}
		return
	}
	w.sys.Root.RequestWithCustomSender(mc.pid, msg, w.self)
}

// requestWork asks for n jobs: the master, or with several shards each
// master that said work is ready or just sent work (a master asked for
// more than it has tells WorkIsReady when it has some). Work beyond the
// window waits in the worker's queue.
func (w *workerActor) requestWork(n int) {
	req := &messages.WorkerRequestsWork{WorkerId: w.id, Worker: w.wire, Capacity: int32(n), Bundles: true}
	if len(w.conns) == 1 {
		w.ra.requested(w.cfg.clock.Now().UnixNano())
		w.tellTo(0, req)
		return
	}
	for k, mc := range w.conns {
		if mc.ready && mc.pid != nil {
			mc.ready = false
			w.ra.requested(w.cfg.clock.Now().UnixNano())
			w.tellTo(k, req)
		}
	}
}

func (w *workerActor) onWork(m *messages.Work) {
	w.seq++
	if w.cfg.onWork != nil {
		w.cfg.onWork(w.seq, m)
	}
	if w.draining || w.stopped {
		w.fail(m, ErrWorkerStopping)
		return
	}
	if _, ok := w.reg.Lookup(m.GetJobType()); !ok {
		w.fail(m, w.reg.unknownTypeError(m.GetJobType()))
		return
	}
	if dl := m.GetDeadlineUnixNano(); dl > 0 && !w.cfg.clock.Now().Before(time.Unix(0, dl)) {
		w.fail(m, fmt.Errorf("%w (deadline %s)", ErrDeadlinePassed, time.Unix(0, dl).UTC().Format(time.RFC3339Nano)))
		return
	}
	switch res, slot := w.st.offer(m); res {
	case offerStart:
		w.begin(slot, m)
	case offerQueued:
		w.log.Debug("Got work beyond the window; queued", "work_id", m.GetWorkId())
	case offerRunning:
		w.log.Debug("Got work already running here; ignored", "work_id", m.GetWorkId())
	case offerDone:
		res, _ := w.st.result(m.GetWorkId())
		w.tell(&messages.WorkIsDone{WorkerId: w.id, WorkId: m.GetWorkId(), Result: res})
	}
}

func (w *workerActor) fail(m *messages.Work, err error) {
	if errors.Is(err, ErrCallerGone) {
		// Expected: seed 003's whole point. Not a fault of the job.
		w.log.Info("Work skipped: caller gone", "work_id", m.GetWorkId(), "job_type", m.GetJobType(), "error", err)
	} else {
		w.log.Warn("Work failed", "work_id", m.GetWorkId(), "job_type", m.GetJobType(), "error", err)
	}
	w.tell(&messages.WorkFailed{WorkerId: w.id, WorkId: m.GetWorkId(), Error: err.Error(), Permanent: Permanent(err),
		Cancelled: errors.Is(err, ErrCallerGone)})
}

// Permanent reports whether a job's error will not go away when the job is
// retried: a payload the job cannot parse, a job type the worker does not
// know, a passed deadline or a caller who has gone. The master marks such
// work dead at once instead of spending its attempts.
func Permanent(err error) bool {
	return errors.Is(err, ErrBadPayload) || errors.Is(err, ErrUnknownJobType) ||
		errors.Is(err, ErrDeadlinePassed) || errors.Is(err, ErrCallerGone)
}

func (w *workerActor) onResult(m *execResult) {
	if m.err != nil {
		failed, next := w.st.fail(m.slot, m.workID)
		if failed == nil {
			return // stale: the slot was handed back already
		}
		// A job cancelled because its caller left says nothing about the
		// node's throughput: its permit is abandoned, not released.
		w.endGate(m.slot, !errors.Is(m.err, ErrCallerGone))
		w.fail(failed, m.err)
		w.startNext(m.slot, next)
		w.requestAfterFlush()
		return
	}
	next, ok := w.st.complete(m.slot, m.workID, m.result)
	if !ok {
		return
	}
	w.endGate(m.slot, true)
	if w.debugOn() {
		w.log.Debug("Work is complete", "work_id", m.workID, "result", string(m.result))
	}
	k := w.shardOf(m.workID)
	w.doneOut[k] = append(w.doneOut[k], &messages.WorkIsDone{WorkId: m.workID, Result: m.result})
	w.armResend(m.workID)
	w.startNext(m.slot, next)
	w.requestAfterFlush()
}

// debugOn says whether debug lines are logged: the per-job ones build
// their arguments (boxed values, a copy of the result) only then.
func (w *workerActor) debugOn() bool { return w.log.Enabled(context.Background(), slog.LevelDebug) }

// requestAfterFlush queues a flushTick, which reports the results gathered
// until it is handled and then asks for work. A flushTick goes behind the
// messages already in the mailbox, so the results of executors that
// finished together leave in one WorkIsDoneBatch with one request for
// their slots, instead of a WorkIsDone and a request each; when the worker
// is not busy the flush follows at once.
//
// While results wait for company (holdResults) the worker asks for work at
// once instead: a request held back with them left executors idle.
func (w *workerActor) requestAfterFlush() {
	if w.holdResults() {
		w.maybeRequest()
		return
	}
	w.askAfter = true
	if !w.flushing {
		w.flushing = true
		w.sys.Root.Send(w.self, &flushTick{})
	}
}

// holdResults reports whether the gathered results wait a little for more
// to share their message, and starts the wait (WithResultHold). Under load
// a worker's executors finish one by one, each after the worker handled the
// last, so without a wait nearly every result left alone: a WorkIsDone and
// an Ack per job, where one WorkIsDoneBatch and one journal write can carry
// many. Results wait only while jobs still run, a queued one started in the
// freed slot included (a lone job's result goes at once), at most the hold,
// and go as soon as there are as many as the window (at least two).
func (w *workerActor) holdResults() bool {
	switch {
	case w.cfg.resultHold <= 0 || w.stopped || w.draining || w.flushing:
		return false // off; a stopping worker sends at once; a flush is on its way
	case w.st.busy() == 0:
		return false
	}
	if n := w.gathered(); n == 0 || n >= max(w.cfg.window, 2) {
		return false
	}
	if w.holdTimer == nil {
		sys, self := w.sys, w.self
		w.holdTimer = w.cfg.clock.AfterFunc(w.cfg.resultHold, func() { sys.Root.Send(self, &flushTick{}) })
	}
	return true
}

// flush sends each shard's gathered results (a WorkIsDone for one, a
// WorkIsDoneBatch for more) and asks for work if a result freed a slot.
func (w *workerActor) flush() {
	w.flushing = false
	w.stopHold()
	if w.stopped {
		return // shutdown re-sent every unacknowledged result
	}
	for k, done := range w.doneOut {
		switch {
		case len(done) == 0:
			continue
		case len(done) == 1 || !w.conns[k].batches:
			for _, d := range done {
				d.WorkerId = w.id
				w.tellTo(k, d)
			}
		default:
			w.tellTo(k, &messages.WorkIsDoneBatch{WorkerId: w.id, Done: done})
		}
		w.doneOut[k] = nil
	}
	if w.askAfter {
		w.askAfter = false
		w.maybeRequest()
	}
}

// gathered counts the results waiting in doneOut.
func (w *workerActor) gathered() int {
	n := 0
	for _, done := range w.doneOut {
		n += len(done)
	}
	return n
}

// stopHold ends a wait of holdResults: the flush under way carries the
// results. (A tick of a timer stopped too late flushes nothing.)
func (w *workerActor) stopHold() {
	if w.holdTimer != nil {
		w.holdTimer.Stop()
		w.holdTimer = nil
	}
}

func (w *workerActor) startNext(slot int, next *messages.Work) {
	if next != nil && !w.stopped {
		w.begin(slot, next)
	}
}

// maybeRequest asks the master for as many jobs as the worker has free
// slots or, with a limiter, as it holds spare permits for (and acquires
// more permits if it has free slots).
func (w *workerActor) maybeRequest() {
	if w.stopped || w.draining {
		return
	}
	if w.cfg.limiter == nil {
		// With read-ahead the worker asks once a depth's worth of room
		// has freed up, so that each request brings many works, and
		// whenever all its executors are idle. Asking for every slot as
		// it freed (or on every Ack) sent requests of 9 works on average
		// instead of 23 at window 16 and cost a tenth of the throughput.
		n := w.st.capacity(w.ra.depth())
		busy := w.st.busy()
		if n > 0 && (n >= w.ra.threshold() || busy == 0) {
			w.requestWork(n)
		}
		return
	}
	w.hungry = true
	if n := min(len(w.spare), w.st.capacity(0)); n > 0 { // no read-ahead with a limiter
		w.requestWork(n)
	}
	w.ensureAcquire()
}

func (w *workerActor) armResend(id string) {
	sys, self := w.sys, w.self
	w.resendTimers[id] = w.cfg.clock.AfterFunc(w.cfg.resendInterval, func() { sys.Root.Send(self, &resendTick{workID: id}) })
}

func (w *workerActor) onAck(id string) {
	before := w.st.capacity(w.ra.depth())
	if !w.st.ack(id) {
		return
	}
	if t, ok := w.resendTimers[id]; ok {
		t.Stop()
		delete(w.resendTimers, id)
	}
	if before == 0 {
		w.maybeRequest()
	}
}

func (w *workerActor) onResend(id string) {
	res, ok := w.st.result(id)
	if !ok || w.stopped {
		return
	}
	w.log.Info("No ack from master, resending work result", "work_id", id)
	w.tell(&messages.WorkIsDone{WorkerId: w.id, WorkId: id, Result: res})
	w.armResend(id)
	if k := w.shardOf(id); w.conns[k].route.IsResolver() {
		w.resolve(k)
	}
}

// HandleFailure is the worker's supervisor strategy for its WorkExecutors:
// the failed job is reported as WorkFailed (with the panic value and stack)
// and the executor is restarted.
func (w *workerActor) HandleFailure(_ *actor.ActorSystem, supervisor actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason any, _ any) {
	slot, ok := w.slotOf[child.GetId()]
	supervisor.RestartChildren(child)
	if !ok {
		return
	}
	failed, next := w.st.fail(slot, "")
	if failed != nil {
		w.endGate(slot, true)
		err, isErr := reason.(error)
		if !isErr {
			err = &PanicError{Value: reason}
		}
		w.fail(failed, err)
	}
	w.startNext(slot, next)
	w.maybeRequest()
	if w.draining {
		w.sys.Root.Send(w.self, &drainCheck{}) // the drain may be complete now
	}
}

// shutdown hands running and queued work back to the master (WorkFailed,
// so it is re-queued at once rather than after the work timeout), sends the
// unacknowledged results one last time, deregisters and cancels the jobs.
func (w *workerActor) shutdown() {
	if w.stopped || w.st == nil {
		return
	}
	w.stopped = true
	w.cancel(ErrWorkerStopping)
	if w.registerTimer != nil {
		w.registerTimer.Stop()
	}
	for _, t := range w.resendTimers {
		t.Stop()
	}
	w.stopHold()
	for i := range w.gates {
		w.endGate(i, false)
	}
	w.permitQueue = nil
	w.dropPermits()
	for _, m := range w.st.drain() {
		w.fail(m, ErrWorkerStopping)
	}
	for id, res := range w.st.unacked {
		w.tell(&messages.WorkIsDone{WorkerId: w.id, WorkId: id, Result: res})
	}
	if !w.deregistered {
		w.deregistered = true
		w.tell(&messages.DeregisterWorker{WorkerId: w.id})
	}
	w.log.Info("Worker stopped")
}

func (w *workerActor) onDrain(c actor.Context) {
	if s := c.Sender(); s != nil {
		w.drainers = append(w.drainers, s)
	}
	if !w.draining {
		w.draining = true
		w.log.Info("Worker draining", "running", w.st.busy(), "unacked", len(w.st.unacked))
		// Hand back what has not started; running jobs finish.
		for _, m := range w.st.takeQueue() {
			w.fail(m, ErrWorkerStopping)
		}
		for i := range w.gates {
			if p := w.gates[i].phase; p == phaseWaitPermit || p == phaseAsking {
				if failed, _ := w.st.fail(i, w.gates[i].workID); failed != nil {
					w.fail(failed, ErrWorkerStopping)
				}
				w.endGate(i, false)
			}
		}
		for len(w.spare) > 0 {
			w.popSpare().Abandon()
		}
	}
	w.checkDrained(c)
}

// checkDrained finishes a drain once nothing runs and every result is acked.
func (w *workerActor) checkDrained(c actor.Context) {
	if !w.draining || w.stopped || w.st.busy() > 0 || len(w.st.unacked) > 0 {
		return
	}
	w.deregistered = true
	w.tell(&messages.DeregisterWorker{WorkerId: w.id})
	for _, d := range w.drainers {
		c.Send(d, &Drained{WorkerID: w.id})
	}
	w.drainers = nil
	c.Stop(c.Self())
}
