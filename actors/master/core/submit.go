package core

import (
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

func (m *Master) onSubmit(now time.Time, from *messages.PID, w *messages.Work) {
	if m.holdWhileRecovering(now, stashed{from: from, work: w}) {
		return
	}
	if r := m.cfg.Check(w); r != nil {
		m.reply(from, r, false)
		return
	}
	at := now.UnixNano()
	if !m.state.IsAccepted(w.GetWorkId()) && m.submitDuplicate(from, w, at) {
		return
	}
	stored, joined := m.admit(w, at)
	switch {
	case stored != nil:
		ev := &messages.WorkAccepted{Work: stored, AtUnixNano: at}
		m.journal([]proto.Message{ev}, m.releaseOnDurable(release{one: stored.GetWorkId()}))
	case joined != nil:
		m.journal([]proto.Message{joined}, release{})
	}
	// Sent once what holds the work (this event, or a duplicate's earlier
	// one) is durable.
	m.reply(from, &messages.Ack{WorkId: w.GetWorkId()}, m.cfg.Planted != AckBeforeFsync)
}

// releaseOnDurable is the release list of accepted works: none with the
// planted HandOutBeforeDurable, which accepted them ready.
func (m *Master) releaseOnDurable(rel release) release {
	if m.cfg.Planted == HandOutBeforeDurable {
		m.releasedWork = true
		return release{}
	}
	return rel
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
	if m.state.IsAccepted(id) || m.state.firedOnce(id) {
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
		if !m.state.IsAccepted(w.GetWorkId()) {
			if ack, joined := m.duplicateOf(w, at); ack != nil {
				out[i].DuplicateOf, out[i].DuplicateStatus = ack.GetDuplicateOf(), ack.GetDuplicateStatus()
				if joined != nil {
					joins = append(joins, joined)
				}
				continue
			}
		}
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
		m.journal(events, m.releaseOnDurable(release{many: ids}))
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
