package master

import (
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/messages"
)

// Messages the master sends itself. gen ties a timer to the recovery that
// armed it.
type (
	cleanupTick struct{ gen int64 }
	wakeTick    struct{ gen int64 }
	// startsTick writes the held hand-out records (WithStartedHold).
	startsTick struct{}
)

type masterActor struct {
	cfg       config
	rt        *persistence.Runtime
	j         persistence.Journal // read by the result feed, off the actor
	clock     clock.Clock
	policy    Policy
	log       *slog.Logger
	publisher Publisher
	root      *actor.RootContext
	self      *actor.PID

	state   *WorkState // decisions: every persisted event applied at once
	workers *workerRegistry

	// stash holds Work that arrived while the master recovered or waited
	// for its lease, answered once it serves (see onWork).
	stash []stashedWork

	gen          int64 // bumped on every recovery and stop
	releasedWork bool  // work was released since the last AfterDurable
	cleanupTimer clock.Timer
	earlyLogged  time.Time // when the limit's early forgetting was last logged
	wakeTimer    clock.Timer
	wakeAt       time.Time

	// heldStarts are hand-out records (WorkStarted, WorksStarted) applied
	// to the state and not yet journaled: the next journal write carries
	// them, or a startsTick after the hold (WithStartedHold).
	heldStarts  []proto.Message
	startsArmed bool

	// feed wakes the result feed's readers (feed.go); shared with their
	// goroutines, created with the actor.
	feed *feedHub

	// snapSize is what the previous snapshot weighed: the next one's
	// buffer is sized from it (snapshotMsg).
	snapSize snapshotSize
}

// Receive implements actor.Actor.
func (a *masterActor) Receive(c actor.Context) {
	if a.rt.Handle(c) {
		return
	}
	if len(a.heldStarts) > 0 && a.rt.Recovered() && showsState(c.Message()) {
		a.journal(nil, nil) // what an answer shows must be durable first
	}
	switch msg := c.Message().(type) {
	case *actor.Started:
		a.onStarted(c)
	case *actor.Stopping, *actor.Restarting:
		a.stopTimers()
		a.feed.close()
		if a.cfg.observer != nil {
			a.cfg.observer.Stopped(a.cfg.stream)
		}
		a.rejectStash("master: stopping; retry later")
	case *messages.Work:
		a.onWork(c, msg)
	case *messages.WorkBatch:
		a.onWorkBatch(c, msg)
	case *messages.RegisterWorker:
		a.onRegister(c, msg)
	case *messages.WorkerRequestsWork:
		a.onRequestsWork(c, msg)
	case *messages.WorkIsDone:
		a.onWorkIsDone(c, msg)
	case *messages.WorkIsDoneBatch:
		a.onWorkIsDoneBatch(c, msg)
	case *messages.WorkFailed:
		a.onWorkFailed(c, msg)
	case *messages.DeregisterWorker:
		a.onDeregister(c, msg)
	case *messages.GetWorkStatus:
		a.onGetWorkStatus(c, msg)
	case *messages.GetMasterStatus:
		a.onGetMasterStatus(c)
	case *messages.ListWork:
		a.onListWork(c, msg)
	case *messages.ResubmitWork:
		a.onResubmit(c, msg)
	case *messages.DetachWaiter:
		a.onDetachWaiter(c, msg)
	case *messages.ReadResults:
		a.onReadResults(c, msg)
	case *actor.Terminated:
		a.onReaderTerminated(msg)
	case *cleanupTick:
		if msg.gen == a.gen && a.rt.Recovered() {
			a.onCleanup(c)
		}
	case *startsTick:
		// Whatever activation armed it: held records are written within
		// a hold of being made.
		a.startsArmed = false
		if len(a.heldStarts) > 0 && a.rt.Recovered() {
			a.journal(nil, nil)
		}
	case *wakeTick:
		if msg.gen == a.gen && a.rt.Recovered() {
			a.wakeTimer, a.wakeAt = nil, time.Time{} // fired: the next armWake arms anew
			a.notifyWorkers(c)
		}
	}
}

func (a *masterActor) onStarted(c actor.Context) {
	a.root, a.self = c.ActorSystem().Root, c.Self()
	a.log = a.cfg.logger
	if a.log == nil {
		a.log = c.ActorSystem().Logger()
	}
	a.log = a.log.With("component", "master", "stream", a.cfg.stream, "pid", a.self.GetAddress()+"/"+a.self.GetId())
	a.publisher = a.cfg.publisher
	if a.publisher == nil {
		es := c.ActorSystem().EventStream
		a.publisher = PublisherFunc(func(r *messages.WorkResult) { es.Publish(r) })
	}
	a.rt.Start(c, a, a.onRecovered)
}

// onRecovered runs after every recovery, including the re-sync after a
// failed journal write.
func (a *masterActor) onRecovered(c actor.Context) {
	a.stopTimers()
	cnt := a.state.Counts()
	a.log.Info("master recovered", "epoch", a.rt.Epoch(), "seq", a.rt.DurableSeq(), "pending", cnt.Pending,
		"done", cnt.Done, "dead", cnt.Dead, "cancelled", cnt.Cancelled, "stashed", len(a.stash))
	a.observeRecovered()
	a.armCleanup()
	a.feed.resetTail(a.rt.DurableSeq())
	a.feed.advance(a.rt.DurableSeq(), true)
	a.notifyWorkers(c)
	for _, s := range a.stash {
		// Behind what is already in the mailbox: submissions from different
		// callers have no order to keep.
		c.RequestWithCustomSender(c.Self(), s.msg, s.sender)
	}
	a.stash = nil
}

// stashedWork is a submission (a *messages.Work or *messages.WorkBatch)
// held while the master recovers.
type stashedWork struct {
	msg    proto.Message
	sender *actor.PID
}

// rejectStash turns the stashed submissions away with reason.
func (a *masterActor) rejectStash(reason string) {
	for _, s := range a.stash {
		a.tell(s.sender, unavailable(s.msg, reason))
	}
	a.stash = nil
}

func (a *masterActor) stopTimers() {
	a.gen++
	for _, t := range []clock.Timer{a.cleanupTimer, a.wakeTimer} {
		if t != nil {
			t.Stop()
		}
	}
	a.cleanupTimer, a.wakeTimer, a.wakeAt = nil, nil, time.Time{}
}

func (a *masterActor) armCleanup() {
	a.cleanupTimer = a.after(a.cfg.workTimeout/2, &cleanupTick{gen: a.gen})
}

// after sends msg to the master after d, on the injected clock.
func (a *masterActor) after(d time.Duration, msg any) clock.Timer {
	root, self := a.root, a.self
	return a.clock.AfterFunc(d, func() { root.Send(self, msg) })
}

// armWake makes sure idle workers are told when work becomes ready at t.
func (a *masterActor) armWake(t time.Time) {
	if a.wakeTimer != nil && !a.wakeAt.IsZero() && !a.wakeAt.After(t) {
		return // an earlier wake is armed
	}
	if a.wakeTimer != nil {
		a.wakeTimer.Stop()
	}
	a.wakeAt = t
	a.wakeTimer = a.after(max(t.Sub(a.clock.Now()), 0), &wakeTick{gen: a.gen})
}

// persist applies ev to the decision state and journals it; then runs once
// it is durable.
func (a *masterActor) persist(ev proto.Message, then func()) {
	if err := a.state.Apply(ev); err != nil {
		panic(err) // the master only persists events WorkState knows
	}
	a.journal([]proto.Message{ev}, then)
}

// outcome is a work that an event just finished: what its waiters are told.
type outcome struct {
	waiter *messages.PID
	more   []*messages.PID // further callers' waiters (WaiterAdded)
	res    *messages.WorkResult
}

// journal persists events already applied to the decision state: every
// journal write of the master goes through it. Once they are durable it
// reports them to the observer, runs then, tells the waiter of each work
// they finished its outcome (WorkResult with the final status), publishes
// completed results and wakes the result feed's readers.
func (a *masterActor) journal(events []proto.Message, then func()) {
	if len(a.heldStarts) > 0 {
		events = append(a.heldStarts, events...) // applied first: written first
		a.heldStarts = nil
	}
	if len(events) == 0 {
		return
	}
	observed := a.observeDurable(events)
	var (
		outs    []outcome
		entries []*messages.FeedEntry // the feed's, for its in-memory tail
	)
	first := a.rt.LastSeq() + 1
	for i, ev := range events {
		if e := feedEntry(first+int64(i), ev); e != nil {
			entries = append(entries, e)
		}
		if id, ok := finishingID(ev); ok {
			if res, waiter, more, finished := a.state.Outcome(id); finished {
				outs = append(outs, outcome{waiter: waiter, more: more, res: res})
			}
		}
	}
	if len(outs) == 0 && observed == nil && len(entries) == 0 {
		a.rt.Persist(events, then)
		return
	}
	seq := a.rt.LastSeq() + int64(len(events))
	a.rt.Persist(events, func() {
		if observed != nil {
			observed()
		}
		if then != nil {
			then()
		}
		if len(entries) > 0 {
			a.feed.addTail(entries)
		}
		if len(outs) == 0 {
			return
		}
		for _, o := range outs {
			if o.waiter != nil {
				a.tell(actor.NewPID(o.waiter.GetAddress(), o.waiter.GetId()), o.res)
			}
			for _, w := range o.more {
				a.tell(actor.NewPID(w.GetAddress(), w.GetId()), o.res)
			}
			if o.res.GetStatus() == statusDone {
				a.publisher.Publish(&messages.WorkResult{WorkId: o.res.GetWorkId(), JobType: o.res.GetJobType(), Result: o.res.GetResult()})
			}
		}
		a.feed.advance(seq, true)
	})
}

// holdStarts keeps hand-out records for the next journal write, and makes
// sure one happens within the hold.
func (a *masterActor) holdStarts(events []proto.Message) {
	a.heldStarts = append(a.heldStarts, events...)
	if !a.startsArmed {
		// Wall-clock time, not the injected clock: the hold only groups
		// writes; no decision depends on it.
		a.startsArmed = true
		root, self, tick := a.root, a.self, &startsTick{}
		time.AfterFunc(a.cfg.startedHold, func() { root.Send(self, tick) })
	}
}

// onlyStarts reports whether events are all hand-out records.
func onlyStarts(events []proto.Message) bool {
	for _, ev := range events {
		switch ev.(type) {
		case *messages.WorkStarted, *messages.WorksStarted:
		default:
			return false
		}
	}
	return true
}

// showsState reports whether the answer to msg shows the master's state
// (status, lists, results), so that held hand-out records must be durable
// first. Submissions, results and requests for work do not: their answers
// say only what their own events made durable.
func showsState(msg any) bool {
	switch msg.(type) {
	case *messages.Work, *messages.WorkBatch, *messages.WorkIsDone, *messages.WorkIsDoneBatch,
		*messages.WorkerRequestsWork, *messages.RegisterWorker, *startsTick,
		*actor.Stopping, *actor.Stopped, *actor.Restarting: // stopping: held records are lost, as in a crash
		return false
	}
	return true
}

// finishingID returns the work id of an event that may finish a work.
func finishingID(ev proto.Message) (string, bool) {
	switch ev := ev.(type) {
	case *messages.WorkCompleted:
		return ev.GetWorkId(), true
	case *messages.WorkerFailed:
		return ev.GetWorkId(), ev.GetDead() || ev.GetCancelled()
	case *messages.WorkerTimedOut:
		return ev.GetWorkId(), ev.GetDead()
	case *messages.WorkExpired:
		return ev.GetWorkId(), true
	}
	return "", false
}

func (a *masterActor) onWork(c actor.Context, w *messages.Work) {
	sender := c.Sender()
	if a.holdWhileRecovering(w, sender) {
		return
	}
	if r := a.cfg.check(w); r != nil {
		a.tell(sender, r)
		return
	}
	at := a.clock.Now().UnixNano()
	stored, joined := a.admit(w, at)
	switch {
	case stored != nil:
		ev := &messages.WorkAccepted{Work: stored, AtUnixNano: at}
		id := stored.GetWorkId()
		a.journal([]proto.Message{ev}, func() {
			a.state.Release(id)
			a.releasedWork = true
		})
	case joined != nil:
		a.journal([]proto.Message{joined}, nil)
	}
	// Sent once what holds the work (this event, or a duplicate's earlier
	// one) is durable.
	a.rt.Reply(sender, &messages.Ack{WorkId: w.GetWorkId()})
}

// holdWhileRecovering handles a submission that arrives before the master
// serves: true when it was stashed or turned away. As Akka's persistent
// actors do, commands are held while recovering (and waiting for the lease,
// a failover's last step), so that a submission sent to a new master is
// acked the moment it serves, not after the caller's retry backoff. Not
// while the journal fails: a caller should hear "unavailable" at once then.
// Bounded.
func (a *masterActor) holdWhileRecovering(msg proto.Message, sender *actor.PID) bool {
	if a.rt.Recovered() {
		return false
	}
	if !a.rt.RecoveryFailing() && len(a.stash) < a.cfg.recoveryStash {
		a.stash = append(a.stash, stashedWork{msg: msg, sender: sender})
		return true
	}
	a.tell(sender, unavailable(msg, "master: recovering from the journal; retry later"))
	return true
}

// unavailable is the answer that turns a submission away for now: a
// WorkRejected for a Work, every outcome rejected for a WorkBatch.
func unavailable(msg proto.Message, reason string) proto.Message {
	if b, ok := msg.(*messages.WorkBatch); ok {
		out := make([]*messages.BatchOutcome, len(b.GetWorks()))
		for i, w := range b.GetWorks() {
			out[i] = &messages.BatchOutcome{WorkId: w.GetWorkId(), Code: messages.RejectCode_REJECT_CODE_UNAVAILABLE, Reason: reason}
		}
		return &messages.WorkBatchAck{Outcomes: out}
	}
	w, _ := msg.(*messages.Work)
	return &messages.WorkRejected{WorkId: w.GetWorkId(), Code: messages.RejectCode_REJECT_CODE_UNAVAILABLE, Reason: reason}
}

// admit takes a valid submission into the state as accepted at at: it
// returns the work as stored, for the WorkAccepted (or WorksAccepted) event
// to persist, or nil for an id already accepted. The work is known at once
// (a duplicate is recognised) but handed out only once the event is durable
// and the caller releases it: a crash can never erase work a worker has run.
//
// A duplicate of an unfinished work whose caller waits (a retried POST
// /work?wait= after a dropped connection, a Call retried with the same id)
// adds its waiter: joined is the WaiterAdded event, applied, to persist. The
// work is then skipped as cancelled only once every caller that waits for it
// has gone, not because the first one did.
func (a *masterActor) admit(w *messages.Work, at int64) (stored *messages.Work, joined *messages.WaiterAdded) {
	id := w.GetWorkId()
	if a.state.IsAccepted(id) {
		wp := w.GetWaiter()
		switch {
		case wp == nil:
		case a.state.IsFinished(id):
			// A caller waiting on a job that already finished (a retried
			// POST ?wait): tell its waiter the outcome now.
			res, _, _, _ := a.state.Outcome(id)
			a.rt.Reply(actor.NewPID(wp.GetAddress(), wp.GetId()), res)
		case a.state.WaiterJoins(id, wp):
			joined = &messages.WaiterAdded{WorkId: id, Waiter: wp}
			if err := a.state.Apply(joined); err != nil {
				panic(err) // WorkState knows WaiterAdded
			}
		}
		return nil, joined
	}
	stored = messages.StoredWork(w)
	a.state.acceptHeld(stored, at)
	return stored, nil
}

// AfterDurable implements persistence.AfterDurable: once the work a group
// commit accepted is released, idle workers are told, one WorkIsReady per
// commit.
func (a *masterActor) AfterDurable(c actor.Context) {
	a.observeCounts()
	a.feed.advance(a.rt.DurableSeq(), false)
	if a.releasedWork {
		a.releasedWork = false
		a.notifyWorkers(c)
	}
}

// tell answers at once, for replies that record nothing (rejections).
func (a *masterActor) tell(to *actor.PID, msg proto.Message) {
	if to != nil {
		a.root.RequestWithCustomSender(to, msg, a.self)
	}
}

// notifyWorkers tells each wanting worker that can run a ready job
// WorkIsReady (see workerRegistry.readyToTell).
func (a *masterActor) notifyWorkers(c actor.Context) {
	told, wakeAt := a.workers.readyToTell(a.state, a.clock.Now())
	for _, w := range told {
		c.Request(w.pid, &messages.WorkIsReady{})
	}
	if !wakeAt.IsZero() {
		a.armWake(wakeAt)
	}
}

func (a *masterActor) onRegister(c actor.Context, m *messages.RegisterWorker) {
	if m.GetWorkerId() == "" {
		return
	}
	pid := pids.Actor(m.GetWorker())
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
		a.observeCounts()
		if theirs, ours := int(m.GetShards()), max(a.cfg.shards, 1); theirs != 0 && theirs != ours {
			// Its node registers with the wrong set of masters: shards
			// beyond its N get no work from it, or it looks for shards
			// that do not exist. Said where the operator looks first.
			a.log.Warn("a worker routes over another number of shards than this cluster's; start its node with the cluster's --shards",
				"worker_id", w.id, "worker", pid.GetAddress()+"/"+pid.GetId(), "worker_shards", theirs, "cluster_shards", ours)
		}
	}
	if !a.rt.Recovered() {
		return
	}
	if a.workers.registered(w, isNew, a.state, now) {
		c.Request(w.pid, &messages.WorkIsReady{})
	}
}

func (a *masterActor) onRequestsWork(c actor.Context, m *messages.WorkerRequestsWork) {
	now := a.clock.Now()
	w := a.workers.get(m.GetWorkerId())
	var pid *actor.PID
	switch wp := m.GetWorker(); {
	case wp != nil && w != nil && pids.Same(wp, w.pid):
		pid = w.pid // the usual case: keep the PID that caches its process
	case wp != nil:
		pid = pids.Actor(wp)
	default:
		pid = c.Sender()
	}
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
	if !a.rt.Recovered() {
		return
	}
	a.dispatch(c, w, max(int(m.GetCapacity()), 1), now, m.GetBundles())
}

// dispatch hands out up to n ready works to w (planDispatch). Only work
// whose WorkAccepted is durable is ready (AcceptHeld). The Work is sent
// without waiting for its WorkStarted to be durable (unless
// WithAwaitStarted): recovery returns in-progress work to pending, so a lost
// WorkStarted only means the work runs again.
//
// With bundles (the worker said it takes them) the works of one request go
// in one WorkBundle; otherwise one Work each.
func (a *masterActor) dispatch(c actor.Context, w *workerInfo, n int, now time.Time, bundles bool) {
	p := planDispatch(a.state, a.cfg.limiters, w.accepts, w.id, n, now)
	switch {
	case len(p.events) == 0:
	case a.cfg.startedHold > 0 && !a.cfg.awaitStarted && onlyStarts(p.events):
		a.holdStarts(p.events)
	default:
		a.journal(p.events, nil)
	}
	send := func(out proto.Message) {
		if a.cfg.awaitStarted {
			a.rt.Reply(w.pid, out)
		} else {
			c.Request(w.pid, out)
		}
	}
	if bundles && len(p.works) > 1 {
		// One message for the hand-out of one request: under load a
		// worker asks for several jobs at once.
		send(&messages.WorkBundle{Works: p.works})
	} else {
		for _, out := range p.works {
			send(out)
		}
	}
	a.workers.setWanting(w, p.short)
	if !p.wakeAt.IsZero() {
		a.armWake(p.wakeAt)
	}
}

func (a *masterActor) onWorkIsDone(c actor.Context, m *messages.WorkIsDone) {
	to, now := a.resultSender(c, m.GetWorkerId())
	if !a.rt.Recovered() {
		return // the worker re-sends until acknowledged
	}
	if ev := a.completion(m, now); ev != nil {
		a.persist(ev, nil)
	}
	a.rt.Reply(to, &messages.Ack{WorkId: m.GetWorkId()})
}

// onWorkIsDoneBatch records several results in one journal write and
// acknowledges them together once they are durable.
func (a *masterActor) onWorkIsDoneBatch(c actor.Context, m *messages.WorkIsDoneBatch) {
	to, now := a.resultSender(c, m.GetWorkerId())
	if !a.rt.Recovered() {
		return // the worker re-sends until acknowledged
	}
	var events []proto.Message
	ids := make([]string, 0, len(m.GetDone()))
	for _, d := range m.GetDone() {
		if d.GetWorkerId() == "" {
			d.WorkerId = m.GetWorkerId() // the batch names it once
		}
		if ev := a.completion(d, now); ev != nil {
			if err := a.state.Apply(ev); err != nil {
				panic(err) // a WorkCompleted of a known, unfinished work applies
			}
			events = append(events, ev)
		}
		ids = append(ids, d.GetWorkId())
	}
	if len(events) > 0 {
		a.journal(events, nil)
	}
	a.rt.Reply(to, &messages.AckBatch{WorkIds: ids})
}

// resultSender notes that the worker reporting a result is alive and
// returns where its Ack goes: the sender, or the worker's registered PID.
func (a *masterActor) resultSender(c actor.Context, workerID string) (*actor.PID, time.Time) {
	to, now := c.Sender(), a.clock.Now()
	if w := a.workers.get(workerID); w != nil {
		w.lastSeen = now
		if to == nil {
			to = w.pid
		}
	}
	return to, now
}

// completion returns the WorkCompleted that a reported result makes, or
// nil when there is nothing to record: the work is done already (the
// previous Ack was lost) or unknown (forgotten after the retention, or
// never durably accepted; the result has no one to go to). Either way the
// worker is acknowledged, so it stops re-sending.
func (a *masterActor) completion(m *messages.WorkIsDone, now time.Time) *messages.WorkCompleted {
	jobType := a.state.JobType(m.GetWorkId())
	switch {
	case jobType == "":
		a.log.Debug("done reported for an unknown work", "work_id", m.GetWorkId(), "worker_id", m.GetWorkerId())
		return nil
	case a.state.IsDone(m.GetWorkId()):
		return nil
	}
	return &messages.WorkCompleted{WorkId: m.GetWorkId(), WorkerId: m.GetWorkerId(), Result: m.GetResult(),
		AtUnixNano: now.UnixNano(), JobType: jobType}
}

func (a *masterActor) onWorkFailed(c actor.Context, m *messages.WorkFailed) {
	now := a.clock.Now()
	if w := a.workers.get(m.GetWorkerId()); w != nil {
		w.lastSeen = now
	}
	if !a.rt.Recovered() {
		return
	}
	ev, ok := a.state.FailureEvent(a.policy, m.GetWorkId(), m.GetWorkerId(), m.GetError(), now)
	if !ok {
		a.log.Debug("failure reported for work the worker does not hold", "work_id", m.GetWorkId(), "worker_id", m.GetWorkerId())
		return
	}
	if m.GetCancelled() {
		if left, ok := a.state.WaiterLeftEvent(m.GetWorkId(), m.GetWorkerId(), m.GetError(), now); ok {
			// The caller asked about it left, but another one still
			// waits: the work goes back to its queue, asked about
			// through that caller's waiter.
			a.persist(left, nil)
			a.log.Info("a caller of the work left; another still waits: handing it out again", "work_id", m.GetWorkId(),
				"worker_id", m.GetWorkerId(), "error", m.GetError())
			a.notifyWorkers(c)
			return
		}
		// The caller stopped waiting: the work ends CANCELLED, not retried
		// (no one would take the result) and not dead (nothing is wrong
		// with it); re-submitting the id runs it again.
		ev.Cancelled, ev.Dead, ev.NotBeforeUnixNano = true, false, 0
	} else if m.GetPermanent() {
		// A retry cannot help (bad payload, unknown type, caller gone):
		// the work is dead now, visible and re-submittable, and its
		// remaining attempts are not wasted. The event records the
		// decision, so replay agrees.
		ev.Dead, ev.NotBeforeUnixNano = true, 0
	}
	a.persist(ev, nil)
	switch {
	case ev.GetCancelled():
		a.log.Info("work cancelled: its caller stopped waiting", "work_id", m.GetWorkId(), "error", m.GetError())
	case ev.GetDead():
		a.log.Warn("work is dead: out of attempts", "work_id", m.GetWorkId(), "attempts", a.state.Attempts(m.GetWorkId()), "error", m.GetError())
	default:
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
	a.observeCounts()
	if !a.rt.Recovered() {
		return
	}
	now := a.clock.Now()
	held := a.state.InProgressBy(m.GetWorkerId())
	for _, id := range held {
		a.persist(&messages.WorkerFailed{WorkId: id, WorkerId: m.GetWorkerId(), Error: "worker deregistered",
			AtUnixNano: now.UnixNano(), NotBeforeUnixNano: now.UnixNano()}, nil)
	}
	a.log.Info("worker deregistered", "worker_id", m.GetWorkerId(), "returned_work", len(held))
	a.notifyWorkers(c)
}

func (a *masterActor) onCleanup(c actor.Context) {
	now := a.clock.Now()
	events, early := planCleanup(a.state, a.policy, a.cfg.workTimeout, a.cfg.doneRetention, a.cfg.doneLimit, now)
	if early > 0 && now.Sub(a.earlyLogged) >= time.Minute {
		a.earlyLogged = now
		a.log.Warn("finished works forgotten before their retention: more are finished than the limit keeps; a re-submitted id among them runs again (raise WithDoneLimit, --done-limit, if that window is too short)",
			"forgotten", early, "limit", a.cfg.doneLimit, "retention", a.cfg.doneRetention)
	}
	for _, ev := range events {
		if to, ok := ev.(*messages.WorkerTimedOut); ok {
			a.log.Info("work timed out", "work_id", to.GetWorkId(), "worker_id", to.GetWorkerId(), "dead", to.GetDead())
			// As in the sample, a worker that let its work time out is
			// forgotten until it registers again.
			a.workers.remove(to.GetWorkerId())
		}
	}
	if len(events) > 0 {
		a.journal(events, nil)
	}
	for _, id := range a.workers.stale(now, a.cfg.workerDeadAfter, func(id string) bool { return a.state.RunningCount(id) > 0 }) {
		a.log.Info("too long since heard from worker; pruning", "worker_id", id)
		a.workers.remove(id)
	}
	a.notifyWorkers(c)
	a.armCleanup()
}

// Status answers reflect the decision state at the query but leave only
// once everything persisted before it is durable: they never show what a
// crash could undo.
func (a *masterActor) onGetWorkStatus(c actor.Context, m *messages.GetWorkStatus) {
	if !a.rt.Recovered() {
		// Not "unknown": the state is not read back yet, and a caller
		// that took this for "never accepted" would be wrong (HTTP 503,
		// not 404).
		c.Respond(&messages.WorkRejected{WorkId: m.GetWorkId(), Code: messages.RejectCode_REJECT_CODE_UNAVAILABLE,
			Reason: "master: recovering from the journal; ask again later"})
		return
	}
	a.rt.Reply(c.Sender(), a.state.Status(m.GetWorkId()))
}

func (a *masterActor) onGetMasterStatus(c actor.Context) {
	st := &messages.MasterStatus{Address: a.self.GetAddress(), Epoch: a.rt.Epoch()}
	if !a.rt.Recovered() {
		c.Respond(st)
		return
	}
	cnt := a.state.Counts()
	st.Pending, st.InProgress, st.Done, st.Dead, st.AcceptedTotal, st.Cancelled =
		int64(cnt.Pending), int64(cnt.InProgress), int64(cnt.Done), int64(cnt.Dead), cnt.AcceptedTotal, int64(cnt.Cancelled)
	for _, w := range a.workers.byID {
		if a.state.RunningCount(w.id) > 0 {
			st.BusyWorkers++
		} else {
			st.IdleWorkers++
		}
	}
	a.rt.Reply(c.Sender(), st)
}

// onDetachWaiter forgets the waiter of an unfinished work (its caller stopped
// waiting, the job goes on) and acknowledges once that is durable.
func (a *masterActor) onDetachWaiter(c actor.Context, m *messages.DetachWaiter) {
	if !a.rt.Recovered() {
		a.tell(c.Sender(), &messages.WorkRejected{WorkId: m.GetWorkId(), Code: messages.RejectCode_REJECT_CODE_UNAVAILABLE,
			Reason: "master: recovering from the journal; retry later"})
		return
	}
	if a.state.Waiter(m.GetWorkId()) != nil && !a.state.IsFinished(m.GetWorkId()) {
		a.persist(&messages.WaiterDetached{WorkId: m.GetWorkId()}, nil)
	}
	a.rt.Reply(c.Sender(), &messages.Ack{WorkId: m.GetWorkId()})
}
