package core

import (
	"log/slog"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/messages"
)

// Inputs of Master.Step besides effect.Fired and effect.Durable. From is
// the sender of a request: where its Reply goes.
type (
	// Submit is a Work from a frontend.
	Submit struct {
		From *messages.PID
		Work *messages.Work
	}
	// SubmitBatch is a WorkBatch from a frontend.
	SubmitBatch struct {
		From  *messages.PID
		Batch *messages.WorkBatch
	}
	// Register is a RegisterWorker.
	Register struct {
		From *messages.PID
		Msg  *messages.RegisterWorker
	}
	// RequestWork is a WorkerRequestsWork.
	RequestWork struct {
		From *messages.PID
		Msg  *messages.WorkerRequestsWork
	}
	// Done is a WorkIsDone.
	Done struct {
		From *messages.PID
		Msg  *messages.WorkIsDone
	}
	// DoneBatch is a WorkIsDoneBatch.
	DoneBatch struct {
		From *messages.PID
		Msg  *messages.WorkIsDoneBatch
	}
	// Failed is a WorkFailed.
	Failed struct{ Msg *messages.WorkFailed }
	// Deregister is a DeregisterWorker.
	Deregister struct{ Msg *messages.DeregisterWorker }
	// GetStatus is a GetWorkStatus.
	GetStatus struct {
		From *messages.PID
		Msg  *messages.GetWorkStatus
	}
	// GetMasterStatus is a GetMasterStatus; Address and Epoch are the
	// runner's, reported as they are.
	GetMasterStatus struct {
		From    *messages.PID
		Address string
		Epoch   int64
	}
	// List is a ListWork.
	List struct {
		From *messages.PID
		Msg  *messages.ListWork
	}
	// Resubmit is a ResubmitWork.
	Resubmit struct {
		From *messages.PID
		Msg  *messages.ResubmitWork
	}
	// Detach is a DetachWaiter.
	Detach struct {
		From *messages.PID
		Msg  *messages.DetachWaiter
	}
	// Serving tells the core until when it may hand out and answer: the
	// journal is recovered and the lease is this activation's until Until
	// (zero: it is not). RecoveryFailing says a recovery attempt failed
	// and the runner waits to try again: submissions are turned away then
	// rather than held.
	Serving struct {
		Until           time.Time
		RecoveryFailing bool
	}
	// Recovered says the state (Reset, then State().Apply of each journal
	// event) is read back and the core serves; it arms its timers, tells
	// waiting workers of ready work and takes the submissions it held.
	Recovered struct{}
	// Committed says the Durable steps of one group commit are done. Work
	// released by them is announced to idle workers once per commit. A
	// runner without group commit steps it after each Durable.
	Committed struct{}
	// Stopping says the activation stops; held submissions are turned away.
	Stopping struct{}
	// Flush says something the runner answers itself shows the state (the
	// result feed): held hand-out records are journaled first.
	Flush struct{}
)

// Publish is the core's own effect: a completed work's result, to publish
// (the result hint of master.Publisher) once it is durable.
type Publish struct{ Result *messages.WorkResult }

// IsEffect marks Publish as an effect.Effect.
func (Publish) IsEffect() {}

// StartsTimer names the timer that writes held hand-out records
// (Config.StartedHold). The hold only groups journal writes and no
// decision depends on it: a runner may arm it on wall-clock time.
const StartsTimer = "starts"

// Names of the timers tied to one activation: the name carries the
// generation, so that a fire from before a recovery is recognised.
const (
	cleanupTimer = "cleanup/"
	wakeTimer    = "wake/"
)

// Master is the master's protocol as a value (see the package doc).
type Master struct {
	cfg     Config
	state   *WorkState
	workers *workerRegistry

	until   time.Time // serving while now is before it
	failing bool      // the last recovery attempt failed
	stash   []stashed

	gen          int64 // bumped on every recovery and stop
	cleanupName  string
	wakeName     string
	wakeAt       time.Time
	earlyLogged  time.Time
	releasedWork bool

	// heldStarts are hand-out records applied to the state and not yet
	// journaled: the next Append carries them, or the StartsTimer's.
	heldStarts  []proto.Message
	startsArmed bool

	token   uint64
	waiting map[uint64]*afterDurable

	out []effect.Effect
}

// stashed is a submission (Submit or SubmitBatch) held while not serving.
type stashed struct {
	from *messages.PID
	work *messages.Work
	b    *messages.WorkBatch
}

// afterDurable is what waits for one Append to be durable.
type afterDurable struct {
	outs    []outcome
	release []string
}

// outcome is a work that an event finished: what its waiters are told.
type outcome struct {
	waiter *messages.PID
	more   []*messages.PID
	res    *messages.WorkResult
}

// New returns a master core with an empty state, not serving.
func New(cfg Config) *Master {
	return &Master{cfg: cfg, state: NewWorkState(), workers: newWorkerRegistry(), waiting: make(map[uint64]*afterDurable)}
}

// State is the decision state. A runner replays the journal into it
// (Apply) after Reset, and reads it for snapshots and metrics; it changes
// it no other way.
func (m *Master) State() *WorkState { return m.state }

// Reset replaces the state (recovery from a snapshot, or NewWorkState),
// dropping held hand-out records and what waited for writes that recovery
// supersedes.
func (m *Master) Reset(st *WorkState) {
	m.state = st
	m.heldStarts = nil
	clear(m.waiting)
}

// Stashed is how many submissions are held until the core serves.
func (m *Master) Stashed() int { return len(m.stash) }

// WorkerLoad counts the registered workers holding no work and some.
func (m *Master) WorkerLoad() (idle, busy int) {
	for _, w := range m.workers.byID {
		if m.state.RunningCount(w.id) > 0 {
			busy++
		} else {
			idle++
		}
	}
	return idle, busy
}

// IsWorker reports whether id is a registered worker.
func (m *Master) IsWorker(id string) bool { return m.workers.get(id) != nil }

// serving reports whether the core may hand out and answer at now.
func (m *Master) serving(now time.Time) bool { return now.Before(m.until) }

// Step takes one input at now and returns the effects, to carry out in
// order. The slice is the core's and valid until the next Step.
func (m *Master) Step(now time.Time, in any) []effect.Effect {
	m.out = m.out[:0]
	switch in := in.(type) {
	case Submit:
		m.onSubmit(now, in.From, in.Work)
	case SubmitBatch:
		m.onBatch(now, in.From, in.Batch)
	case Register:
		m.onRegister(now, in)
	case RequestWork:
		m.onRequestWork(now, in)
	case Done:
		m.onDone(now, in)
	case DoneBatch:
		m.onDoneBatch(now, in)
	case effect.Durable:
		m.onDurable(in.Token)
	case Committed:
		if m.releasedWork {
			m.releasedWork = false
			m.notifyWorkers(now)
		}
	case effect.Fired:
		m.onFired(now, in.Name)
	case Serving:
		m.until, m.failing = in.Until, in.RecoveryFailing
	case Recovered:
		m.onRecovered(now)
	case Stopping:
		m.stopTimers()
		m.rejectStash("master: stopping; retry later")
	default:
		m.flushHeld(now) // what the answer shows must be durable first
		m.onQuery(now, in)
	}
	return m.out
}

func (m *Master) onQuery(now time.Time, in any) {
	switch in := in.(type) {
	case Failed:
		m.onFailed(now, in.Msg)
	case Deregister:
		m.onDeregister(now, in.Msg)
	case GetStatus:
		m.onGetStatus(now, in)
	case GetMasterStatus:
		m.onGetMasterStatus(now, in)
	case List:
		if !m.serving(now) {
			m.reply(in.From, &messages.WorkList{}, false)
			return
		}
		m.reply(in.From, m.state.List(in.Msg.GetStatus(), int(in.Msg.GetLimit())), true)
	case Resubmit:
		m.onResubmit(now, in)
	case Detach:
		m.onDetach(now, in)
	}
}

func (m *Master) emit(e effect.Effect) { m.out = append(m.out, e) }

func (m *Master) reply(to *messages.PID, msg proto.Message, afterDurable bool) {
	m.emit(effect.Reply{To: to, Msg: msg, AfterDurable: afterDurable})
}

func (m *Master) send(to *messages.PID, msg proto.Message) {
	if to != nil {
		m.emit(effect.Send{To: to, Msg: msg})
	}
}

func (m *Master) log(level slog.Level, msg string, attrs ...any) {
	m.emit(effect.Log{Level: level, Msg: msg, Attrs: attrs})
}

func (m *Master) timer(name string, at time.Time) { m.emit(effect.Timer{Name: name, At: at}) }

func (m *Master) onFired(now time.Time, name string) {
	switch {
	case name == StartsTimer:
		// Whatever activation armed it: held records are written within
		// a hold of being made.
		m.startsArmed = false
		m.flushHeld(now)
	case name == m.cleanupName && m.serving(now):
		m.flushHeld(now)
		m.onCleanup(now)
	case name == m.wakeName && m.serving(now):
		m.flushHeld(now)
		m.wakeName, m.wakeAt = "", time.Time{} // fired: the next armWake arms anew
		m.notifyWorkers(now)
	}
}

func (m *Master) onRecovered(now time.Time) {
	m.stopTimers()
	m.armCleanup(now)
	m.notifyWorkers(now)
	stash := m.stash
	m.stash = nil
	for _, s := range stash {
		if s.b != nil {
			m.onBatch(now, s.from, s.b)
		} else {
			m.onSubmit(now, s.from, s.work)
		}
	}
}

func (m *Master) stopTimers() {
	m.gen++
	for _, n := range []string{m.cleanupName, m.wakeName} {
		if n != "" {
			m.emit(effect.StopTimer{Name: n})
		}
	}
	m.cleanupName, m.wakeName, m.wakeAt = "", "", time.Time{}
}

func (m *Master) armCleanup(now time.Time) {
	m.cleanupName = cleanupTimer + strconv.FormatInt(m.gen, 10)
	m.timer(m.cleanupName, now.Add(m.cfg.WorkTimeout/2))
}

// armWake makes sure idle workers are told when work becomes ready at t.
func (m *Master) armWake(t time.Time) {
	if m.wakeName != "" && !m.wakeAt.IsZero() && !m.wakeAt.After(t) {
		return // an earlier wake is armed
	}
	m.wakeName, m.wakeAt = wakeTimer+strconv.FormatInt(m.gen, 10), t
	m.timer(m.wakeName, t)
}

// rejectStash turns the stashed submissions away with reason.
func (m *Master) rejectStash(reason string) {
	for _, s := range m.stash {
		if s.b != nil {
			m.reply(s.from, unavailable(nil, s.b, reason), false)
		} else {
			m.reply(s.from, unavailable(s.work, nil, reason), false)
		}
	}
	m.stash = nil
}

// unavailable is the answer that turns a submission away for now: a
// WorkRejected for a Work, every outcome rejected for a WorkBatch.
func unavailable(w *messages.Work, b *messages.WorkBatch, reason string) proto.Message {
	if b != nil {
		out := make([]*messages.BatchOutcome, len(b.GetWorks()))
		for i, w := range b.GetWorks() {
			out[i] = &messages.BatchOutcome{WorkId: w.GetWorkId(), Code: messages.RejectCode_REJECT_CODE_UNAVAILABLE, Reason: reason}
		}
		return &messages.WorkBatchAck{Outcomes: out}
	}
	return &messages.WorkRejected{WorkId: w.GetWorkId(), Code: messages.RejectCode_REJECT_CODE_UNAVAILABLE, Reason: reason}
}

// holdWhileRecovering handles a submission that arrives before the master
// serves: true when it was stashed or turned away. As Akka's persistent
// actors do, commands are held while recovering (and waiting for the lease,
// a failover's last step), so that a submission sent to a new master is
// acked the moment it serves, not after the caller's retry backoff. Not
// while the journal fails: a caller should hear "unavailable" at once then.
// Bounded.
func (m *Master) holdWhileRecovering(now time.Time, s stashed) bool {
	if m.serving(now) {
		return false
	}
	if !m.failing && len(m.stash) < m.cfg.RecoveryStash {
		m.stash = append(m.stash, s)
		return true
	}
	m.reply(s.from, unavailable(s.work, s.b, "master: recovering from the journal; retry later"), false)
	return true
}

// persist applies ev to the state and journals it.
func (m *Master) persist(now time.Time, ev proto.Message, release ...string) {
	if err := m.state.Apply(ev); err != nil {
		panic(err) // the master only persists events WorkState knows
	}
	m.journal([]proto.Message{ev}, release)
}

// flushHeld journals the held hand-out records, when serving.
func (m *Master) flushHeld(now time.Time) {
	if len(m.heldStarts) > 0 && m.serving(now) {
		m.journal(nil, nil)
	}
}

// journal appends events already applied to the state: every journal
// write of the master goes through it, after the held hand-out records.
// Once durable (Durable with its token) the works in release are handed
// out from then on, and the waiters of each work the events finished are
// told its outcome.
func (m *Master) journal(events []proto.Message, release []string) {
	if len(m.heldStarts) > 0 {
		events = append(m.heldStarts, events...) // applied first: written first
		m.heldStarts = nil
	}
	if len(events) == 0 {
		return
	}
	var w *afterDurable
	for _, ev := range events {
		if id, ok := finishingID(ev); ok {
			if res, waiter, more, finished := m.state.Outcome(id); finished {
				if w == nil {
					w = &afterDurable{}
				}
				w.outs = append(w.outs, outcome{waiter: waiter, more: more, res: res})
			}
		}
	}
	if len(release) > 0 {
		if w == nil {
			w = &afterDurable{}
		}
		w.release = release
	}
	var token uint64
	if w != nil {
		m.token++
		token = m.token
		m.waiting[token] = w
	}
	m.emit(effect.Append{Events: events, Token: token})
}

func (m *Master) onDurable(token uint64) {
	w := m.waiting[token]
	if w == nil {
		return
	}
	delete(m.waiting, token)
	for _, id := range w.release {
		m.state.Release(id)
	}
	if len(w.release) > 0 {
		m.releasedWork = true
	}
	for _, o := range w.outs {
		m.send(o.waiter, o.res)
		for _, p := range o.more {
			m.send(p, o.res)
		}
		if o.res.GetStatus() == statusDone {
			m.emit(Publish{Result: &messages.WorkResult{WorkId: o.res.GetWorkId(), JobType: o.res.GetJobType(), Result: o.res.GetResult()}})
		}
	}
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

func (m *Master) onSubmit(now time.Time, from *messages.PID, w *messages.Work) {
	if m.holdWhileRecovering(now, stashed{from: from, work: w}) {
		return
	}
	if r := m.cfg.Check(w); r != nil {
		m.reply(from, r, false)
		return
	}
	at := now.UnixNano()
	stored, joined := m.admit(w, at)
	switch {
	case stored != nil:
		ev := &messages.WorkAccepted{Work: stored, AtUnixNano: at}
		m.journal([]proto.Message{ev}, m.releaseOnDurable(stored.GetWorkId()))
	case joined != nil:
		m.journal([]proto.Message{joined}, nil)
	}
	// Sent once what holds the work (this event, or a duplicate's earlier
	// one) is durable.
	m.reply(from, &messages.Ack{WorkId: w.GetWorkId()}, m.cfg.Planted != AckBeforeFsync)
}

// releaseOnDurable is the release list of accepted works: none with the
// planted HandOutBeforeDurable, which accepted them ready.
func (m *Master) releaseOnDurable(ids ...string) []string {
	if m.cfg.Planted == HandOutBeforeDurable {
		m.releasedWork = true
		return nil
	}
	return ids
}

// admit takes a valid submission into the state as accepted at at: it
// returns the work as stored, for the WorkAccepted (or WorksAccepted) event
// to persist, or nil for an id already accepted. The work is known at once
// (a duplicate is recognised) but handed out only once the event is durable
// and released: a crash can never erase work a worker has run.
//
// A duplicate of an unfinished work whose caller waits (a retried POST
// /work?wait= after a dropped connection, a Call retried with the same id)
// adds its waiter: joined is the WaiterAdded event, applied, to persist. The
// work is then skipped as cancelled only once every caller that waits for it
// has gone, not because the first one did.
func (m *Master) admit(w *messages.Work, at int64) (stored *messages.Work, joined *messages.WaiterAdded) {
	id := w.GetWorkId()
	if m.state.IsAccepted(id) {
		wp := w.GetWaiter()
		switch {
		case wp == nil:
		case m.state.IsFinished(id):
			// A caller waiting on a job that already finished (a retried
			// POST ?wait): tell its waiter the outcome now.
			res, _, _, _ := m.state.Outcome(id)
			m.reply(wp, res, true)
		case m.cfg.Planted == DuplicateKeepsFirstWaiter:
		case m.state.WaiterJoins(id, wp):
			joined = &messages.WaiterAdded{WorkId: id, Waiter: wp}
			if err := m.state.Apply(joined); err != nil {
				panic(err) // WorkState knows WaiterAdded
			}
		}
		return nil, joined
	}
	stored = messages.StoredWork(w)
	m.state.accept(stored, at, m.cfg.Planted != HandOutBeforeDurable)
	return stored, nil
}

// onBatch takes many submissions at once: each is checked and
// de-duplicated as a single Work would be (an id accepted before, or
// earlier in the same batch, is acknowledged without a second event), the
// new works are recorded as WorksAccepted events (one per groupMaxWorks
// works or groupMaxBytes of them) in one Append, and one WorkBatchAck
// answers the whole batch once they are durable.
func (m *Master) onBatch(now time.Time, from *messages.PID, b *messages.WorkBatch) {
	if m.holdWhileRecovering(now, stashed{from: from, b: b}) {
		return
	}
	works := b.GetWorks()
	out := make([]*messages.BatchOutcome, len(works))
	at := now.UnixNano()
	var (
		events []proto.Message
		group  *messages.WorksAccepted
		size   int
		ids    []string
		// joins are the waiters duplicates added (WaiterAdded), written
		// after the acceptances: one may be of a work accepted earlier in
		// this batch.
		joins []proto.Message
	)
	for i, w := range works {
		if r := m.cfg.Check(w); r != nil {
			out[i] = &messages.BatchOutcome{WorkId: w.GetWorkId(), Code: r.GetCode(), Reason: r.GetReason()}
			continue
		}
		out[i] = &messages.BatchOutcome{WorkId: w.GetWorkId(), Accepted: true}
		stored, joined := m.admit(w, at)
		if joined != nil {
			joins = append(joins, joined)
		}
		if stored == nil {
			continue
		}
		n := storedSize(stored)
		if group == nil || len(group.Works) == groupMaxWorks || size+n > groupMaxBytes {
			group, size = &messages.WorksAccepted{AtUnixNano: at}, 0
			events = append(events, group)
		}
		group.Works = append(group.Works, stored)
		size += n
		ids = append(ids, stored.GetWorkId())
	}
	events = append(events, joins...)
	if len(events) > 0 {
		m.journal(events, m.releaseOnDurable(ids...))
	}
	m.reply(from, &messages.WorkBatchAck{Outcomes: out}, m.cfg.Planted != AckBeforeFsync)
}

// Bounds of one WorksAccepted: far below the persistence runtime's group
// commit (persistence.DefaultMaxBatchBytes) and a journal row's size, and
// small enough that a feed read from a journal that decodes every event (no
// persistence.TypedLoader) decodes little it does not need past one.
const (
	groupMaxWorks = 1024
	groupMaxBytes = 256 << 10
)

// storedSize is about the encoded size of a stored work: its strings and
// payload, and a little for the tags and numbers.
func storedSize(w *messages.Work) int {
	return len(w.GetWorkId()) + len(w.GetJobType()) + len(w.GetPayload()) + 32
}

// notifyWorkers tells each wanting worker that can run a ready job
// WorkIsReady (see workerRegistry.readyToTell).
func (m *Master) notifyWorkers(now time.Time) {
	told, wakeAt := m.workers.readyToTell(m.state, now)
	for _, w := range told {
		m.send(w.pid, &messages.WorkIsReady{})
	}
	if !wakeAt.IsZero() {
		m.armWake(wakeAt)
	}
}

func (m *Master) onRegister(now time.Time, in Register) {
	msg := in.Msg
	if msg.GetWorkerId() == "" {
		return
	}
	pid := msg.GetWorker()
	if pid == nil {
		pid = in.From
	}
	if pid == nil {
		m.log(slog.LevelWarn, "RegisterWorker without a worker PID or sender; ignored", "worker_id", msg.GetWorkerId())
		return
	}
	if old := m.workers.get(msg.GetWorkerId()); old != nil && samePID(old.pid, pid) {
		pid = old.pid // keep the one the runner knows
	}
	w, isNew := m.workers.register(msg.GetWorkerId(), pid, msg.GetJobTypes(), now)
	if isNew {
		m.log(slog.LevelInfo, "worker registered", "worker_id", w.id, "worker", pid.GetAddress()+"/"+pid.GetId())
		if theirs, ours := int(msg.GetShards()), max(m.cfg.Shards, 1); theirs != 0 && theirs != ours {
			// Its node registers with the wrong set of masters: shards
			// beyond its N get no work from it, or it looks for shards
			// that do not exist. Said where the operator looks first.
			m.log(slog.LevelWarn, "a worker routes over another number of shards than this cluster's; start its node with the cluster's --shards",
				"worker_id", w.id, "worker", pid.GetAddress()+"/"+pid.GetId(), "worker_shards", theirs, "cluster_shards", ours)
		}
	}
	if !m.serving(now) {
		return
	}
	if m.workers.registered(w, isNew, m.state, now) {
		m.send(w.pid, &messages.WorkIsReady{})
	}
}

func (m *Master) onRequestWork(now time.Time, in RequestWork) {
	msg := in.Msg
	w := m.workers.get(msg.GetWorkerId())
	var pid *messages.PID
	switch wp := msg.GetWorker(); {
	case wp != nil && w != nil && samePID(wp, w.pid):
		pid = w.pid // the usual case: keep the PID the runner knows
	case wp != nil:
		pid = wp
	default:
		pid = in.From
	}
	if w == nil {
		if pid == nil || msg.GetWorkerId() == "" {
			return
		}
		// A worker this activation has not heard register (the master
		// restarted): take it as able to run any job type until its next
		// RegisterWorker says otherwise, rather than leave it idle.
		w, _ = m.workers.register(msg.GetWorkerId(), pid, nil, now)
		m.log(slog.LevelInfo, "worker requested work before registering; registered", "worker_id", w.id)
	}
	w.lastSeen = now
	if pid != nil {
		w.pid = pid
	}
	if !m.serving(now) {
		return
	}
	m.dispatch(now, w, max(int(msg.GetCapacity()), 1), msg.GetBundles())
}

// dispatch hands out up to n ready works to w (planDispatch). Only work
// whose WorkAccepted is durable is ready (AcceptHeld). The Work is sent
// without waiting for its WorkStarted to be durable (unless AwaitStarted):
// recovery returns in-progress work to pending, so a lost WorkStarted only
// means the work runs again.
//
// With bundles (the worker said it takes them) the works of one request go
// in one WorkBundle; otherwise one Work each.
func (m *Master) dispatch(now time.Time, w *workerInfo, n int, bundles bool) {
	p := planDispatch(m.state, m.cfg.Limiters, w.accepts, w.id, n, now)
	switch {
	case len(p.events) == 0:
	case m.cfg.StartedHold > 0 && !m.cfg.AwaitStarted && onlyStarts(p.events):
		m.holdStarts(now, p.events)
	default:
		m.journal(p.events, nil)
	}
	send := func(out proto.Message) {
		if m.cfg.AwaitStarted {
			m.reply(w.pid, out, true)
		} else {
			m.send(w.pid, out)
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
	m.workers.setWanting(w, p.short)
	if !p.wakeAt.IsZero() {
		m.armWake(p.wakeAt)
	}
}

// holdStarts keeps hand-out records for the next journal write, and makes
// sure one happens within the hold.
func (m *Master) holdStarts(now time.Time, events []proto.Message) {
	m.heldStarts = append(m.heldStarts, events...)
	if !m.startsArmed {
		m.startsArmed = true
		m.timer(StartsTimer, now.Add(m.cfg.StartedHold))
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

// resultSender notes that the worker reporting a result is alive and
// returns where its Ack goes: the sender, or the worker's registered PID.
func (m *Master) resultSender(now time.Time, from *messages.PID, workerID string) *messages.PID {
	if w := m.workers.get(workerID); w != nil {
		w.lastSeen = now
		if from == nil {
			return w.pid
		}
	}
	return from
}

func (m *Master) onDone(now time.Time, in Done) {
	to := m.resultSender(now, in.From, in.Msg.GetWorkerId())
	if !m.serving(now) {
		return // the worker re-sends until acknowledged
	}
	if ev := m.completion(in.Msg, now); ev != nil {
		m.persist(now, ev)
	}
	m.reply(to, &messages.Ack{WorkId: in.Msg.GetWorkId()}, true)
}

// onDoneBatch records several results in one journal write and
// acknowledges them together once they are durable.
func (m *Master) onDoneBatch(now time.Time, in DoneBatch) {
	to := m.resultSender(now, in.From, in.Msg.GetWorkerId())
	if !m.serving(now) {
		return // the worker re-sends until acknowledged
	}
	var events []proto.Message
	ids := make([]string, 0, len(in.Msg.GetDone()))
	for _, d := range in.Msg.GetDone() {
		if d.GetWorkerId() == "" {
			d.WorkerId = in.Msg.GetWorkerId() // the batch names it once
		}
		if ev := m.completion(d, now); ev != nil {
			if err := m.state.Apply(ev); err != nil {
				panic(err) // a WorkCompleted of a known, unfinished work applies
			}
			events = append(events, ev)
		}
		ids = append(ids, d.GetWorkId())
	}
	if len(events) > 0 {
		m.journal(events, nil)
	}
	m.reply(to, &messages.AckBatch{WorkIds: ids}, true)
}

// completion returns the WorkCompleted that a reported result makes, or
// nil when there is nothing to record: the work is done already (the
// previous Ack was lost) or unknown (forgotten after the retention, or
// never durably accepted; the result has no one to go to). Either way the
// worker is acknowledged, so it stops re-sending.
func (m *Master) completion(d *messages.WorkIsDone, now time.Time) *messages.WorkCompleted {
	jobType := m.state.JobType(d.GetWorkId())
	switch {
	case jobType == "":
		m.log(slog.LevelDebug, "done reported for an unknown work", "work_id", d.GetWorkId(), "worker_id", d.GetWorkerId())
		return nil
	case m.state.IsDone(d.GetWorkId()):
		return nil
	}
	return &messages.WorkCompleted{WorkId: d.GetWorkId(), WorkerId: d.GetWorkerId(), Result: d.GetResult(),
		AtUnixNano: now.UnixNano(), JobType: jobType}
}

func (m *Master) onFailed(now time.Time, msg *messages.WorkFailed) {
	if w := m.workers.get(msg.GetWorkerId()); w != nil {
		w.lastSeen = now
	}
	if !m.serving(now) {
		return
	}
	ev, ok := m.state.FailureEvent(m.cfg.Policy, msg.GetWorkId(), msg.GetWorkerId(), msg.GetError(), now)
	if !ok {
		m.log(slog.LevelDebug, "failure reported for work the worker does not hold", "work_id", msg.GetWorkId(), "worker_id", msg.GetWorkerId())
		return
	}
	if msg.GetCancelled() {
		if left, ok := m.state.WaiterLeftEvent(msg.GetWorkId(), msg.GetWorkerId(), msg.GetError(), now); ok {
			// The caller asked about it left, but another one still
			// waits: the work goes back to its queue, asked about
			// through that caller's waiter.
			m.persist(now, left)
			m.log(slog.LevelInfo, "a caller of the work left; another still waits: handing it out again", "work_id", msg.GetWorkId(),
				"worker_id", msg.GetWorkerId(), "error", msg.GetError())
			m.notifyWorkers(now)
			return
		}
		// The caller stopped waiting: the work ends CANCELLED, not retried
		// (no one would take the result) and not dead (nothing is wrong
		// with it); re-submitting the id runs it again.
		ev.Cancelled, ev.Dead, ev.NotBeforeUnixNano = true, false, 0
	} else if msg.GetPermanent() {
		// A retry cannot help (bad payload, unknown type, caller gone):
		// the work is dead now, visible and re-submittable, and its
		// remaining attempts are not wasted. The event records the
		// decision, so replay agrees.
		ev.Dead, ev.NotBeforeUnixNano = true, 0
	}
	m.persist(now, ev)
	switch {
	case ev.GetCancelled():
		m.log(slog.LevelInfo, "work cancelled: its caller stopped waiting", "work_id", msg.GetWorkId(), "error", msg.GetError())
	case ev.GetDead():
		m.log(slog.LevelWarn, "work is dead: out of attempts", "work_id", msg.GetWorkId(), "attempts", m.state.Attempts(msg.GetWorkId()), "error", msg.GetError())
	default:
		m.log(slog.LevelInfo, "work failed; retrying later", "work_id", msg.GetWorkId(), "worker_id", msg.GetWorkerId(), "error", msg.GetError(),
			"not_before", time.Unix(0, ev.GetNotBeforeUnixNano()))
	}
	m.notifyWorkers(now)
}

func (m *Master) onDeregister(now time.Time, msg *messages.DeregisterWorker) {
	if m.workers.get(msg.GetWorkerId()) == nil {
		return
	}
	m.workers.remove(msg.GetWorkerId())
	if !m.serving(now) {
		return
	}
	held := m.state.InProgressBy(msg.GetWorkerId())
	for _, id := range held {
		m.persist(now, &messages.WorkerFailed{WorkId: id, WorkerId: msg.GetWorkerId(), Error: "worker deregistered",
			AtUnixNano: now.UnixNano(), NotBeforeUnixNano: now.UnixNano()})
	}
	m.log(slog.LevelInfo, "worker deregistered", "worker_id", msg.GetWorkerId(), "returned_work", len(held))
	m.notifyWorkers(now)
}

func (m *Master) onCleanup(now time.Time) {
	events, early := planCleanup(m.state, m.cfg.Policy, m.cfg.WorkTimeout, m.cfg.DoneRetention, m.cfg.DoneLimit, now)
	if early > 0 && now.Sub(m.earlyLogged) >= time.Minute {
		m.earlyLogged = now
		m.log(slog.LevelWarn, "finished works forgotten before their retention: more are finished than the limit keeps; a re-submitted id among them runs again (raise WithDoneLimit, --done-limit, if that window is too short)",
			"forgotten", early, "limit", m.cfg.DoneLimit, "retention", m.cfg.DoneRetention)
	}
	for _, ev := range events {
		if to, ok := ev.(*messages.WorkerTimedOut); ok {
			m.log(slog.LevelInfo, "work timed out", "work_id", to.GetWorkId(), "worker_id", to.GetWorkerId(), "dead", to.GetDead())
			// As in the sample, a worker that let its work time out is
			// forgotten until it registers again.
			m.workers.remove(to.GetWorkerId())
		}
	}
	if len(events) > 0 {
		m.journal(events, nil)
	}
	for _, id := range m.workers.stale(now, m.cfg.WorkerDeadAfter, func(id string) bool { return m.state.RunningCount(id) > 0 }) {
		m.log(slog.LevelInfo, "too long since heard from worker; pruning", "worker_id", id)
		m.workers.remove(id)
	}
	m.notifyWorkers(now)
	m.armCleanup(now)
}

// Status answers reflect the decision state at the query but leave only
// once everything journaled before it is durable: they never show what a
// crash could undo.
func (m *Master) onGetStatus(now time.Time, in GetStatus) {
	if !m.serving(now) {
		// Not "unknown": the state is not read back yet, and a caller
		// that took this for "never accepted" would be wrong (HTTP 503,
		// not 404).
		m.reply(in.From, &messages.WorkRejected{WorkId: in.Msg.GetWorkId(), Code: messages.RejectCode_REJECT_CODE_UNAVAILABLE,
			Reason: "master: recovering from the journal; ask again later"}, false)
		return
	}
	m.reply(in.From, m.state.Status(in.Msg.GetWorkId()), true)
}

func (m *Master) onGetMasterStatus(now time.Time, in GetMasterStatus) {
	st := &messages.MasterStatus{Address: in.Address, Epoch: in.Epoch}
	if !m.serving(now) {
		m.reply(in.From, st, false)
		return
	}
	cnt := m.state.Counts()
	st.Pending, st.InProgress, st.Done, st.Dead, st.AcceptedTotal, st.Cancelled =
		int64(cnt.Pending), int64(cnt.InProgress), int64(cnt.Done), int64(cnt.Dead), cnt.AcceptedTotal, int64(cnt.Cancelled)
	idle, busy := m.WorkerLoad()
	st.IdleWorkers, st.BusyWorkers = int64(idle), int64(busy)
	m.reply(in.From, st, true)
}

// onDetach forgets the waiter of an unfinished work (its caller stopped
// waiting, the job goes on) and acknowledges once that is durable.
func (m *Master) onDetach(now time.Time, in Detach) {
	id := in.Msg.GetWorkId()
	if !m.serving(now) {
		m.reply(in.From, &messages.WorkRejected{WorkId: id, Code: messages.RejectCode_REJECT_CODE_UNAVAILABLE,
			Reason: "master: recovering from the journal; retry later"}, false)
		return
	}
	if m.state.Waiter(id) != nil && !m.state.IsFinished(id) {
		m.persist(now, &messages.WaiterDetached{WorkId: id})
	}
	m.reply(in.From, &messages.Ack{WorkId: id}, true)
}

// onResubmit accepts an ended work again with its stored id, type and
// payload, as a submission of the same id would, and answers once the
// acceptance is durable.
func (m *Master) onResubmit(now time.Time, in Resubmit) {
	id := in.Msg.GetWorkId()
	if !m.serving(now) {
		m.reply(in.From, &messages.ResubmitReply{WorkId: id, Unavailable: true, Reason: "master: recovering from the journal; retry later"}, false)
		return
	}
	e, ok := m.state.entries[id]
	if !ok {
		m.reply(in.From, &messages.ResubmitReply{WorkId: id, Reason: "unknown work: never accepted, or forgotten after the retention"}, false)
		return
	}
	if !e.rerunnable() {
		m.reply(in.From, &messages.ResubmitReply{WorkId: id, Status: e.status,
			Reason: "only dead or cancelled works can be re-submitted; this one is " + e.status.String()}, true)
		return
	}
	// The caller who set a deadline or waited is long gone: a re-submission
	// is a new request, without either. With the old waiter kept, a worker
	// would ask that caller, hear "no longer interested" and skip the
	// re-run as cancelled.
	w := e.toWork()
	w.DeadlineUnixNano = 0
	w.Waiter = nil
	at := now.UnixNano()
	m.state.accept(w, at, m.cfg.Planted != HandOutBeforeDurable)
	m.journal([]proto.Message{&messages.WorkAccepted{Work: w, AtUnixNano: at}}, m.releaseOnDurable(id))
	m.reply(in.From, &messages.ResubmitReply{WorkId: id, Accepted: true}, true)
	m.log(slog.LevelInfo, "dead work re-submitted", "work_id", id)
}
