package core

import (
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

// notifyWorkers tells each wanting worker that can run a ready job
// WorkIsReady (see workerRegistry.readyToTell).
func (m *Master) notifyWorkers(now time.Time) {
	m.unparkKeys(now) // keys.go
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
		pid = keep(in.From)
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
		pid = keep(in.From)
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
	m.state.keys.limits, m.state.keys.timeout = m.cfg.Concurrency, m.cfg.WorkTimeout
	p := planDispatch(m.state, m.cfg.Limiters, w.accepts, w.id, n, now)
	if p.keyed && !m.cfg.AwaitStarted {
		m.handOutDurable(w.pid, p, bundles) // keys.go
		m.workers.setWanting(w, p.short)
		if !p.wakeAt.IsZero() {
			m.armWake(p.wakeAt)
		}
		return
	}
	switch {
	case len(p.events) == 0:
	case m.cfg.StartedHold > 0 && !m.cfg.AwaitStarted && onlyStarts(p.events):
		m.holdStarts(now, p.events)
	default:
		m.journal(p.events, release{})
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
