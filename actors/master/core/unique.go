package core

import (
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"

	"github.com/foreman-actors/foreman/messages"
)

// duplicateOf answers a submission whose unique key another job holds (see
// keys.go): ack names that job and its status, and joined is the WaiterAdded
// that makes the submitter's waiter one of that job's callers (nil when it
// has none, or the job finished: then its waiter is told the outcome once
// what it read is durable). ack is nil when the submission is not such a
// duplicate: no unique key, the key is free, or the submission is that job
// itself (its own id: the usual duplicate or re-submission path).
func (m *Master) duplicateOf(w *messages.Work, at int64) (ack *messages.Ack, joined *messages.WaiterAdded) {
	key := w.GetUniqueKey()
	if key == "" || m.cfg.Planted == UniqueKeyIgnored {
		return nil, nil
	}
	id, status, ok := m.state.UniqueHolder(key, at)
	if !ok || id == w.GetWorkId() {
		return nil, nil
	}
	ack = &messages.Ack{WorkId: w.GetWorkId(), DuplicateOf: id, DuplicateStatus: status}
	wp := w.GetWaiter()
	switch {
	case wp == nil:
	case m.state.IsFinished(id):
		res, _, _, _ := m.state.Outcome(id)
		m.reply(wp, res, true)
	case m.state.WaiterJoins(id, wp):
		joined = &messages.WaiterAdded{WorkId: id, Waiter: wp}
		if err := m.state.Apply(joined); err != nil {
			panic(err) // WorkState knows WaiterAdded
		}
	case m.state.Work(id) == nil:
		// Forgotten inside its period: only its status is known.
		m.reply(wp, &messages.WorkResult{WorkId: id, Status: status}, true)
	}
	return ack, joined
}

// submitDuplicate handles a single submission that duplicateOf matched:
// true when it did.
func (m *Master) submitDuplicate(from *messages.PID, w *messages.Work, at int64) bool {
	ack, joined := m.duplicateOf(w, at)
	if ack == nil {
		return false
	}
	if joined != nil {
		m.journal([]proto.Message{joined}, release{})
	}
	// After what the answer read (the holder's acceptance) is durable.
	m.reply(from, ack, true)
	return true
}

// unparkKeys returns parked works whose concurrency key has free slots
// again to their queues before the master looks for ready work, and arms
// a wake for when a held slot of a key with parked works expires: nothing
// else would look at them then.
func (m *Master) unparkKeys(now time.Time) {
	st := m.state
	if len(st.keys.parked) == 0 {
		return
	}
	st.keys.limits, st.keys.timeout = m.cfg.Concurrency, m.cfg.WorkTimeout
	st.beforeDispatch(now)
	var next time.Time
	for _, h := range st.keys.slots {
		if len(st.keys.parked[h.GetKey()]) == 0 {
			continue
		}
		if at := time.Unix(0, h.GetStartedAtUnixNano()).Add(m.cfg.WorkTimeout); at.After(now) && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	if open := st.keys.nextRateOpen(now); !open.IsZero() && (next.IsZero() || open.Before(next)) {
		next = open
	}
	if !next.IsZero() {
		m.armWake(next)
	}
}

// handOutDurable journals the hand-outs of p, which include a work with a
// concurrency key, and sends them to the worker once the WorkStarted
// events are durable, if the master still serves then. A run of a key must
// be in the journal before it can start: a master that recovered without
// its WorkStarted would not count it against the key's limit (the
// simulator found it: keyed seed 90, a write error after the hand-out).
func (m *Master) handOutDurable(to *messages.PID, p dispatchPlan, bundles bool) {
	var msgs []proto.Message
	if bundles && len(p.works) > 1 {
		msgs = []proto.Message{&messages.WorkBundle{Works: p.works}}
	} else {
		for _, w := range p.works {
			msgs = append(msgs, w)
		}
	}
	events := p.events
	if len(m.heldStarts) > 0 {
		events = append(m.heldStarts, events...)
		m.heldStarts = nil
	}
	m.token++
	m.waiting[m.token] = afterDurable{handOut: msgs, handTo: to}
	m.emit(effect.Append{Events: events, Token: m.token})
}
