package core

import (
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

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
	st := m.state.Status(in.Msg.GetWorkId())
	m.addProgress(st)
	m.reply(in.From, st, true)
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
		m.persist(&messages.WaiterDetached{WorkId: id})
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
	m.journal([]proto.Message{&messages.WorkAccepted{Work: w, AtUnixNano: at}}, m.releaseOnDurable(release{one: id}))
	m.reply(in.From, &messages.ResubmitReply{WorkId: id, Accepted: true}, true)
	m.log(slog.LevelInfo, "dead work re-submitted", "work_id", id)
}
