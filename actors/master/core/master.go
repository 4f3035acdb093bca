package core

import (
	"log/slog"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/messages"
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
	waiting map[uint64]afterDurable

	// beats are the latest heartbeats of running works, by work id (see
	// beats.go): not journaled.
	beats     map[string]*beat
	beatName  string
	beatArmAt time.Time

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
	release release
	// handOut is sent to handTo once durable, if the master still serves
	// (keys.go: hand-outs of concurrency keys).
	handOut []proto.Message
	handTo  *messages.PID
}

// release names the accepted works an Append makes ready: one, or many
// (a batch); one needs no slice, on the submission's hot path.
type release struct {
	one  string
	many []string
}

func (r release) empty() bool { return r.one == "" && len(r.many) == 0 }

// outcome is a work that an event finished: what its waiters are told.
type outcome struct {
	waiter *messages.PID
	more   []*messages.PID
	res    *messages.WorkResult
}

// New returns a master core with an empty state, not serving.
func New(cfg Config) *Master {
	m := &Master{cfg: cfg, state: NewWorkState(), workers: newWorkerRegistry(), waiting: make(map[uint64]afterDurable),
		beats: make(map[string]*beat)}
	m.state.SetQueueing(cfg.PriorityAging, cfg.FairnessWeights)
	m.state.SetKeyRates(cfg.KeyRates)
	m.state.plant(cfg.Planted)
	return m
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
	st.SetQueueing(m.cfg.PriorityAging, m.cfg.FairnessWeights)
	st.SetKeyRates(m.cfg.KeyRates)
	st.plant(m.cfg.Planted)
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
		m.onDurable(now, in.Token)
	case Committed:
		if m.releasedWork {
			m.releasedWork = false
			m.notifyWorkers(now)
		}
	case effect.Fired:
		m.onFired(now, in.Name)
	case Heartbeat:
		m.onHeartbeat(now, in.Msg)
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
		l := m.state.List(in.Msg.GetStatus(), int(in.Msg.GetLimit()))
		m.addListProgress(l)
		m.reply(in.From, l, true)
	case Resubmit:
		m.onResubmit(now, in)
	case Detach:
		m.onDetach(now, in)
	case PauseQueue:
		m.onPauseQueue(now, in)
	case GetQueues:
		m.onGetQueues(now, in)
	case SetKeyLimit:
		m.onSetKeyLimit(now, in)
	case GetKeyLimits:
		m.onGetKeyLimits(now, in)
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
	case name == m.beatName && m.serving(now):
		m.beatName, m.beatArmAt = "", time.Time{}
		m.flushHeld(now)
		m.timedOut(planTimeouts(m.state, m.cfg.Policy, m.overdue(now), now))
		m.notifyWorkers(now)
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
	for _, n := range []string{m.cleanupName, m.wakeName, m.beatName} {
		if n != "" {
			m.emit(effect.StopTimer{Name: n})
		}
	}
	m.cleanupName, m.wakeName, m.wakeAt = "", "", time.Time{}
	m.beatName, m.beatArmAt = "", time.Time{}
	clear(m.beats) // a new activation learns them from the next heartbeats
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
		s.from = keep(s.from)
		m.stash = append(m.stash, s)
		return true
	}
	m.reply(s.from, unavailable(s.work, s.b, "master: recovering from the journal; retry later"), false)
	return true
}

// persist applies ev to the state and journals it.
func (m *Master) persist(ev proto.Message) {
	if err := m.state.Apply(ev); err != nil {
		panic(err) // the master only persists events WorkState knows
	}
	m.journal([]proto.Message{ev}, release{})
}

// flushHeld journals the held hand-out records, when serving.
func (m *Master) flushHeld(now time.Time) {
	if len(m.heldStarts) > 0 && m.serving(now) {
		m.journal(nil, release{})
	}
}

// journal appends events already applied to the state: every journal
// write of the master goes through it, after the held hand-out records.
// Once durable (Durable with its token) the works in release are handed
// out from then on, and the waiters of each work the events finished are
// told its outcome.
func (m *Master) journal(events []proto.Message, rel release) {
	if len(m.heldStarts) > 0 {
		events = append(m.heldStarts, events...) // applied first: written first
		m.heldStarts = nil
	}
	if len(events) == 0 {
		return
	}
	w := afterDurable{release: rel}
	for _, ev := range events {
		if id, ok := finishingID(ev); ok {
			if res, waiter, more, finished := m.state.Outcome(id); finished {
				w.outs = append(w.outs, outcome{waiter: waiter, more: more, res: res})
			}
		}
	}
	var token uint64
	if len(w.outs) > 0 || !rel.empty() {
		m.token++
		token = m.token
		m.waiting[token] = w
	}
	m.emit(effect.Append{Events: events, Token: token})
}

func (m *Master) onDurable(now time.Time, token uint64) {
	w, ok := m.waiting[token]
	if !ok {
		return
	}
	delete(m.waiting, token)
	if len(w.handOut) > 0 && m.serving(now) {
		// Not once the lease is gone: a successor recovered the runs from
		// the journal and hands them out itself.
		for _, msg := range w.handOut {
			m.send(w.handTo, msg)
		}
	}
	if !w.release.empty() {
		if w.release.one != "" {
			m.state.Release(w.release.one)
		}
		for _, id := range w.release.many {
			m.state.Release(id)
		}
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

// keep copies an input's From for the core to keep (see the inputs).
func keep(p *messages.PID) *messages.PID {
	if p == nil {
		return nil
	}
	return &messages.PID{Address: p.GetAddress(), Id: p.GetId(), RequestId: p.GetRequestId()}
}
