package core

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	routecore "github.com/foreman-actors/foreman/actors/route/core"
	"github.com/foreman-actors/foreman/messages"
)

// Config is what a worker core is made of. Durations must be positive
// except ResultHold (0: every result leaves at once).
type Config struct {
	// ID is the worker's id in RegisterWorker, WorkIsDone and the rest.
	ID string
	// Self is the worker's address, named in RegisterWorker and
	// WorkerRequestsWork.
	Self *messages.PID
	// JobTypes are the job types the worker runs, sorted (see also Known).
	JobTypes []string
	// Known and Types, if set, replace JobTypes with the runner's registry
	// as it is now, which may grow while the worker runs: Known says whether
	// it runs jobType (asked for each Work), Types lists them, sorted (for
	// RegisterWorker and the error of an unknown type).
	Known func(jobType string) bool
	Types func() []string
	// Masters holds one entry per shard: that shard's master when it is
	// fixed, or nil when it is found through Resolve (and may move).
	Masters []*messages.PID
	// Window is how many jobs run at once (1..4096); Prefetch the most
	// works held beyond it (0: none; the read-ahead policy picks the depth
	// below it); MaxUnacked bounds results awaiting their Ack together with
	// running and queued work.
	Window, Prefetch, MaxUnacked int
	// Limiter says the worker takes a permit of a shared limiter for each
	// job (Acquire, Release, Abandon) and asks for work only with a permit.
	Limiter bool

	RegisterInterval time.Duration // re-register with every master
	ResendInterval   time.Duration // re-send a WorkIsDone not acked
	ResultHold       time.Duration // a result may wait this long for company
	InterestTimeout  time.Duration // bound on the wait for a waiter's answer
	InterestRetry    time.Duration // ask an unanswered waiter again
	PermitIdle       time.Duration // give back a permit no work came for

	// NodeGone reports whether the node at addr has left for good (nil:
	// never). It must be quick and, in a simulator, deterministic.
	NodeGone func(addr string) bool
	// OnWork, if set, is called for every Work offered, seq counting from 1,
	// before anything else is decided about it (a test hook; a panic in it
	// propagates out of the core's method).
	OnWork func(seq int, w *messages.Work)
	// Debug adds the per-job debug lines (off: they cost allocations).
	Debug bool
	// BeatInterval bounds how often heartbeats leave (at most one
	// WorkHeartbeat per shard per interval); BeatTimeout, if set, gives a
	// job type's heartbeat timeout, which each beat carries to the master
	// (0: none; see docs/long-jobs.md).
	BeatInterval time.Duration
	BeatTimeout  func(jobType string) time.Duration
}

// Timer names (see effect.Timer). Per-work timers append the work id
// (resend) or the slot and passage (ask, watch).
const (
	TimerRegister = "register"      // re-register with every master
	TimerHold     = "hold"          // end a result hold: flush
	TimerIdle     = "idle"          // check the spare permits for idle ones
	TimerBeat     = "beat"          // send the heartbeats gathered since the last
	TimerDrain    = "drain-timeout" // the drain timeout passed: hand back what runs
	YieldFlush    = "flush"         // Yield: send the results gathered
	YieldDrain    = "drain"         // Yield: the drain may be complete
	timerResend   = "resend:"
	timerAsk      = "ask:"
	timerWatch    = "watch:"
)

// Effects made once: one boxed per result cost an allocation.
var (
	yieldFlush    effect.Effect = Yield{Name: YieldFlush}
	yieldDrain    effect.Effect = Yield{Name: YieldDrain}
	stopHoldTimer effect.Effect = effect.StopTimer{Name: TimerHold}
)

// Worker is the worker's protocol as a value (see the package doc). Its
// methods return the effects to carry out, in order; the slice is the
// core's and valid until its next call.
type Worker struct {
	cfg   Config
	now   time.Time
	out   []effect.Effect
	conns []masterConn
	st    *slots
	ra    readAhead
	seq   int // Work offered

	doneOut  [][]*messages.WorkIsDone // results gathered, by shard
	flushing bool                     // a Yield{flush} is on its way
	askAfter bool                     // the flush also asks for work
	holding  bool                     // TimerHold is armed

	gates       []gate
	runs        []Run // the Run effect of each slot, returned as *Run
	gateSeq     uint64
	book        goneBook
	permitQueue []int   // slots waiting for a permit, FIFO
	spare       []spare // permits held for work asked from the master
	acquiring   bool
	hungry      bool
	closed      bool // the limiter is closed
	idleArmed   bool

	stopped, draining, deregistered bool

	beats     []slotBeat // per slot: its job's heartbeat to send (beat.go)
	beatArmed bool       // TimerBeat is armed: beats wait for it
}

// masterConn is the worker's link to one shard's master.
type masterConn struct {
	pid       *messages.PID // nil while unknown
	resolver  bool
	resolving bool
	outbox    []*messages.WorkFailed // failures waiting for a master
	// ready: the master said work is ready or just sent some, so the
	// worker asks it (with several shards; with one it always asks).
	ready bool
	// batches: this master sent a WorkBundle, so it reads a
	// WorkIsDoneBatch too (a master from before batches, met in a rolling
	// upgrade, would drop one). Cleared when the master changes.
	batches bool
}

// New returns a worker core for cfg; step it with Start first.
func New(cfg Config) *Worker {
	w := &Worker{
		cfg:    cfg,
		st:     newSlots(cfg.Window, cfg.MaxUnacked),
		ra:     readAhead{max: cfg.Prefetch, window: cfg.Window},
		gates:  make([]gate, cfg.Window),
		runs:   make([]Run, cfg.Window),
		beats:  make([]slotBeat, cfg.Window),
		book:   goneBook{nodes: make(map[string]suspicion)},
		hungry: true,
	}
	for _, pid := range cfg.Masters {
		w.conns = append(w.conns, masterConn{pid: pid, resolver: pid == nil, ready: true})
	}
	w.doneOut = make([][]*messages.WorkIsDone, len(w.conns))
	return w
}

func (w *Worker) begin(now time.Time) {
	w.now = now
	clear(w.out)
	w.out = w.out[:0]
}

func (w *Worker) emit(e effect.Effect) { w.out = append(w.out, e) }

func (w *Worker) log(level slog.Level, msg string, attrs ...any) {
	w.emit(effect.Log{Level: level, Msg: msg, Attrs: attrs})
}

func (w *Worker) arm(name string, d time.Duration) {
	w.emit(effect.Timer{Name: name, At: w.now.Add(d)})
}

// Start registers with every master and, when they are fixed, asks for
// work at once (work may be pending already).
func (w *Worker) Start(now time.Time) []effect.Effect {
	w.begin(now)
	w.log(slog.LevelInfo, "Worker started", "window", w.cfg.Window, "job_types", w.types())
	w.arm(TimerRegister, w.cfg.RegisterInterval)
	w.register()
	if !w.conns[0].resolver {
		w.maybeRequest()
	}
	return w.out
}

// Fired handles the timer or Yield called name.
func (w *Worker) Fired(now time.Time, name string) []effect.Effect {
	w.begin(now)
	switch {
	case name == TimerRegister:
		if !w.stopped {
			w.arm(TimerRegister, w.cfg.RegisterInterval)
			w.register()
		}
	case name == TimerHold:
		w.holding = false
		w.flush()
	case name == YieldFlush:
		w.flush()
	case name == YieldDrain:
		w.checkDrained()
	case name == TimerIdle:
		w.onPermitIdle()
	case name == TimerBeat:
		w.onBeatTimer()
	case name == TimerDrain:
		w.onDrainTimeout()
	case len(name) > len(timerResend) && name[:len(timerResend)] == timerResend:
		w.onResend(name[len(timerResend):])
	default:
		w.firedGate(name)
	}
	return w.out
}

func (w *Worker) register() {
	for k := range w.conns {
		if w.conns[k].resolver {
			w.resolve(k)
			continue
		}
		w.sendRegister(k)
	}
}

func (w *Worker) sendRegister(k int) {
	w.tellTo(k, &messages.RegisterWorker{WorkerId: w.cfg.ID, Worker: w.cfg.Self, JobTypes: w.types(), Shards: int32(len(w.conns))})
}

func (w *Worker) types() []string {
	if w.cfg.Types != nil {
		return w.cfg.Types()
	}
	return w.cfg.JobTypes
}

func (w *Worker) known(jobType string) bool {
	if w.cfg.Known != nil {
		return w.cfg.Known(jobType)
	}
	_, ok := slices.BinarySearch(w.cfg.JobTypes, jobType)
	return ok
}

// resolve asks the runner to look shard k's master up, one call at a time.
func (w *Worker) resolve(k int) {
	if w.conns[k].resolving || w.stopped {
		return
	}
	w.conns[k].resolving = true
	w.emit(Resolve{Shard: k})
}

// Resolved is the answer to Resolve{shard}: the master's address, or err.
// A master that changed is watched, registered with, and handed what the
// old one may have missed.
func (w *Worker) Resolved(now time.Time, shard int, pid *messages.PID, err error) []effect.Effect {
	w.begin(now)
	mc := &w.conns[shard]
	mc.resolving = false
	if w.stopped {
		return w.out
	}
	if err != nil {
		w.log(slog.LevelWarn, "cannot find the master; retrying at the next register tick", "shard", shard, "error", err)
		return w.out
	}
	changed := mc.pid == nil || !samePID(mc.pid, pid)
	if changed {
		if mc.pid != nil {
			w.emit(UnwatchMaster{PID: mc.pid})
		}
		mc.pid, mc.batches = pid, false
		w.emit(WatchMaster{PID: pid})
		w.log(slog.LevelInfo, "master found", "master", pid.String(), "shard", shard)
	}
	w.sendRegister(shard)
	if !changed {
		return w.out
	}
	out := mc.outbox
	mc.outbox = nil
	for _, f := range out {
		w.tellTo(shard, f)
	}
	for _, id := range w.unackedIDs() {
		if w.shardOf(id) == shard {
			w.tellTo(shard, &messages.WorkIsDone{WorkerId: w.cfg.ID, WorkId: id, Result: w.st.unacked[id].value})
		}
	}
	mc.ready = true
	w.maybeRequest()
	return w.out
}

// MasterTerminated says a watched master stopped: it is looked up again.
func (w *Worker) MasterTerminated(now time.Time, pid *messages.PID) []effect.Effect {
	w.begin(now)
	for k := range w.conns {
		mc := &w.conns[k]
		if mc.resolver && mc.pid != nil && samePID(mc.pid, pid) {
			w.log(slog.LevelInfo, "master terminated, resolving again", "master", mc.pid.String(), "shard", k)
			mc.pid, mc.batches = nil, false
			w.resolve(k)
		}
	}
	return w.out
}

// WorkIsReady says the master at from has work.
func (w *Worker) WorkIsReady(now time.Time, from *messages.PID) []effect.Effect {
	w.begin(now)
	if from != nil {
		for k := range w.conns {
			if w.conns[k].pid != nil && samePID(w.conns[k].pid, from) {
				w.conns[k].ready = true
			}
		}
	}
	w.ra.nothingReady()
	w.maybeRequest()
	return w.out
}

// Work offers one work from a master.
func (w *Worker) Work(now time.Time, m *messages.Work) []effect.Effect {
	w.begin(now)
	w.conns[w.shardOf(m.GetWorkId())].ready = true // it may have more
	w.ra.delivered(now.UnixNano())
	w.onWork(m)
	return w.out
}

// Bundle offers the works of one WorkBundle.
func (w *Worker) Bundle(now time.Time, ws []*messages.Work) []effect.Effect {
	w.begin(now)
	if len(ws) > 0 {
		mc := &w.conns[w.shardOf(ws[0].GetWorkId())]
		mc.ready, mc.batches = true, true
		w.ra.delivered(now.UnixNano())
	}
	for _, m := range ws {
		w.onWork(m)
	}
	return w.out
}

func (w *Worker) onWork(m *messages.Work) {
	w.seq++
	if w.cfg.OnWork != nil {
		w.cfg.OnWork(w.seq, m)
	}
	if w.draining || w.stopped {
		w.fail(m, ErrWorkerStopping)
		return
	}
	if !w.known(m.GetJobType()) {
		w.fail(m, UnknownTypeError(m.GetJobType(), w.types()))
		return
	}
	if dl := m.GetDeadlineUnixNano(); dl > 0 && !w.now.Before(time.Unix(0, dl)) {
		w.fail(m, fmt.Errorf("%w (deadline %s)", ErrDeadlinePassed, time.Unix(0, dl).UTC().Format(time.RFC3339Nano)))
		return
	}
	switch res, slot := w.st.offer(m); res {
	case offerStart:
		w.enter(slot, m)
	case offerQueued:
		w.debug("Got work beyond the window; queued", m.GetWorkId())
	case offerRunning:
		w.debug("Got work already running here; ignored", m.GetWorkId())
	case offerDone:
		res, _ := w.st.result(m.GetWorkId())
		w.tell(&messages.WorkIsDone{WorkerId: w.cfg.ID, WorkId: m.GetWorkId(), Result: res})
	}
}

func (w *Worker) debug(msg, workID string) {
	if w.cfg.Debug {
		w.log(slog.LevelDebug, msg, "work_id", workID)
	}
}

func (w *Worker) fail(m *messages.Work, err error) {
	if errors.Is(err, ErrCallerGone) {
		// Expected: seed 003's whole point. Not a fault of the job.
		w.log(slog.LevelInfo, "Work skipped: caller gone", "work_id", m.GetWorkId(), "job_type", m.GetJobType(), "error", err)
	} else {
		w.log(slog.LevelWarn, "Work failed", "work_id", m.GetWorkId(), "job_type", m.GetJobType(), "error", err)
	}
	f := &messages.WorkFailed{WorkerId: w.cfg.ID, WorkId: m.GetWorkId(), Error: err.Error(), Permanent: Permanent(err),
		Cancelled: errors.Is(err, ErrCallerGone), HandedBack: HandedBack(err)}
	if f.Cancelled {
		f.Waiter = m.GetWaiter() // whose caller left: the master ignores the report once that waiter is no longer the work's
	}
	w.tell(f)
}

// shardOf returns the shard of a work id among the worker's masters.
func (w *Worker) shardOf(workID string) int { return routecore.ShardOf(workID, len(w.conns)) }

// tell sends msg to the master it concerns: a work's result or failure to
// its shard's, anything else to every master.
func (w *Worker) tell(msg any) {
	switch m := msg.(type) {
	case *messages.WorkIsDone:
		w.tellTo(w.shardOf(m.GetWorkId()), m)
	case *messages.WorkFailed:
		w.tellTo(w.shardOf(m.GetWorkId()), m)
	case *messages.DeregisterWorker:
		for k := range w.conns {
			w.tellTo(k, m)
		}
	case *messages.WorkerRequestsWork:
		for k := range w.conns {
			w.tellTo(k, m)
		}
	}
}

// tellTo sends msg to shard k's master; WorkFailed waits in the outbox
// while no master is known, other messages are re-created when one is.
func (w *Worker) tellTo(k int, msg proto.Message) {
	mc := &w.conns[k]
	if mc.pid == nil {
		if f, ok := msg.(*messages.WorkFailed); ok {
			mc.outbox = append(mc.outbox, f)
		}
		return
	}
	w.emit(effect.Send{To: mc.pid, Msg: msg})
}

// requestWork asks for n jobs: the master, or with several shards each
// master that said work is ready or just sent work.
func (w *Worker) requestWork(n int) {
	req := &messages.WorkerRequestsWork{WorkerId: w.cfg.ID, Worker: w.cfg.Self, Capacity: int32(n), Bundles: true}
	if len(w.conns) == 1 {
		w.ra.requested(w.now.UnixNano())
		w.tellTo(0, req)
		return
	}
	for k := range w.conns {
		if mc := &w.conns[k]; mc.ready && mc.pid != nil {
			mc.ready = false
			w.ra.requested(w.now.UnixNano())
			w.tellTo(k, req)
		}
	}
}

// maybeRequest asks for as many jobs as there are free slots or, with a
// limiter, spare permits (and acquires more permits for free slots).
func (w *Worker) maybeRequest() {
	if w.stopped || w.draining {
		return
	}
	if !w.cfg.Limiter {
		// With read-ahead the worker asks once a depth's worth of room
		// has freed up, so that each request brings many works, and
		// whenever all its executors are idle. Asking for every slot as
		// it freed (or on every Ack) sent requests of 9 works on average
		// instead of 23 at window 16 and cost a tenth of the throughput.
		n := w.st.capacity(w.ra.depth())
		if n > 0 && (n >= w.ra.threshold() || w.st.busy() == 0) {
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

// RunDone reports the end of the job Run started in slot: its result, or
// err (a cancelled job's err wraps its ctx's cause).
func (w *Worker) RunDone(now time.Time, slot int, workID string, result []byte, err error) []effect.Effect {
	w.begin(now)
	if err != nil {
		failed, next := w.st.fail(slot, workID)
		if failed == nil {
			return w.out // stale: the slot was handed back already
		}
		// A job cancelled because its caller left says nothing about the
		// node's throughput: its permit is abandoned, not released.
		w.endGate(slot, !errors.Is(err, ErrCallerGone))
		w.fail(failed, err)
		w.startNext(slot, next)
		w.requestAfterFlush()
		w.checkDrained()
		return w.out
	}
	next, ok := w.st.complete(slot, workID, result)
	if !ok {
		return w.out
	}
	w.endGate(slot, true)
	if w.cfg.Debug {
		w.log(slog.LevelDebug, "Work is complete", "work_id", workID, "result", string(result))
	}
	k := w.shardOf(workID)
	w.doneOut[k] = append(w.doneOut[k], &messages.WorkIsDone{WorkId: workID, Result: result})
	w.arm(w.st.unacked[workID].timer, w.cfg.ResendInterval)
	w.startNext(slot, next)
	w.requestAfterFlush()
	w.checkDrained()
	return w.out
}

// RunPanicked reports that the job in slot panicked with err; the runner
// restarts the slot's executor.
func (w *Worker) RunPanicked(now time.Time, slot int, err error) []effect.Effect {
	w.begin(now)
	failed, next := w.st.fail(slot, "")
	if failed != nil {
		w.endGate(slot, true)
		w.fail(failed, err)
	}
	w.startNext(slot, next)
	w.maybeRequest()
	if w.draining {
		w.emit(yieldDrain) // the drain may be complete now
	}
	return w.out
}

// requestAfterFlush gathers the result just in: a Yield{flush} goes behind
// the inputs already waiting, so that results of executors that finished
// together leave in one WorkIsDoneBatch with one request for their slots.
// While results wait for company (holdResults) the worker asks at once: a
// request held back with them left executors idle.
func (w *Worker) requestAfterFlush() {
	if w.holdResults() {
		w.maybeRequest()
		return
	}
	w.askAfter = true
	if !w.flushing {
		w.flushing = true
		w.emit(yieldFlush)
	}
}

// holdResults reports whether the gathered results wait a little for more
// to share their message, and starts the wait. Under load executors finish
// one by one, so without a wait nearly every result left alone. Results
// wait only while jobs still run, at most ResultHold, and go as soon as
// there are as many as the window (at least two).
func (w *Worker) holdResults() bool {
	switch {
	case w.cfg.ResultHold <= 0 || w.stopped || w.draining || w.flushing:
		return false
	case w.st.busy() == 0:
		return false
	}
	if n := w.gathered(); n == 0 || n >= max(w.cfg.Window, 2) {
		return false
	}
	if !w.holding {
		w.holding = true
		w.arm(TimerHold, w.cfg.ResultHold)
	}
	return true
}

// flush sends each shard's gathered results (a WorkIsDone for one, a
// WorkIsDoneBatch for more) and asks for work if a result freed a slot.
func (w *Worker) flush() {
	w.flushing = false
	w.stopHold()
	if w.stopped {
		return // Stop re-sent every unacknowledged result
	}
	for k, done := range w.doneOut {
		switch {
		case len(done) == 0:
			continue
		case len(done) == 1 || !w.conns[k].batches:
			for _, d := range done {
				d.WorkerId = w.cfg.ID
				w.tellTo(k, d)
			}
		default:
			w.tellTo(k, &messages.WorkIsDoneBatch{WorkerId: w.cfg.ID, Done: done})
		}
		w.doneOut[k] = nil
	}
	if w.askAfter {
		w.askAfter = false
		w.maybeRequest()
	}
}

func (w *Worker) gathered() int {
	n := 0
	for _, done := range w.doneOut {
		n += len(done)
	}
	return n
}

func (w *Worker) stopHold() {
	if w.holding {
		w.holding = false
		w.emit(stopHoldTimer)
	}
}

func (w *Worker) startNext(slot int, next *messages.Work) {
	if next != nil && !w.stopped {
		w.enter(slot, next)
	}
}

// Ack is the master's acknowledgement of the results of ids (an Ack or an
// AckBatch).
func (w *Worker) Ack(now time.Time, ids ...string) []effect.Effect {
	w.begin(now)
	for _, id := range ids {
		before := w.st.capacity(w.ra.depth())
		timer, ok := w.st.ack(id)
		if !ok {
			continue
		}
		w.emit(effect.StopTimer{Name: timer})
		if before == 0 {
			w.maybeRequest()
		}
	}
	w.checkDrained()
	return w.out
}

func (w *Worker) onResend(id string) {
	res, ok := w.st.result(id)
	if !ok || w.stopped {
		return
	}
	w.log(slog.LevelInfo, "No ack from master, resending work result", "work_id", id)
	w.tell(&messages.WorkIsDone{WorkerId: w.cfg.ID, WorkId: id, Result: res})
	w.arm(w.st.unacked[id].timer, w.cfg.ResendInterval)
	if k := w.shardOf(id); w.conns[k].resolver {
		w.resolve(k)
	}
}

// unackedIDs returns the ids of the results awaiting their Ack, sorted.
func (w *Worker) unackedIDs() []string {
	ids := make([]string, 0, len(w.st.unacked))
	for id := range w.st.unacked {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Drain finishes the worker gracefully: it asks for no more work, hands
// back what has not started, lets running jobs finish and waits for their
// results' Acks, then deregisters and returns Drained.
func (w *Worker) Drain(now time.Time) []effect.Effect {
	return w.DrainWithin(now, 0)
}

// DrainWithin is Drain bounded by timeout (0: none): jobs still running
// when it passes are cancelled with ErrDrainTimeout (CancelJobs) and handed
// back to the master at once, without waiting for them to return, so that
// they run again elsewhere and do not count as a failed attempt.
func (w *Worker) DrainWithin(now time.Time, timeout time.Duration) []effect.Effect {
	w.begin(now)
	if !w.draining && !w.stopped {
		if timeout > 0 {
			w.arm(TimerDrain, timeout)
		}
		w.draining = true
		w.log(slog.LevelInfo, "Worker draining", "running", w.st.busy(), "unacked", len(w.st.unacked))
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
			w.emit(Abandon{Permit: w.popSpare()})
		}
		// A result still unacknowledged may have lost its Ack (the master
		// moved): re-sent now, not a resend interval into the drain,
		// which the exit would wait for.
		for _, id := range w.unackedIDs() {
			w.onResend(id)
		}
	}
	w.checkDrained()
	return w.out
}

// checkDrained finishes a drain once nothing runs and every result is acked.
func (w *Worker) checkDrained() {
	if !w.draining || w.stopped || w.st.busy() > 0 || len(w.st.unacked) > 0 {
		return
	}
	w.deregistered = true
	w.tell(&messages.DeregisterWorker{WorkerId: w.cfg.ID})
	w.emit(Drained{})
}

// Stop ends the worker: running and queued work goes back to the master
// (WorkFailed, so it is re-queued at once rather than after the work
// timeout), unacknowledged results are sent one last time, and the worker
// deregisters. Every later input is ignored.
func (w *Worker) Stop(now time.Time) []effect.Effect {
	w.begin(now)
	if w.stopped {
		return w.out
	}
	w.stopped = true
	w.emit(Halt{})
	w.stopHold()
	for i := range w.gates {
		w.endGate(i, false)
	}
	w.permitQueue = nil
	w.idleArmed = false
	for len(w.spare) > 0 {
		w.emit(Abandon{Permit: w.popSpare()})
	}
	for _, m := range w.st.drain() {
		w.fail(m, ErrWorkerStopping)
	}
	for _, id := range w.unackedIDs() {
		w.tell(&messages.WorkIsDone{WorkerId: w.cfg.ID, WorkId: id, Result: w.st.unacked[id].value})
	}
	if !w.deregistered {
		w.deregistered = true
		w.tell(&messages.DeregisterWorker{WorkerId: w.cfg.ID})
	}
	w.log(slog.LevelInfo, "Worker stopped")
	return w.out
}

func samePID(a, b *messages.PID) bool {
	return a.GetAddress() == b.GetAddress() && a.GetId() == b.GetId() && a.GetRequestId() == b.GetRequestId()
}
