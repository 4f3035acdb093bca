package master

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// Props returns the props of a Master that journals to j. It panics if an
// option is invalid (a wiring mistake); use NewProps to get the error.
//
// The master recovers in Started (AcquireEpoch, LoadSnapshot, Load), so the
// same props serve as a plain actor and as a cluster grain: each activation
// fences the previous one.
func Props(j journal.Journal, opts ...Option) *actor.Props {
	p, err := NewProps(j, opts...)
	if err != nil {
		panic(err)
	}
	return p
}

// NewProps is Props returning an invalid option as an error.
func NewProps(j journal.Journal, opts ...Option) (*actor.Props, error) {
	if j == nil {
		return nil, fmt.Errorf("%w: journal is nil", ErrInvalidOption)
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &masterActor{cfg: cfg, j: j, clock: cfg.clock, policy: cfg.policy(), workers: newWorkerRegistry()}
	}), nil
}

// sessions numbers journal sessions process-wide, so that a message from an
// earlier session, even of an actor instance replaced by a supervisor
// restart under the same PID, never matches the current one.
var sessions atomic.Int64

// Messages the master sends itself. gen ties each to one journal session:
// one from an earlier session (before a re-sync or restart) is ignored.
type (
	flushMsg   struct{ gen int64 }
	appendDone struct {
		gen     int64
		lastSeq int64
		err     error
	}
	cleanupTick struct{ gen int64 }
	fenceTick   struct{ gen int64 }
	fenceResult struct {
		gen   int64
		from  int64 // the master's next sequence number when the check began
		other bool  // an event at or after from exists
	}
	wakeTick      struct{ gen int64 }
	retryRecovery struct{ gen int64 }
	snapshotDone  struct {
		gen int64
		seq int64
		err error
	}
)

// effect is something done once a batch is durable: a message sent, or a
// result published.
type effect struct {
	to      *actor.PID
	msg     proto.Message
	publish *messages.WorkResult
}

// barrierEffect waits until the events up to seq are durable.
type barrierEffect struct {
	seq int64
	eff effect
}

// batch is one journal append and the effects that wait for it.
type batch struct {
	events  []journal.Event
	effects []effect
	lastSeq int64
	bytes   int // payloads and results in events, to cap the append's size
}

type masterActor struct {
	cfg       config
	j         journal.Journal
	clock     clock.Clock
	policy    Policy
	log       *slog.Logger
	publisher Publisher
	sys       *actor.ActorSystem
	self      *actor.PID

	state   *WorkState
	workers *workerRegistry

	// The journal session.
	gen        int64 // bumped on every (re)recovery
	recovered  bool
	epoch      int64
	nextSeq    int64 // sequence number of the next event
	durableSeq int64 // highest sequence number known durable
	building   *batch
	flushSent  bool
	notifyDue  bool     // new work arrived: notify workers at the flush
	inflight   []*batch // appended, not yet confirmed, in order
	barrier    []barrierEffect

	sinceSnap    int // events since the last snapshot
	pendingSnap  *journal.Snapshot
	snapInFlight bool

	cleanupTimer clock.Timer
	wakeTimer    clock.Timer
	wakeAt       time.Time
	retryTimer   clock.Timer
	retryDelay   time.Duration
	fenceTimer   clock.Timer
}

// Receive implements actor.Actor.
func (a *masterActor) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case *actor.Started:
		a.onStarted(c)
	case *actor.Stopping, *actor.Restarting:
		a.stopTimers()
	case *messages.Work:
		a.onWork(c, msg)
	case *messages.RegisterWorker:
		a.onRegister(c, msg)
	case *messages.WorkerRequestsWork:
		a.onRequestsWork(c, msg)
	case *messages.WorkIsDone:
		a.onWorkIsDone(c, msg)
	case *messages.WorkFailed:
		a.onWorkFailed(c, msg)
	case *messages.DeregisterWorker:
		a.onDeregister(c, msg)
	case *messages.GetWorkStatus:
		a.onGetWorkStatus(c, msg)
	case *messages.GetMasterStatus:
		a.onGetMasterStatus(c)
	case *flushMsg:
		if msg.gen == a.gen {
			a.flushSent = false
			a.flush()
			if a.notifyDue {
				a.notifyDue = false
				a.notifyWorkers(c)
			}
		}
	case *appendDone:
		if msg.gen == a.gen {
			a.onAppendDone(c, msg)
		}
	case *cleanupTick:
		if msg.gen == a.gen && a.recovered {
			a.onCleanup(c)
		}
	case *fenceTick:
		if msg.gen == a.gen && a.recovered {
			a.checkFence()
		}
	case *fenceResult:
		if msg.gen == a.gen && a.recovered {
			a.onFenceResult(c, msg)
		}
	case *wakeTick:
		if msg.gen == a.gen && a.recovered {
			a.wakeAt = time.Time{}
			a.notifyWorkers(c)
		}
	case *retryRecovery:
		if msg.gen == a.gen && !a.recovered {
			a.recover(c)
		}
	case *snapshotDone:
		if msg.gen == a.gen {
			a.onSnapshotDone(c, msg)
		}
	}
}

func (a *masterActor) onStarted(c actor.Context) {
	a.sys = c.ActorSystem()
	a.self = c.Self()
	a.log = a.cfg.logger
	if a.log == nil {
		a.log = a.sys.Logger()
	}
	a.log = a.log.With("component", "master", "stream", a.cfg.stream, "pid", a.self.GetAddress()+"/"+a.self.GetId())
	a.publisher = a.cfg.publisher
	if a.publisher == nil {
		es := a.sys.EventStream
		a.publisher = PublisherFunc(func(r *messages.WorkResult) { es.Publish(r) })
	}
	a.recover(c)
}

// recover reads the journal back into a fresh WorkState. It blocks the
// actor: messages wait in the mailbox meanwhile, which is the stash. On
// failure it retries with backoff, rejecting Work until it succeeds.
func (a *masterActor) recover(c actor.Context) {
	a.gen = sessions.Add(1)
	a.recovered = false
	a.building, a.flushSent, a.inflight, a.barrier = nil, false, nil, nil
	a.pendingSnap, a.snapInFlight = nil, false
	a.stopTimers()
	start := a.clock.Now()
	err := a.load()
	if err != nil {
		if errors.Is(err, journal.ErrFenced) {
			a.fenced(c, err)
			return
		}
		a.retryDelay = min(max(2*a.retryDelay, 100*time.Millisecond), 5*time.Second)
		a.log.Error("master recovery failed; retrying", "error", err, "retry_in", a.retryDelay)
		gen, self, root := a.gen, a.self, a.sys.Root
		a.retryTimer = a.clock.AfterFunc(a.retryDelay, func() { root.Send(self, &retryRecovery{gen: gen}) })
		return
	}
	a.retryDelay = 0
	a.recovered = true
	cnt := a.state.Counts()
	a.log.Info("master recovered", "epoch", a.epoch, "seq", a.durableSeq, "pending", cnt.Pending,
		"done", cnt.Done, "dead", cnt.Dead, "took", a.clock.Since(start))
	a.armCleanup()
	a.armFenceCheck()
	a.notifyWorkers(c)
}

// armFenceCheck schedules the next check for a newer activation.
func (a *masterActor) armFenceCheck() {
	if a.cfg.fenceCheck <= 0 {
		return
	}
	gen, self, root := a.gen, a.self, a.sys.Root
	a.fenceTimer = a.clock.AfterFunc(a.cfg.fenceCheck, func() { root.Send(self, &fenceTick{gen: gen}) })
}

// checkFence looks, off the actor's goroutine, for an event this activation
// did not write. protoactor may keep a stray activation that recovered once
// and never wrote since; its own appends would be fenced, but until it
// writes it would answer workers and status queries from stale state and
// hold the master's place after a failover. Every activation journals
// MasterRecovered when it recovers, so a newer one is seen here.
func (a *masterActor) checkFence() {
	j, stream, from, timeout := a.j, a.cfg.stream, a.nextSeq, a.cfg.journalTimeout
	gen, self, root := a.gen, a.self, a.sys.Root
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		found := errors.New("found")
		err := j.Load(ctx, stream, from, func(journal.Event) error { return found })
		root.Send(self, &fenceResult{gen: gen, from: from, other: errors.Is(err, found)})
	}()
}

func (a *masterActor) onFenceResult(c actor.Context, m *fenceResult) {
	// If this master assigned sequence numbers since the check began, the
	// event found may be its own: inconclusive (a stale master that writes
	// is fenced by the journal anyway).
	if m.other && a.nextSeq == m.from {
		a.fenced(c, fmt.Errorf("%w: the journal holds event %d, written by a newer activation", journal.ErrFenced, m.from))
		return
	}
	a.armFenceCheck()
}

func (a *masterActor) load() error {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.journalTimeout)
	defer cancel()
	epoch, lastSeq, err := a.j.AcquireEpoch(ctx, a.cfg.stream)
	if err != nil {
		return fmt.Errorf("master: acquire epoch of %q: %w", a.cfg.stream, err)
	}
	snap, ok, err := a.j.LoadSnapshot(ctx, a.cfg.stream)
	if err != nil {
		return fmt.Errorf("master: load snapshot of %q: %w", a.cfg.stream, err)
	}
	state := NewWorkState()
	var seq int64
	if ok {
		ms, isMaster := snap.Msg.(*messages.MasterSnapshot)
		if !isMaster {
			return fmt.Errorf("%w: stream %q seq %d holds a %T", ErrBadSnapshot, a.cfg.stream, snap.Seq, snap.Msg)
		}
		if state, err = RestoreWorkState(ms); err != nil {
			return fmt.Errorf("master: stream %q snapshot at seq %d: %w", a.cfg.stream, snap.Seq, err)
		}
		seq = snap.Seq
	}
	snapSeq := seq
	err = a.j.Load(ctx, a.cfg.stream, seq+1, func(ev journal.Event) error {
		if ev.Seq != seq+1 {
			return fmt.Errorf("%w: stream %q: event %d follows %d (a gap)", ErrRecovery, a.cfg.stream, ev.Seq, seq)
		}
		seq = ev.Seq
		return state.Apply(ev.Msg)
	})
	if err != nil {
		return fmt.Errorf("master: load %q from seq %d: %w", a.cfg.stream, snapSeq+1, err)
	}
	if seq < lastSeq {
		return fmt.Errorf("%w: stream %q: last event is %d but load ended at %d", ErrRecovery, a.cfg.stream, lastSeq, seq)
	}
	rec := &messages.MasterRecovered{AtUnixNano: a.clock.Now().UnixNano()}
	if err := a.j.Append(ctx, a.cfg.stream, epoch, []journal.Event{{Seq: seq + 1, Msg: rec}}); err != nil {
		return fmt.Errorf("master: append MasterRecovered to %q: %w", a.cfg.stream, err)
	}
	_ = state.Apply(rec)
	a.state, a.epoch = state, epoch
	a.durableSeq = seq + 1
	a.nextSeq = seq + 2
	a.sinceSnap = int(a.durableSeq - snapSeq)
	return nil
}

func (a *masterActor) fenced(c actor.Context, err error) {
	a.log.Error("master fenced by a newer activation; stopping", "error", err)
	a.recovered = false
	a.gen = sessions.Add(1)
	a.stopTimers()
	c.Stop(c.Self())
}

func (a *masterActor) stopTimers() {
	for _, t := range []clock.Timer{a.cleanupTimer, a.wakeTimer, a.retryTimer, a.fenceTimer} {
		if t != nil {
			t.Stop()
		}
	}
	a.cleanupTimer, a.wakeTimer, a.retryTimer, a.fenceTimer = nil, nil, nil, nil
	a.wakeAt = time.Time{}
}

func (a *masterActor) armCleanup() {
	gen, self, root := a.gen, a.self, a.sys.Root
	a.cleanupTimer = a.clock.AfterFunc(a.cfg.workTimeout/2, func() { root.Send(self, &cleanupTick{gen: gen}) })
}

// armWake makes sure idle workers are told when work becomes ready at t.
func (a *masterActor) armWake(t time.Time) {
	if a.wakeTimer != nil && !a.wakeAt.After(t) {
		return
	}
	if a.wakeTimer != nil {
		a.wakeTimer.Stop()
	}
	gen, self, root := a.gen, a.self, a.sys.Root
	d := max(t.Sub(a.clock.Now()), 0)
	a.wakeAt = t
	a.wakeTimer = a.clock.AfterFunc(d, func() { root.Send(self, &wakeTick{gen: gen}) })
}

// emit applies ev to the state and queues it for the journal.
func (a *masterActor) emit(ev proto.Message) {
	if err := a.state.Apply(ev); err != nil {
		panic(err) // the master only emits events WorkState knows
	}
	if a.building == nil {
		a.building = &batch{}
	}
	a.building.events = append(a.building.events, journal.Event{Seq: a.nextSeq, Msg: ev})
	a.nextSeq++
	switch ev := ev.(type) {
	case *messages.WorkAccepted:
		a.building.bytes += len(ev.GetWork().GetPayload())
	case *messages.WorkCompleted:
		a.building.bytes += len(ev.GetResult())
	}
	if len(a.building.events) >= maxBatchEvents || a.building.bytes >= maxBatchBytes {
		a.flush()
		return
	}
	if !a.flushSent {
		// The flush runs after the messages already in the mailbox, so
		// everything they emit goes into one append.
		a.flushSent = true
		a.sys.Root.Send(a.self, &flushMsg{gen: a.gen})
	}
}

// later performs eff once everything emitted so far is durable. Effects of
// a batch are frozen when it is flushed; one that must wait for batches
// already in flight waits in barrier.
func (a *masterActor) later(c actor.Context, eff effect) {
	switch {
	case a.building != nil:
		a.building.effects = append(a.building.effects, eff)
	case len(a.inflight) > 0:
		a.barrier = append(a.barrier, barrierEffect{seq: a.inflight[len(a.inflight)-1].lastSeq, eff: eff})
	default:
		a.perform(c, eff)
	}
}

func (a *masterActor) perform(c actor.Context, eff effect) {
	if eff.publish != nil {
		a.publisher.Publish(eff.publish)
		return
	}
	if eff.to != nil {
		c.Request(eff.to, eff.msg) // the master as sender, for workers
	}
}

func (a *masterActor) flush() {
	b := a.building
	if b == nil {
		return
	}
	a.building = nil
	b.lastSeq = b.events[len(b.events)-1].Seq
	a.inflight = append(a.inflight, b)
	gen, self, root, last := a.gen, a.self, a.sys.Root, b.lastSeq
	effects := b.effects // frozen: the actor never changes it after the flush
	a.j.AppendAsync(a.cfg.stream, a.epoch, b.events, func(err error) {
		if err == nil {
			// The batch is durable: its messages (Acks, and Works when
			// awaiting WorkStarted), built by the actor and never changed,
			// leave at once instead of queueing behind the master's
			// mailbox. This touches no actor state.
			for _, eff := range effects {
				if eff.to != nil {
					root.RequestWithCustomSender(eff.to, eff.msg, self)
				}
			}
		}
		root.Send(self, &appendDone{gen: gen, lastSeq: last, err: err})
	})
	a.sinceSnap += len(b.events)
	if a.sinceSnap >= a.cfg.snapshotEvery && a.sinceSnap >= a.state.Len() && a.pendingSnap == nil && !a.snapInFlight {
		a.pendingSnap = &journal.Snapshot{Seq: b.lastSeq, Msg: a.state.Snapshot()}
		a.sinceSnap = 0
	}
}

func (a *masterActor) onAppendDone(c actor.Context, m *appendDone) {
	if m.err != nil {
		if errors.Is(m.err, journal.ErrFenced) {
			a.fenced(c, m.err)
			return
		}
		// Memory is ahead of the journal now: drop it (nothing unconfirmed
		// is acknowledged) and read the journal back, as a restart would.
		a.log.Error("master journal append failed; re-syncing from the journal", "error", m.err, "seq", m.lastSeq)
		a.recover(c)
		return
	}
	a.durableSeq = max(a.durableSeq, m.lastSeq)
	for len(a.inflight) > 0 && a.inflight[0].lastSeq <= a.durableSeq {
		b := a.inflight[0]
		a.inflight[0] = nil
		a.inflight = a.inflight[1:]
		for _, eff := range b.effects {
			if eff.publish != nil { // its messages were sent by the callback
				a.perform(c, eff)
			}
		}
	}
	n := 0
	for n < len(a.barrier) && a.barrier[n].seq <= a.durableSeq {
		a.perform(c, a.barrier[n].eff)
		a.barrier[n] = barrierEffect{}
		n++
	}
	a.barrier = a.barrier[n:]
	if a.pendingSnap != nil && a.pendingSnap.Seq <= a.durableSeq {
		a.saveSnapshot(*a.pendingSnap)
		a.pendingSnap = nil
	}
}

// saveSnapshot stores snap and deletes the events it covers, off the actor's
// goroutine (the snapshot's messages are never modified).
func (a *masterActor) saveSnapshot(snap journal.Snapshot) {
	a.snapInFlight = true
	j, stream, epoch, timeout := a.j, a.cfg.stream, a.epoch, a.cfg.journalTimeout
	gen, self, root := a.gen, a.self, a.sys.Root
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		err := j.SaveSnapshot(ctx, stream, epoch, snap)
		if err == nil {
			err = j.DeleteEvents(ctx, stream, epoch, snap.Seq)
		}
		root.Send(self, &snapshotDone{gen: gen, seq: snap.Seq, err: err})
	}()
}

func (a *masterActor) onSnapshotDone(c actor.Context, m *snapshotDone) {
	a.snapInFlight = false
	switch {
	case errors.Is(m.err, journal.ErrFenced):
		a.fenced(c, m.err)
	case m.err != nil:
		a.log.Warn("master snapshot failed; will retry after more events", "error", m.err, "seq", m.seq)
	default:
		a.log.Debug("master snapshot saved", "seq", m.seq)
	}
}

func reject(work *messages.Work, code messages.RejectCode, reason string) *messages.WorkRejected {
	return &messages.WorkRejected{WorkId: work.GetWorkId(), Code: code, Reason: reason}
}

func (a *masterActor) validate(w *messages.Work) *messages.WorkRejected {
	switch {
	case w.GetWorkId() == "":
		return reject(w, messages.RejectCode_REJECT_CODE_INVALID, "master: work id is empty; give every job a unique id")
	case w.GetJobType() == "":
		return reject(w, messages.RejectCode_REJECT_CODE_INVALID, "master: job type is empty; set it to a type the workers run (e.g. \"square\")")
	case len(w.GetPayload()) > a.cfg.maxPayload:
		return reject(w, messages.RejectCode_REJECT_CODE_TOO_LARGE,
			fmt.Sprintf("master: payload is %d bytes, over the limit of %d; send a reference to the data instead", len(w.GetPayload()), a.cfg.maxPayload))
	}
	if a.cfg.jobTypes != nil {
		if _, ok := a.cfg.jobTypes[w.GetJobType()]; !ok {
			return reject(w, messages.RejectCode_REJECT_CODE_UNKNOWN_TYPE,
				fmt.Sprintf("master: unknown job type %q; this master accepts only its configured job types", w.GetJobType()))
		}
	}
	return nil
}

func (a *masterActor) onWork(c actor.Context, w *messages.Work) {
	sender := c.Sender()
	reply := func(msg proto.Message) {
		if sender != nil {
			c.Send(sender, msg)
		}
	}
	if !a.recovered {
		reply(reject(w, messages.RejectCode_REJECT_CODE_UNAVAILABLE, "master: recovering from the journal; retry later"))
		return
	}
	if r := a.validate(w); r != nil {
		reply(r)
		return
	}
	ack := effect{to: sender, msg: &messages.Ack{WorkId: w.GetWorkId()}}
	if a.state.IsAccepted(w.GetWorkId()) {
		// A duplicate: acknowledged again once what holds it is durable.
		if sender != nil {
			a.later(c, ack)
		}
		return
	}
	stored := &messages.Work{WorkId: w.GetWorkId(), JobType: w.GetJobType(), Payload: w.GetPayload(), DeadlineUnixNano: w.GetDeadlineUnixNano(), Waiter: w.GetWaiter()}
	a.emit(&messages.WorkAccepted{Work: stored, AtUnixNano: a.clock.Now().UnixNano()})
	if sender != nil {
		a.later(c, ack)
	}
	// Workers are told at the flush, after the rest of the mailbox: one
	// WorkIsReady per batch of new work, so they pull it in bulk.
	a.notifyDue = true
}

// notifyWorkers tells each worker that wants work and can run a ready job
// WorkIsReady (once; it is told again after its next unmet request).
func (a *masterActor) notifyWorkers(c actor.Context) {
	if len(a.workers.wanting) == 0 {
		return
	}
	now := a.clock.Now()
	for _, w := range a.workers.wanting {
		if a.state.NextReady(now, w.accepts) != nil {
			a.workers.setWanting(w, false)
			if w.pid != nil {
				c.Request(w.pid, &messages.WorkIsReady{})
			}
		}
	}
	if len(a.workers.wanting) > 0 {
		if at, ok := a.state.NextReadyAt(now); ok {
			a.armWake(at)
		}
	}
}

func (a *masterActor) onRegister(c actor.Context, m *messages.RegisterWorker) {
	if m.GetWorkerId() == "" {
		return
	}
	pid := m.GetWorker()
	if pid == nil {
		pid = c.Sender()
	}
	if pid == nil {
		a.log.Warn("RegisterWorker without a worker PID or sender; ignored", "worker_id", m.GetWorkerId())
		return
	}
	now := a.clock.Now()
	w, isNew := a.workers.register(m.GetWorkerId(), pid, m.GetJobTypes(), now)
	if isNew {
		a.log.Info("worker registered", "worker_id", w.id, "worker", pid.GetAddress()+"/"+pid.GetId())
	}
	if !a.recovered {
		return
	}
	if isNew || w.wanting || a.state.RunningCount(w.id) == 0 {
		if a.state.NextReady(now, w.accepts) != nil {
			a.workers.setWanting(w, false)
			c.Request(w.pid, &messages.WorkIsReady{})
		} else {
			a.workers.setWanting(w, true)
		}
	}
}

func (a *masterActor) onRequestsWork(c actor.Context, m *messages.WorkerRequestsWork) {
	now := a.clock.Now()
	pid := m.GetWorker()
	if pid == nil {
		pid = c.Sender()
	}
	w := a.workers.get(m.GetWorkerId())
	if w == nil {
		if pid == nil || m.GetWorkerId() == "" {
			return
		}
		// A worker this activation has not heard register (the master
		// restarted): take it as able to run any job type until its next
		// RegisterWorker says otherwise, rather than leave it idle.
		w, _ = a.workers.register(m.GetWorkerId(), pid, nil, now)
		a.log.Info("worker requested work before registering; registered", "worker_id", w.id)
	}
	w.lastSeen = now
	if pid != nil {
		w.pid = pid
	}
	if !a.recovered {
		return
	}
	a.dispatch(c, w, max(int(m.GetCapacity()), 1), now)
}

// dispatch hands out up to n ready works to w, without waiting for their
// WorkStarted events to be durable: recovery returns in-progress work to
// pending, so a lost WorkStarted only means the work runs again.
func (a *masterActor) dispatch(c actor.Context, w *workerInfo, n int, now time.Time) {
	var throttled map[string]bool
	accept := func(jt string) bool { return w.accepts(jt) && !throttled[jt] }
	given := 0
	for given < n {
		work := a.state.NextReady(now, accept)
		if work == nil {
			break
		}
		if dl := work.GetDeadlineUnixNano(); dl != 0 && dl <= now.UnixNano() {
			a.emit(&messages.WorkExpired{WorkId: work.GetWorkId(), AtUnixNano: now.UnixNano(),
				Reason: "deadline of the submitter passed before the work was started"})
			continue
		}
		if lim := a.cfg.limiters[work.GetJobType()]; lim != nil {
			if ok, retry := lim.Reserve(now); !ok {
				if throttled == nil {
					throttled = make(map[string]bool)
				}
				throttled[work.GetJobType()] = true
				a.armWake(now.Add(max(retry, time.Millisecond)))
				continue
			}
		}
		a.emit(&messages.WorkStarted{WorkId: work.GetWorkId(), WorkerId: w.id, AtUnixNano: now.UnixNano()})
		out := &messages.Work{WorkId: work.GetWorkId(), JobType: work.GetJobType(), Payload: work.GetPayload(),
			Attempt: a.state.Attempts(work.GetWorkId()), DeadlineUnixNano: work.GetDeadlineUnixNano(), Waiter: work.GetWaiter()}
		if a.cfg.awaitStarted {
			a.later(c, effect{to: w.pid, msg: out})
		} else {
			c.Request(w.pid, out)
		}
		given++
	}
	a.workers.setWanting(w, given < n)
	if given < n {
		if at, ok := a.state.NextReadyAt(now); ok {
			a.armWake(at)
		}
	}
}

func (a *masterActor) onWorkIsDone(c actor.Context, m *messages.WorkIsDone) {
	to := c.Sender()
	w := a.workers.get(m.GetWorkerId())
	now := a.clock.Now()
	if w != nil {
		w.lastSeen = now
		if to == nil {
			to = w.pid
		}
	}
	if !a.recovered {
		return // the worker re-sends until acknowledged
	}
	ack := effect{to: to, msg: &messages.Ack{WorkId: m.GetWorkId()}}
	work := a.state.Work(m.GetWorkId())
	switch {
	case work == nil:
		// Forgotten after the retention, or never durably accepted: the
		// result has no one to go to; acknowledge so the worker stops.
		a.log.Debug("done reported for an unknown work", "work_id", m.GetWorkId(), "worker_id", m.GetWorkerId())
	case a.state.IsDone(m.GetWorkId()):
		// Idempotent: the previous Ack was lost.
	default:
		a.emit(&messages.WorkCompleted{WorkId: m.GetWorkId(), WorkerId: m.GetWorkerId(), Result: m.GetResult(), AtUnixNano: now.UnixNano()})
		a.later(c, effect{publish: &messages.WorkResult{WorkId: m.GetWorkId(), JobType: work.GetJobType(), Result: m.GetResult()}})
	}
	if to != nil {
		a.later(c, ack)
	}
}

func (a *masterActor) onWorkFailed(c actor.Context, m *messages.WorkFailed) {
	now := a.clock.Now()
	if w := a.workers.get(m.GetWorkerId()); w != nil {
		w.lastSeen = now
	}
	if !a.recovered {
		return
	}
	ev, ok := a.state.FailureEvent(a.policy, m.GetWorkId(), m.GetWorkerId(), m.GetError(), now)
	if !ok {
		a.log.Debug("failure reported for work the worker does not hold", "work_id", m.GetWorkId(), "worker_id", m.GetWorkerId())
		return
	}
	if m.GetPermanent() {
		// A retry cannot help (bad payload, unknown type, caller gone):
		// the work is dead now, visible and re-submittable, and its
		// remaining attempts are not wasted. The event records the
		// decision, so replay agrees.
		ev.Dead, ev.NotBeforeUnixNano = true, 0
	}
	a.emit(ev)
	if ev.GetDead() {
		a.log.Warn("work is dead: out of attempts", "work_id", m.GetWorkId(), "attempts", a.state.Attempts(m.GetWorkId()), "error", m.GetError())
	} else {
		a.log.Info("work failed; retrying later", "work_id", m.GetWorkId(), "worker_id", m.GetWorkerId(), "error", m.GetError(),
			"not_before", time.Unix(0, ev.GetNotBeforeUnixNano()))
	}
	a.notifyWorkers(c)
}

func (a *masterActor) onDeregister(c actor.Context, m *messages.DeregisterWorker) {
	if a.workers.get(m.GetWorkerId()) == nil {
		return
	}
	a.workers.remove(m.GetWorkerId())
	if !a.recovered {
		return
	}
	now := a.clock.Now()
	held := a.state.InProgressBy(m.GetWorkerId())
	for _, id := range held {
		a.emit(&messages.WorkerFailed{WorkId: id, WorkerId: m.GetWorkerId(), Error: "worker deregistered",
			AtUnixNano: now.UnixNano(), NotBeforeUnixNano: now.UnixNano()})
	}
	a.log.Info("worker deregistered", "worker_id", m.GetWorkerId(), "returned_work", len(held))
	a.notifyWorkers(c)
}

func (a *masterActor) onCleanup(c actor.Context) {
	now := a.clock.Now()
	for _, r := range a.state.Overdue(now, a.cfg.workTimeout) {
		ev, ok := a.state.TimeoutEvent(a.policy, r.WorkID, r.WorkerID, now)
		if !ok {
			continue
		}
		a.log.Info("work timed out", "work_id", r.WorkID, "worker_id", r.WorkerID, "dead", ev.GetDead())
		a.emit(ev)
		// As in the sample, a worker that let its work time out is
		// forgotten until it registers again.
		a.workers.remove(r.WorkerID)
	}
	for _, id := range a.workers.stale(now, a.cfg.workerDeadAfter, func(id string) bool { return a.state.RunningCount(id) > 0 }) {
		a.log.Info("too long since heard from worker; pruning", "worker_id", id)
		a.workers.remove(id)
	}
	before := now.Add(-a.cfg.doneRetention).UnixNano()
	if at, ok := a.state.OldestFinishedAt(); ok && at < before {
		a.emit(&messages.FinishedForgotten{BeforeUnixNano: before})
	}
	a.notifyWorkers(c)
	a.armCleanup()
}

func (a *masterActor) onGetWorkStatus(c actor.Context, m *messages.GetWorkStatus) {
	if a.state == nil {
		c.Respond(&messages.WorkStatusReply{WorkId: m.GetWorkId()})
		return
	}
	c.Respond(a.state.Status(m.GetWorkId()))
}

func (a *masterActor) onGetMasterStatus(c actor.Context) {
	st := &messages.MasterStatus{Address: a.self.GetAddress()}
	if a.state != nil {
		cnt := a.state.Counts()
		st.Pending, st.InProgress, st.Done, st.Dead, st.AcceptedTotal =
			int64(cnt.Pending), int64(cnt.InProgress), int64(cnt.Done), int64(cnt.Dead), cnt.AcceptedTotal
		for _, w := range a.workers.byID {
			if a.state.RunningCount(w.id) > 0 {
				st.BusyWorkers++
			} else {
				st.IdleWorkers++
			}
		}
	}
	c.Respond(st)
}
