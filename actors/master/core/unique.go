package core

import (
	"google.golang.org/protobuf/proto"

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
	if key == "" {
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
