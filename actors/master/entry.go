package master

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/messages"
)

// entry is one work's record. Pending entries (ACCEPTED or FAILED) sit in
// their job type's queue; RUNNING ones in byWorker; DONE and DEAD ones in the
// finished FIFO until the retention forgets them.
//
// The submitted Work's fields are kept inline rather than as the decoded
// *messages.Work: a million pending works kept a 128-byte message each
// besides their entry (its protobuf bookkeeping included), and a finished
// one a second, smaller copy. The entry holds the waiter's PID as data only;
// WorkState still never talks to protoactor (state.go stays pure), which is
// why this type lives in a file of its own.
type entry struct {
	id      string
	jobType string
	// data is the payload until the work is done, then its result: a done
	// work keeps no payload (a re-submission brings its own), and only a
	// done one has a result. See payload and result.
	data     []byte
	waiter   *actor.PID // never mutated; replaced by nil when detached
	cold     *entryCold // nil unless a field of it is set (see entryCold)
	readyAt  int64      // pending: not handed out before (Unix ns)
	order    int64      // pending: FIFO tie-breaker
	workerID string
	// startedAt and finishedAt: the last attempt's start, the finish.
	startedAt  int64
	finishedAt int64
	attempts   int32
	heapIdx    int32 // index in its queue, -1 when not queued
	status     messages.WorkStatus
	held       bool // accepted, its event not yet durable: not queued (AcceptHeld)
	listed     bool // already listed by the eachForSnapshot under way
	gone       bool // no longer in the state (forgotten, or replaced by a re-submission)
	// plain: the history is implied by the fields, as it is for most works,
	// and not kept (compact, hist, shown): a work accepted and not yet
	// started (accepted at readyAt), one running its first attempt (then
	// started at startedAt by workerID) or one done on its first attempt by
	// the worker that started it (then completed at finishedAt). A million
	// pending works kept a 64-byte history allocation each, a million done
	// ones 144 bytes.
	plain bool
}

// entryCold holds the fields most works never set: an entry points to one
// only while one of them is set. A million works kept them inline at 52
// bytes each, and the entry filled a 208-byte allocation where it now fills
// 144 (TestEntrySize).
type entryCold struct {
	lastError string
	history   []histEvent // see history.go; empty when plain
	deadline  int64       // the submitter's deadline (Unix ns), 0 = none
	// attempt is the submitted Work's attempt field (0 unless a client set
	// it), kept so that a snapshot restores the work exactly.
	attempt int32
}

// payload returns the submitted payload; nil once the work is done.
func (e *entry) payload() []byte {
	if e.status == statusDone {
		return nil
	}
	return e.data
}

// result returns a done work's result; nil for any other.
func (e *entry) result() []byte {
	if e.status != statusDone {
		return nil
	}
	return e.data
}

func (e *entry) lastError() string {
	if e.cold == nil {
		return ""
	}
	return e.cold.lastError
}

func (e *entry) history() []histEvent {
	if e.cold == nil {
		return nil
	}
	return e.cold.history
}

func (e *entry) deadline() int64 {
	if e.cold == nil {
		return 0
	}
	return e.cold.deadline
}

func (e *entry) attempt() int32 {
	if e.cold == nil {
		return 0
	}
	return e.cold.attempt
}

// coldFields returns e's cold fields to set one, allocating them if need be.
func (e *entry) coldFields() *entryCold {
	if e.cold == nil {
		e.cold = &entryCold{}
	}
	return e.cold
}

func (e *entry) setLastError(v string) {
	if v != "" || e.cold != nil {
		e.coldFields().lastError = v
		e.dropCold()
	}
}

func (e *entry) setHistory(h []histEvent) {
	if h != nil || e.cold != nil {
		e.coldFields().history = h
		e.dropCold()
	}
}

// setSubmitted sets the fields of the submitted Work kept cold.
func (e *entry) setSubmitted(deadline int64, attempt int32) {
	if deadline != 0 || attempt != 0 || e.cold != nil {
		c := e.coldFields()
		c.deadline, c.attempt = deadline, attempt
		e.dropCold()
	}
}

// dropCold lets go of e's cold fields once none is set.
func (e *entry) dropCold() {
	if c := e.cold; c != nil && c.lastError == "" && c.history == nil && c.deadline == 0 && c.attempt == 0 {
		e.cold = nil
	}
}

// newEntry returns the entry of an accepted w.
func newEntry(w *messages.Work) *entry {
	e := &entry{id: w.GetWorkId(), jobType: w.GetJobType(), data: w.GetPayload(), waiter: w.GetWaiter(), heapIdx: -1}
	e.setSubmitted(w.GetDeadlineUnixNano(), w.GetAttempt())
	return e
}

// toWork returns the work as submitted, a new message each call.
func (e *entry) toWork() *messages.Work {
	return &messages.Work{WorkId: e.id, JobType: e.jobType, Payload: e.payload(), Attempt: e.attempt(),
		DeadlineUnixNano: e.deadline(), Waiter: e.waiter}
}

// Waiter returns the waiter of id's submitter (nil when unknown or none).
func (s *WorkState) Waiter(id string) *actor.PID {
	if e, ok := s.entries[id]; ok {
		return e.waiter
	}
	return nil
}

// Outcome returns what a finished id's waiter and the result publisher are
// sent, and the waiter; ok is false unless id is finished. Unlike Status it
// builds no history: it runs for every finishing event.
func (s *WorkState) Outcome(id string) (res *messages.WorkResult, waiter *actor.PID, ok bool) {
	e, found := s.entries[id]
	if !found || !e.finished() {
		return nil, nil, false
	}
	return &messages.WorkResult{WorkId: id, JobType: e.jobType, Result: e.result(), Status: e.status, Error: e.lastError()}, e.waiter, true
}

// hist returns e's history; buf holds a plain one (see plain).
func (e *entry) hist(buf *[3]histEvent) []histEvent {
	if !e.plain {
		return e.history()
	}
	buf[0] = histEvent{kind: histAccepted, at: e.readyAt}
	switch e.status {
	case statusAccepted:
		return buf[:1]
	case statusRunning:
		buf[1] = histEvent{kind: histStarted, at: e.startedAt, attempt: 1, worker: e.workerID}
		return buf[:2]
	}
	buf[1] = histEvent{kind: histStarted, at: e.startedAt, attempt: 1, worker: e.workerID}
	buf[2] = histEvent{kind: histCompleted, at: e.finishedAt, attempt: 1, worker: e.workerID}
	return buf[:]
}

// unplain makes e's history explicit, before a change that a plain entry
// cannot express (a failure, a requeue, another worker's completion).
func (e *entry) unplain() {
	if !e.plain {
		return
	}
	var buf [3]histEvent
	h := e.hist(&buf)
	e.setHistory(append(make([]histEvent, 0, len(h)+1), h...))
	e.plain = false
}

// compact drops e's history when its fields imply it (see plain): for a
// restored entry, and for a work just done.
func (e *entry) compact() {
	h := e.history()
	switch {
	case e.plain:
		return
	case e.status == statusAccepted && e.attempts == 0 && len(h) == 1:
		if h[0] != (histEvent{kind: histAccepted, at: e.readyAt}) {
			return
		}
	case e.status == statusRunning && e.attempts == 1 && len(h) == 2:
		if h[0] != (histEvent{kind: histAccepted, at: e.readyAt}) ||
			h[1] != (histEvent{kind: histStarted, at: e.startedAt, attempt: 1, worker: e.workerID}) {
			return
		}
	case e.status == statusDone && len(h) == 3:
		if h[0] != (histEvent{kind: histAccepted, at: h[0].at}) ||
			h[1] != (histEvent{kind: histStarted, at: h[1].at, attempt: 1, worker: h[1].worker}) ||
			h[2] != (histEvent{kind: histCompleted, at: e.finishedAt, attempt: 1, worker: h[1].worker}) {
			return
		}
		// The state means them zero for a finished work (shown); here
		// they hold the history instead.
		e.readyAt, e.startedAt, e.workerID = h[0].at, h[1].at, h[1].worker
	default:
		return
	}
	e.plain = true
	e.setHistory(nil)
}

// shown returns readyAt, startedAt and workerID as the state means them:
// zero for a plain done work, whose fields hold its history instead.
func (e *entry) shown() (readyAt, startedAt int64, workerID string) {
	if e.plain && e.status == statusDone {
		return 0, 0, ""
	}
	return e.readyAt, e.startedAt, e.workerID
}
