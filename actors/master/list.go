package master

import (
	"sort"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

// Bounds of a ListWork answer.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// List answers ListWork: the works in status (ACCEPTED and FAILED both mean
// pending), newest first (by finishing, start or arrival time), at most limit
// of them (0: DefaultListLimit; capped at MaxListLimit), and how many are in
// that status in all.
func (s *WorkState) List(status messages.WorkStatus, limit int) *messages.WorkList {
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	var match []*entry
	for _, e := range s.entries {
		if e.held || !listed(e, status) {
			continue
		}
		match = append(match, e)
	}
	key := func(e *entry) int64 {
		switch {
		case e.finished():
			return e.finishedAt
		case e.status == statusRunning:
			return e.startedAt
		default:
			return e.order
		}
	}
	sort.Slice(match, func(i, j int) bool {
		if ki, kj := key(match[i]), key(match[j]); ki != kj {
			return ki > kj
		}
		return match[i].id < match[j].id
	})
	out := &messages.WorkList{Total: int64(len(match))}
	for _, e := range match[:min(len(match), limit)] {
		_, startedAt, workerID := e.shown()
		out.Works = append(out.Works, &messages.WorkSummary{
			WorkId: e.id, JobType: e.jobType, Status: e.status, Attempts: e.attempts,
			LastError: e.lastError(), WorkerId: workerID, StartedAtUnixNano: startedAt, FinishedAtUnixNano: e.finishedAt,
		})
	}
	return out
}

func listed(e *entry, status messages.WorkStatus) bool {
	if status == statusAccepted || status == statusFailed {
		return e.pending()
	}
	return e.status == status
}

// onListWork answers ListWork once what it reflects is durable.
func (a *masterActor) onListWork(c actor.Context, m *messages.ListWork) {
	if !a.rt.Recovered() {
		c.Respond(&messages.WorkList{})
		return
	}
	a.rt.Reply(c.Sender(), a.state.List(m.GetStatus(), int(m.GetLimit())))
}

// resubmittable reports whether a work in status can be re-submitted: one
// that ended without a result (dead, or cancelled when its caller left).
func resubmittable(status messages.WorkStatus) bool {
	return status == statusDead || status == statusCancelled
}

// onResubmit accepts an ended work again with its stored id, type and
// payload, as a submission of the same id would, and answers once the
// acceptance is durable.
func (a *masterActor) onResubmit(c actor.Context, m *messages.ResubmitWork) {
	id := m.GetWorkId()
	if !a.rt.Recovered() {
		c.Respond(&messages.ResubmitReply{WorkId: id, Unavailable: true, Reason: "master: recovering from the journal; retry later"})
		return
	}
	e, ok := a.state.entries[id]
	if !ok {
		c.Respond(&messages.ResubmitReply{WorkId: id, Reason: "unknown work: never accepted, or forgotten after the retention"})
		return
	}
	if !resubmittable(e.status) {
		a.rt.Reply(c.Sender(), &messages.ResubmitReply{WorkId: id, Status: e.status,
			Reason: "only dead or cancelled works can be re-submitted; this one is " + e.status.String()})
		return
	}
	// The caller who set a deadline or waited is long gone: a re-submission
	// is a new request, without either. With the old waiter kept, a worker
	// would ask that caller, hear "no longer interested" and skip the
	// re-run as cancelled.
	w := e.toWork()
	w.DeadlineUnixNano = 0
	w.Waiter = nil
	ev := &messages.WorkAccepted{Work: w, AtUnixNano: a.clock.Now().UnixNano()}
	a.state.AcceptHeld(ev)
	a.journal([]proto.Message{ev}, func() {
		a.state.Release(id)
		a.releasedWork = true
	})
	a.rt.Reply(c.Sender(), &messages.ResubmitReply{WorkId: id, Accepted: true})
	a.log.Info("dead work re-submitted", "work_id", id)
}
