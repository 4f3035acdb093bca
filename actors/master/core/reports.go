package core

import (
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

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
		m.persist(ev)
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
		m.journal(events, release{})
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
	if msg.GetHandedBack() && !msg.GetCancelled() {
		// The worker stopped or drained and gave the job back unfinished:
		// it is ready again at once, and the attempt does not count.
		ev.HandedBack, ev.Dead, ev.NotBeforeUnixNano = true, false, now.UnixNano()
		m.persist(ev)
		m.log(slog.LevelInfo, "work handed back by a stopping worker; handing it out again", "work_id", msg.GetWorkId(),
			"worker_id", msg.GetWorkerId(), "error", msg.GetError())
		m.notifyWorkers(now)
		return
	}
	if msg.GetCancelled() {
		if wp := msg.GetWaiter(); wp != nil && !samePID(wp, m.state.Waiter(msg.GetWorkId())) {
			// About a caller who is no longer the one workers ask (it
			// left, and the work went out again through another's
			// waiter): a duplicated earlier hand-out was asked about
			// again (the simulator's seed 1015389). The current
			// hand-out decides; this report changes nothing.
			m.log(slog.LevelDebug, "a stale cancellation: its caller is no longer the work's; ignored", "work_id", msg.GetWorkId(),
				"worker_id", msg.GetWorkerId(), "error", msg.GetError())
			return
		}
		if left, ok := m.state.WaiterLeftEvent(msg.GetWorkId(), msg.GetWorkerId(), msg.GetError(), now); ok {
			// The caller asked about it left, but another one still
			// waits: the work goes back to its queue, asked about
			// through that caller's waiter.
			m.persist(left)
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
	m.persist(ev)
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
		m.persist(&messages.WorkerFailed{WorkId: id, WorkerId: msg.GetWorkerId(), Error: "worker deregistered",
			AtUnixNano: now.UnixNano(), NotBeforeUnixNano: now.UnixNano()})
	}
	m.log(slog.LevelInfo, "worker deregistered", "worker_id", msg.GetWorkerId(), "returned_work", len(held))
	m.notifyWorkers(now)
}

func (m *Master) onCleanup(now time.Time) {
	events, early := planCleanup(m.state, m.cfg.Policy, m.overdue(now), m.cfg.DoneRetention, m.cfg.DoneLimit, now)
	if early > 0 && now.Sub(m.earlyLogged) >= time.Minute {
		m.earlyLogged = now
		m.log(slog.LevelWarn, "finished works forgotten before their retention: more are finished than the limit keeps; a re-submitted id among them runs again (raise WithDoneLimit, --done-limit, if that window is too short)",
			"forgotten", early, "limit", m.cfg.DoneLimit, "retention", m.cfg.DoneRetention)
	}
	m.timedOut(events)
	for _, id := range m.workers.stale(now, m.cfg.WorkerDeadAfter, func(id string) bool { return m.state.RunningCount(id) > 0 }) {
		m.log(slog.LevelInfo, "too long since heard from worker; pruning", "worker_id", id)
		m.workers.remove(id)
	}
	m.notifyWorkers(now)
	m.armCleanup(now)
}

// timedOut logs the timeouts among events and journals events.
func (m *Master) timedOut(events []proto.Message) {
	for _, ev := range events {
		if to, ok := ev.(*messages.WorkerTimedOut); ok {
			m.log(slog.LevelInfo, "work timed out", "work_id", to.GetWorkId(), "worker_id", to.GetWorkerId(), "dead", to.GetDead())
			// As in the sample, a worker that let its work time out is
			// forgotten until it registers again.
			m.workers.remove(to.GetWorkerId())
		}
	}
	if len(events) > 0 {
		m.journal(events, release{})
	}
}
