package core

import (
	"log/slog"
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

// Long jobs (docs/long-jobs.md): a running job's heartbeats move its
// timeout. Until its first heartbeat a work is timed out WorkTimeout after
// its hand-out, as any other; once a heartbeat came with a heartbeat
// timeout, the work is timed out when that long passes without another one,
// however long the whole job runs. Heartbeats are not journaled: a master
// that takes over requeues what was running anyway, and a job's worker
// re-sends its progress with every heartbeat.

// beat is the latest heartbeat of a running work's hand-out.
type beat struct {
	worker  string
	attempt int32
	at      time.Time
	timeout time.Duration // 0: the work timeout applies

	hasProgress bool
	fraction    float64
	message     string
}

// expiry is when the work times out without another heartbeat.
func (b *beat) expiry() time.Time { return b.at.Add(b.timeout) }

// onHeartbeat records the beats of the hand-outs the worker still holds;
// one of an older hand-out (its work timed out, was handed back or went
// elsewhere) changes nothing.
func (m *Master) onHeartbeat(now time.Time, msg *messages.WorkHeartbeat) {
	workerID := msg.GetWorkerId()
	if w := m.workers.get(workerID); w != nil {
		w.lastSeen = now
	}
	if !m.serving(now) {
		return // the worker beats again within its interval
	}
	for _, b := range msg.GetBeats() {
		id := b.GetWorkId()
		if !m.state.Holds(id, workerID, b.GetAttempt()) {
			m.log(slog.LevelDebug, "heartbeat of a hand-out the worker no longer holds; ignored", "work_id", id,
				"worker_id", workerID, "attempt", b.GetAttempt())
			continue
		}
		cur := m.beats[id]
		if cur == nil || cur.worker != workerID || cur.attempt != b.GetAttempt() {
			cur = &beat{worker: workerID, attempt: b.GetAttempt()}
			m.beats[id] = cur
		}
		cur.at = now
		cur.timeout = time.Duration(max(b.GetTimeoutMs(), 0)) * time.Millisecond
		if d := m.state.heartbeatTimeout(id); d > 0 {
			cur.timeout = d // the submission's, over its job type's
		}
		if b.GetHasProgress() {
			cur.hasProgress, cur.fraction, cur.message = true, b.GetFraction(), b.GetMessage()
		}
		if cur.timeout > 0 {
			m.armBeat(cur.expiry())
		}
	}
}

// armBeat makes sure the heartbeat timeouts are checked at t: the cleanup
// tick (every half work timeout) comes too late for a heartbeat timeout
// shorter than the work timeout.
func (m *Master) armBeat(t time.Time) {
	if m.beatName != "" && !m.beatArmAt.After(t) {
		return // an earlier check is armed
	}
	m.beatName, m.beatArmAt = beatTimer+strconv.FormatInt(m.gen, 10), t
	m.timer(m.beatName, t)
}

// overdue returns the works to time out at now, sorted by work id: those
// held longer than the work timeout that have no live heartbeat, and those
// whose heartbeat timeout passed since their last heartbeat. It forgets
// the beats of hand-outs that ended and arms the next heartbeat check.
func (m *Master) overdue(now time.Time) []Running {
	var out []Running
	for _, r := range m.state.Overdue(now, m.cfg.WorkTimeout) {
		if b := m.beats[r.WorkID]; b != nil && b.timeout > 0 && b.worker == r.WorkerID && now.Before(b.expiry()) {
			continue // alive: it beat within its heartbeat timeout
		}
		out = append(out, r)
	}
	ids := make([]string, 0, len(m.beats))
	for id := range m.beats {
		ids = append(ids, id)
	}
	slices.Sort(ids) // the core's decisions never follow map order
	var next time.Time
	for _, id := range ids {
		b := m.beats[id]
		if !m.state.Holds(id, b.worker, b.attempt) {
			delete(m.beats, id)
			continue
		}
		if b.timeout <= 0 {
			continue
		}
		if now.Before(b.expiry()) {
			if next.IsZero() || b.expiry().Before(next) {
				next = b.expiry()
			}
			continue
		}
		if !slices.ContainsFunc(out, func(r Running) bool { return r.WorkID == id }) {
			out = append(out, Running{WorkID: id, WorkerID: b.worker})
		}
	}
	slices.SortFunc(out, func(a, b Running) int {
		switch {
		case a.WorkID < b.WorkID:
			return -1
		case a.WorkID > b.WorkID:
			return 1
		}
		return 0
	})
	if !next.IsZero() {
		m.armBeat(next)
	}
	return out
}

// addProgress adds the running work's latest progress and heartbeat to
// its status.
func (m *Master) addProgress(st *messages.WorkStatusReply) {
	b := m.beats[st.GetWorkId()]
	if b == nil || st.GetStatus() != messages.WorkStatus_WORK_STATUS_RUNNING || !m.state.Holds(st.GetWorkId(), b.worker, b.attempt) {
		return
	}
	st.HeartbeatUnixNano = b.at.UnixNano()
	if b.hasProgress {
		st.HasProgress, st.Progress, st.ProgressMessage = true, b.fraction, b.message
	}
}

// addListProgress adds the latest progress and heartbeat of the running
// works of a ListWork answer: the result stream's progress events
// (GET /results/stream?progress=true) read them there.
func (m *Master) addListProgress(l *messages.WorkList) {
	for _, w := range l.GetWorks() {
		b := m.beats[w.GetWorkId()]
		if b == nil || w.GetStatus() != messages.WorkStatus_WORK_STATUS_RUNNING || !m.state.Holds(w.GetWorkId(), b.worker, b.attempt) {
			continue
		}
		w.HeartbeatUnixNano = b.at.UnixNano()
		if b.hasProgress {
			w.HasProgress, w.Progress, w.ProgressMessage = true, b.fraction, b.message
		}
	}
}

// heartbeatTimeout returns the heartbeat timeout the work was submitted
// with (Work.heartbeat_timeout_ms), 0 when none. The entry keeps it with
// the Work's other rare fields (entryRare.extra): only a work that has such
// fields decodes them, once per heartbeat.
func (s *WorkState) heartbeatTimeout(id string) time.Duration {
	e := s.entries[id]
	if e == nil || e.extra() == nil {
		return 0
	}
	var w messages.Work
	if proto.Unmarshal(e.extra(), &w) != nil { // they came from a Work: they decode
		return 0
	}
	return time.Duration(max(w.GetHeartbeatTimeoutMs(), 0)) * time.Millisecond
}
