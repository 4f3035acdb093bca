package core

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

// Status aliases used by WorkState, shorter than the generated names.
const (
	statusAccepted = messages.WorkStatus_WORK_STATUS_ACCEPTED
	statusRunning  = messages.WorkStatus_WORK_STATUS_RUNNING
	statusDone     = messages.WorkStatus_WORK_STATUS_DONE
	statusFailed   = messages.WorkStatus_WORK_STATUS_FAILED
	statusDead     = messages.WorkStatus_WORK_STATUS_DEAD
	// statusCancelled: the caller stopped waiting; not retried, not dead,
	// re-submittable like dead work.
	statusCancelled = messages.WorkStatus_WORK_STATUS_CANCELLED
)

func (e *entry) pending() bool { return e.status == statusAccepted || e.status == statusFailed }
func (e *entry) finished() bool {
	return e.status == statusDone || e.status == statusDead || e.status == statusCancelled
}

// rerunnable: a Work with this id submitted again runs again, unless it
// is once (firedOnce); a re-submission (ResubmitWork) runs it again.
func (e *entry) rerunnable() bool { return e.status == statusDead || e.status == statusCancelled }

// once reports whether e was submitted with Work.once. Only the rare
// re-submission of a dead or cancelled id asks, so the flag stays in the
// entry's extra fields rather than inline.
func (e *entry) once() bool { return len(e.extra()) > 0 && e.toWork().GetOnce() }

// firedOnce reports whether id is a once work that died or was cancelled: a
// submission of it is answered as that work, not run again.
func (s *WorkState) firedOnce(id string) bool {
	e, ok := s.entries[id]
	return ok && e.rerunnable() && e.once()
}

// finishedRef is a finished entry in the retention FIFO. A ref whose entry
// was re-submitted or forgotten is stale and skipped (live). It points to
// the entry rather than naming its id: 16 bytes rather than 24, and the
// forgetting and the snapshot's listing of a million finished works look
// none of them up in the map.
type finishedRef struct {
	e  *entry
	at int64
}

// live reports whether r's entry is still the finished work it was made for.
func (r finishedRef) live() bool {
	return !r.e.gone && r.e.finished() && r.e.finishedAt == r.at
}

// Counts summarises a WorkState.
type Counts struct {
	// Pending works wait for a worker (some for their backoff to pass).
	Pending int
	// Delayed works (of Pending) wait in a timer heap: for their run_at,
	// or a retry's backoff (issue 37).
	Delayed int
	// InProgress works are handed out and not yet reported.
	InProgress int
	// Done works are completed and still retained.
	Done int
	// Dead works used up their attempts or their deadline and are retained.
	Dead int
	// Cancelled works ended because their caller stopped waiting; retained.
	Cancelled int
	// AcceptedTotal counts every WorkAccepted ever applied.
	AcceptedTotal int64
	// HeldByLimit and HeldByRate count the hand-outs held back since the
	// state was built (a failover starts them afresh) by their concurrency
	// key's limit and by its rate; KeysHeld is how many keys have works
	// held now (keys.go, keyrate.go).
	HeldByLimit, HeldByRate uint64
	KeysHeld                int
}

// Running is a work in progress and the worker it was handed to.
type Running struct {
	WorkID   string
	WorkerID string
}

// WorkState is the Master's event-sourced state: pending works (one queue per
// job type, ordered by ready time then arrival), works in progress, and done
// and dead works kept for the retention. It changes only through Apply, so
// replaying the journal (from a snapshot) rebuilds it exactly. It is not
// safe for concurrent use; the core's Master owns it.
//
// The zero value is not usable; call NewWorkState.
type WorkState struct {
	entries       map[string]*entry
	queues        map[string]*typeQueue // by job type (pending.go)
	byWorker      map[string]map[string]*entry
	finished      []finishedRef
	finHead       int
	nextOrder     int64
	acceptedTotal int64
	counts        Counts
	// shared holds one copy of each worker id (see share).
	shared map[string]string
	// restoring gathers the pending entries of a snapshot by job type while
	// RestoreWorkState runs; their queues are built at the end (heapOf).
	restoring map[string][]*entry
	// keys index the unique and concurrency keys (keys.go).
	keys keyIndex
	// paused job types (QueuePaused): they hand nothing out.
	paused map[string]bool
	// horizon is the latest time the state has seen (an event's, a
	// hand-out's now): works ready by it are due (pending.go).
	horizon int64
	// aging and weights: see SetQueueing.
	aging   int64
	weights map[string]int
	// planted is test-only (Config.Planted): the bugs the state
	// reintroduces; early is HandOutEarly's look-ahead. Both zero in
	// production.
	planted Bug
	early   int64
}

// plant reintroduces bug b (test-only; NoBug in production).
func (s *WorkState) plant(b Bug) {
	s.planted, s.early = b, earlyOf(b)
}

// maxShared bounds WorkState.shared; past it the table starts over.
const maxShared = 4096

// share returns v, or an equal string the state already holds. Every
// history keeps the worker ids of its attempts, and each decoded event
// brings its own copy of them: a million finished works kept two copies
// each. Sharing changes no value, so replay stays exact.
func (s *WorkState) share(v string) string {
	if v == "" {
		return ""
	}
	if x, ok := s.shared[v]; ok {
		return x
	}
	if len(s.shared) >= maxShared {
		clear(s.shared)
	}
	s.shared[v] = v
	return v
}

// NewWorkState returns an empty state.
func NewWorkState() *WorkState {
	s := &WorkState{
		entries:  make(map[string]*entry),
		queues:   make(map[string]*typeQueue),
		byWorker: make(map[string]map[string]*entry),
		shared:   make(map[string]string),
	}
	s.keys.init()
	return s
}

// Apply applies one journal event. Events that do not fit the current state
// (a start of work that is not pending, a failure of work that is not
// running) change nothing, so replay is total; an event of an unknown type
// is an error.
func (s *WorkState) Apply(ev proto.Message) error {
	switch ev := ev.(type) {
	case *messages.WorkAccepted:
		s.accept(ev.GetWork(), ev.GetAtUnixNano(), false)
	case *messages.WorksAccepted:
		for _, w := range ev.GetWorks() {
			s.accept(w, ev.GetAtUnixNano(), false)
		}
	case *messages.WorkStarted:
		s.applyStarted(ev.GetWorkId(), ev.GetWorkerId(), ev.GetAtUnixNano())
	case *messages.WorksStarted:
		for _, id := range ev.GetWorkIds() {
			s.applyStarted(id, ev.GetWorkerId(), ev.GetAtUnixNano())
		}
	case *messages.WorkCompleted:
		s.applyCompleted(ev)
	case *messages.WorkerFailed:
		if ev.GetHandedBack() && !ev.GetCancelled() && !ev.GetDead() {
			s.applyHandedBack(ev)
			break
		}
		kind, end := histFailed, statusFailed
		switch {
		case ev.GetCancelled():
			end = statusCancelled
		case ev.GetDead():
			end = statusDead
		}
		s.applyFailed(kind, ev.GetWorkId(), ev.GetWorkerId(), ev.GetError(), ev.GetAtUnixNano(), ev.GetNotBeforeUnixNano(), end)
	case *messages.WorkerTimedOut:
		end := statusFailed
		if ev.GetDead() {
			end = statusDead
		}
		s.applyFailed(histTimedOut, ev.GetWorkId(), ev.GetWorkerId(), "work timed out", ev.GetAtUnixNano(), ev.GetNotBeforeUnixNano(), end)
	case *messages.WaiterDetached:
		s.applyWaiterDetached(ev.GetWorkId())
	case *messages.WaiterAdded:
		s.applyWaiterAdded(ev.GetWorkId(), ev.GetWaiter())
	case *messages.WaiterLeft:
		s.applyWaiterLeft(ev)
	case *messages.WorkExpired:
		s.applyExpired(ev)
	case *messages.FinishedForgotten:
		s.applyForgotten(ev.GetBeforeUnixNano())
	case *messages.MasterRecovered:
		s.see(ev.GetAtUnixNano())
		s.applyRecovered(ev.GetAtUnixNano())
		s.keys.recoveredRates(ev.GetAtUnixNano(), s.planted)
	case *messages.QueuePaused:
		s.applyQueuePaused(ev)
	case *messages.KeyLimitSet:
		s.keys.applyKeyLimitSet(ev)
	default:
		return fmt.Errorf("%w: %T", ErrUnknownEvent, ev)
	}
	return nil
}

// AcceptHeld applies a WorkAccepted whose event is not durable yet: the work
// is known from now on (IsAccepted: a duplicate is recognised and not queued
// twice) but NextReady does not hand it out until Release, which the master
// calls once the event is durable. It keeps its place in the FIFO order.
// Replay applies WorkAccepted with Apply, which releases at once.
func (s *WorkState) AcceptHeld(ev *messages.WorkAccepted) {
	s.accept(ev.GetWork(), ev.GetAtUnixNano(), true)
}

// Release makes held work id available to NextReady (see AcceptHeld). It does
// nothing for work that is not held.
func (s *WorkState) Release(id string) {
	e, ok := s.entries[id]
	if !ok || !e.held {
		return
	}
	e.held = false
	if e.status == statusAccepted && e.heapIdx < 0 {
		s.counts.Pending-- // counted when held; push counts it again
		s.push(e)
	}
}

// accept applies the acceptance of w at at (a WorkAccepted, or one work of
// a WorksAccepted); held: see AcceptHeld.
func (s *WorkState) accept(w *messages.Work, at int64, held bool) {
	if w.GetWorkId() == "" {
		return
	}
	s.see(at)
	e := newEntry(w)
	e.status, e.held = statusAccepted, held
	if old, ok := s.entries[w.GetWorkId()]; ok {
		if !old.rerunnable() {
			return // duplicate: never queued twice
		}
		s.leave(old)
		old.gone = true // replaced: its ref in the finished FIFO is stale
		old.unplain()
		e.setHistory(old.history()) // a re-submission continues its history
		e.record(histEvent{kind: histAccepted, at: at})
	} else {
		e.plain = true // accepted at readyAt
	}
	s.entries[e.id] = e
	s.keys.accepted(e)
	s.acceptedTotal++
	e.readyAt = at
	if runAt := w.GetRunAtUnixNano(); runAt > at {
		e.delay(w, at, runAt)
	}
	e.order = s.nextOrder
	s.nextOrder++
	if held {
		s.counts.Pending++ // pending, just not handed out yet
	} else {
		s.push(e)
	}
}

func (s *WorkState) enqueue(e *entry, readyAt int64) {
	e.readyAt = readyAt
	e.order = s.nextOrder
	s.nextOrder++
	s.push(e)
}

func (s *WorkState) applyStarted(id, workerID string, at int64) {
	e, ok := s.entries[id]
	if !ok || !e.pending() {
		return
	}
	s.see(at)
	s.dequeue(e, true)
	// A plain pending entry is a fresh one, and stays plain: its first
	// attempt's start is implied by startedAt and workerID.
	if !e.plain {
		e.record(histEvent{kind: histStarted, at: at, attempt: e.attempts + 1, worker: s.share(workerID)})
	}
	e.status = statusRunning
	e.attempts++
	e.workerID = s.share(workerID)
	e.startedAt = at
	s.keys.startedKey(e.concurrencyKey(), at)
	s.addRunning(e)
}

func (s *WorkState) addRunning(e *entry) {
	m := s.byWorker[e.workerID]
	if m == nil {
		m = make(map[string]*entry)
		s.byWorker[e.workerID] = m
	}
	m[e.id] = e
	s.counts.InProgress++
	s.keys.runs(e, 1)
}

func (s *WorkState) removeRunning(e *entry) {
	m := s.byWorker[e.workerID]
	delete(m, e.id)
	if len(m) == 0 {
		delete(s.byWorker, e.workerID)
	}
	s.counts.InProgress--
	s.keys.runs(e, -1)
	e.workerID = ""
	e.startedAt = 0
}

// leave takes e out of whatever pending/running/dead structure holds it.
func (s *WorkState) leave(e *entry) {
	switch {
	case e.pending():
		s.unqueue(e)
	case e.status == statusRunning:
		s.removeRunning(e)
	case e.status == statusDead:
		s.counts.Dead--
	case e.status == statusDone:
		s.counts.Done--
	case e.status == statusCancelled:
		s.counts.Cancelled--
	}
}

func (s *WorkState) finish(e *entry, status messages.WorkStatus, at int64) {
	e.status = status
	e.finishedAt = at
	e.order = 0
	// Kept for the retention: a plain run's history not at all (its
	// readyAt, startedAt and workerID hold it), another one without spare
	// capacity (it grows by doubling).
	if !e.plain {
		e.readyAt = 0
		if status == statusDone {
			e.compact()
		}
	}
	if h := e.history(); cap(h) > len(h) {
		e.setHistory(slices.Clone(h))
	}
	switch status {
	case statusDone:
		s.counts.Done++
		// The payload is not needed any more (entry.data holds the
		// result): keep only what status queries and results report, to
		// bound the memory of retention. The waiter stays: the master
		// tells it the outcome once durable.
	case statusCancelled:
		s.counts.Cancelled++
	default:
		s.counts.Dead++
	}
	s.finished = append(s.finished, finishedRef{e: e, at: at})
}

func (s *WorkState) applyCompleted(ev *messages.WorkCompleted) {
	e, ok := s.entries[ev.GetWorkId()]
	if !ok || e.status == statusDone {
		return
	}
	worker := s.share(ev.GetWorkerId())
	if len(s.keys.slots) > 0 {
		s.keys.ended(e.id, worker) // the reporting run's held slot (keys.go)
	}
	if e.status == statusRunning && e.workerID != worker {
		s.keys.requeued(e, 0) // the run the master tracked goes on elsewhere
	}
	if e.plain && !e.delayed && e.status == statusRunning && e.workerID == worker {
		// Done on its first attempt by the worker that started it: it
		// stays plain, its history held by readyAt, startedAt, workerID
		// (which removeRunning clears: restored here).
		startedAt := e.startedAt
		s.leave(e)
		e.startedAt, e.workerID = startedAt, worker
	} else {
		e.unplain()
		s.leave(e)
		e.record(histEvent{kind: histCompleted, at: ev.GetAtUnixNano(), attempt: e.attempts, worker: worker})
	}
	e.data = ev.GetResult()
	s.finish(e, statusDone, ev.GetAtUnixNano())
}

// applyFailed ends an attempt (kind: failed or timed out): end is
// statusFailed (retried at notBefore), statusDead or statusCancelled.
func (s *WorkState) applyFailed(kind messages.WorkHistoryKind, workID, workerID, reason string, at, notBefore int64, end messages.WorkStatus) {
	e, ok := s.entries[workID]
	if !ok || e.status != statusRunning || e.workerID != workerID {
		return
	}
	worker := e.workerID // the shared copy of workerID
	e.unplain()
	s.removeRunning(e)
	e.setLastError(reason)
	e.record(histEvent{kind: kind, at: at, attempt: e.attempts, worker: worker, err: reason})
	switch end {
	case statusDead:
		e.record(histEvent{kind: histDead, at: at, attempt: e.attempts, err: reason})
	case statusCancelled:
		e.record(histEvent{kind: histCancelled, at: at, attempt: e.attempts, err: reason})
	}
	if end != statusFailed {
		s.finish(e, end, at)
		return
	}
	e.status = statusFailed
	s.enqueue(e, notBefore)
}

// applyHandedBack returns a work its worker gave back unfinished (it
// stopped or drained; see messages.WorkerFailed.handed_back) to its old
// place in its queue, ready at once, without counting the attempt: the job
// said nothing about itself, so it must neither use up its attempts nor
// wait out a backoff.
func (s *WorkState) applyHandedBack(ev *messages.WorkerFailed) {
	e, ok := s.entries[ev.GetWorkId()]
	if !ok || e.status != statusRunning || e.workerID != ev.GetWorkerId() {
		return
	}
	worker := e.workerID // the shared copy
	e.unplain()
	s.removeRunning(e)
	e.record(histEvent{kind: histRequeued, at: ev.GetAtUnixNano(), attempt: e.attempts, worker: worker, err: ev.GetError()})
	e.takeBackAttempt()
	e.status = statusAccepted
	if e.lastError() != "" {
		e.status = statusFailed
	}
	s.push(e)
}

// Holds reports whether workerID runs workID in hand-out attempt (the
// Work.attempt it was sent with): a heartbeat of an older hand-out, or of
// a worker the work no longer belongs to, is not.
func (s *WorkState) Holds(workID, workerID string, attempt int32) bool {
	e, ok := s.entries[workID]
	return ok && e.status == statusRunning && e.workerID == workerID && e.attempts == attempt
}

func (s *WorkState) applyExpired(ev *messages.WorkExpired) {
	e, ok := s.entries[ev.GetWorkId()]
	if !ok || !e.pending() {
		return
	}
	e.unplain()
	s.unqueue(e)
	e.setLastError(ev.GetReason())
	e.record(histEvent{kind: histDead, at: ev.GetAtUnixNano(), attempt: e.attempts, err: ev.GetReason()})
	s.finish(e, statusDead, ev.GetAtUnixNano())
}

// applyWaiterDetached drops the waiter of an unfinished work: its caller
// stopped waiting but wants the job to go on, so workers no longer ask.
func (s *WorkState) applyWaiterDetached(id string) {
	e, ok := s.entries[id]
	if !ok || e.finished() || e.waiter == nil {
		return
	}
	e.waiter = nil
}

// WaiterLeftEvent returns the WaiterLeft event for a cancellation of workID
// reported by workerID at now (the waiter it asked said its caller had
// gone), when another caller still waits; ok is false when none does (the
// work ends CANCELLED) or workerID does not hold the work.
func (s *WorkState) WaiterLeftEvent(workID, workerID, reason string, now time.Time) (*messages.WaiterLeft, bool) {
	e, ok := s.entries[workID]
	if !ok || e.status != statusRunning || e.workerID != workerID || e.waiter == nil || len(e.moreWaiters()) == 0 {
		return nil, false
	}
	return &messages.WaiterLeft{WorkId: workID, WorkerId: workerID, Error: reason, AtUnixNano: now.UnixNano(), JobType: e.jobType}, true
}

// applyWaiterLeft hands the work back to its place in its queue with the
// newest remaining caller's waiter (see messages.WaiterLeft).
func (s *WorkState) applyWaiterLeft(ev *messages.WaiterLeft) {
	e, ok := s.entries[ev.GetWorkId()]
	if !ok || e.status != statusRunning || e.workerID != ev.GetWorkerId() || e.waiter == nil || len(e.moreWaiters()) == 0 {
		return
	}
	more := e.moreWaiters()
	worker := e.workerID // the shared copy
	e.unplain()
	s.removeRunning(e)
	e.record(histEvent{kind: histRequeued, at: ev.GetAtUnixNano(), attempt: e.attempts, worker: worker, err: ev.GetError()})
	e.takeBackAttempt() // the job never started: its worker asked first
	e.waiter = more[len(more)-1]
	if len(more) == 1 {
		e.setMoreWaiters(nil)
	} else {
		e.setMoreWaiters(slices.Clone(more[:len(more)-1]))
	}
	e.status = statusAccepted
	if e.lastError() != "" {
		e.status = statusFailed
	}
	// Its ready time and arrival order are those it was handed out with:
	// it goes back to its old place, as after a recovery.
	s.push(e)
}

func (s *WorkState) applyForgotten(before int64) {
	for s.finHead < len(s.finished) {
		ref := s.finished[s.finHead]
		if ref.at >= before {
			break
		}
		s.finished[s.finHead] = finishedRef{}
		s.finHead++
		if ref.live() {
			s.keys.forget(ref.e, before)
			s.leave(ref.e)
			delete(s.entries, ref.e.id)
			ref.e.gone = true
		}
	}
	s.keys.expire(before)
	// Compact once the consumed prefix dominates, so the FIFO stays bounded.
	if s.finHead > 1024 && s.finHead*2 > len(s.finished) {
		s.finished = append([]finishedRef(nil), s.finished[s.finHead:]...)
		s.finHead = 0
	}
}

func (s *WorkState) applyRecovered(at int64) {
	running := make([]*entry, 0, s.counts.InProgress)
	for _, m := range s.byWorker {
		for _, e := range m {
			running = append(running, e)
		}
	}
	sort.Slice(running, func(i, j int) bool {
		if running[i].startedAt != running[j].startedAt {
			return running[i].startedAt < running[j].startedAt
		}
		return running[i].id < running[j].id
	})
	for _, e := range running {
		e.record(histEvent{kind: histRequeued, at: at, attempt: e.attempts, worker: e.workerID})
		e.takeBackAttempt()
		s.keys.requeued(e, at)
		s.removeRunning(e)
		e.status = statusAccepted
		if e.lastError() != "" {
			e.status = statusFailed
		}
		// It keeps the ready time and arrival order it had when it was
		// handed out, so it goes back to its old place in the queue.
		s.push(e)
	}
}

// takeBackAttempt uncounts the hand-out of a work that goes back to its
// queue without having failed: a new master requeues what was running when
// the old one stopped (its outcome is unknown, and a result that still
// arrives is taken), and a worker hands back a job whose asked caller left
// while another waits. Only a failure or a timeout uses up an attempt, so
// the attempt a Work carries never passes Policy.MaxAttempts (the
// simulator's attempts_bounded; seed 44 found a fourth attempt of three
// after a failover).
func (e *entry) takeBackAttempt() {
	if e.attempts > 0 {
		e.attempts--
	}
}

// Counts returns the number of works per state.
func (s *WorkState) Counts() Counts {
	c := s.counts
	c.AcceptedTotal = s.acceptedTotal
	c.HeldByLimit, c.HeldByRate, c.KeysHeld = s.keys.limitHeld, s.keys.rateHeld, len(s.keys.parked)
	for _, tq := range s.queues {
		c.Delayed += len(tq.timers)
	}
	return c
}

// Len returns how many works the state holds (pending, running, retained).
func (s *WorkState) Len() int { return len(s.entries) }

// IsAccepted reports whether id is known and not dead or cancelled: a Work
// with this id is acknowledged again and not queued.
func (s *WorkState) IsAccepted(id string) bool {
	e, ok := s.entries[id]
	return ok && !e.rerunnable()
}

// IsFinished reports whether id is done, dead or cancelled (and retained).
func (s *WorkState) IsFinished(id string) bool {
	e, ok := s.entries[id]
	return ok && e.finished()
}

// IsDone reports whether id is done (and still retained).
func (s *WorkState) IsDone(id string) bool {
	e, ok := s.entries[id]
	return ok && e.status == statusDone
}

// Work returns the stored work of id (nil when unknown), a new message.
func (s *WorkState) Work(id string) *messages.Work {
	if e, ok := s.entries[id]; ok {
		return e.toWork()
	}
	return nil
}

// JobType returns the job type of id ("" when unknown).
func (s *WorkState) JobType(id string) string {
	if e, ok := s.entries[id]; ok {
		return e.jobType
	}
	return ""
}

// Status answers GetWorkStatus for id; an unknown id has status UNKNOWN.
func (s *WorkState) Status(id string) *messages.WorkStatusReply {
	e, ok := s.entries[id]
	if !ok {
		return &messages.WorkStatusReply{WorkId: id, Status: messages.WorkStatus_WORK_STATUS_UNKNOWN}
	}
	return &messages.WorkStatusReply{
		WorkId:    id,
		Status:    e.status,
		Result:    e.result(),
		Attempts:  e.attempts,
		LastError: e.lastError(),
		JobType:   e.jobType,
		History:   historyToProto(e.hist(new([3]histEvent))),
	}
}

// Attempts returns how many times id was handed out.
func (s *WorkState) Attempts(id string) int32 {
	if e, ok := s.entries[id]; ok {
		return e.attempts
	}
	return 0
}

// WorkerOf returns the worker id holds, when it is running.
func (s *WorkState) WorkerOf(id string) (workerID string, running bool) {
	if e, ok := s.entries[id]; ok && e.status == statusRunning {
		return e.workerID, true
	}
	return "", false
}

// InProgress returns the works in progress, sorted by work id.
func (s *WorkState) InProgress() []Running {
	out := make([]Running, 0, s.counts.InProgress)
	for w, m := range s.byWorker {
		for id := range m {
			out = append(out, Running{WorkID: id, WorkerID: w})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].WorkID < out[j].WorkID })
	return out
}

// InProgressBy returns the ids of the works workerID holds, sorted.
func (s *WorkState) InProgressBy(workerID string) []string {
	m := s.byWorker[workerID]
	out := make([]string, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// RunningCount returns how many works workerID holds.
func (s *WorkState) RunningCount(workerID string) int { return len(s.byWorker[workerID]) }

// Overdue returns the works in progress started at or before now-timeout,
// sorted by work id.
func (s *WorkState) Overdue(now time.Time, timeout time.Duration) []Running {
	limit := now.Add(-timeout).UnixNano()
	var out []Running
	for w, m := range s.byWorker {
		for id, e := range m {
			if e.startedAt <= limit {
				out = append(out, Running{WorkID: id, WorkerID: w})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].WorkID < out[j].WorkID })
	return out
}

// NextReady returns the pending work to hand out next at now among the job
// types accept allows (nil accepts all): the one with the earliest ready
// time, then the earliest arrival. It returns nil when none is ready.
// The work is a new message.
func (s *WorkState) NextReady(now time.Time, accept func(jobType string) bool) *messages.Work {
	if e := s.nextReady(now, accept); e != nil {
		return e.toWork()
	}
	return nil
}

// Snapshot returns the state as a MasterSnapshot, its entries packed into
// chunks (see snapshot.go): finished works in finishing order, then the
// others in arrival order, so the snapshot is deterministic.
func (s *WorkState) Snapshot() *messages.MasterSnapshot {
	var p packer
	s.eachForSnapshot(p.add)
	return &messages.MasterSnapshot{
		Chunks:         p.done(),
		ChunkEntries:   p.total,
		NextOrder:      s.nextOrder,
		AcceptedTotal:  s.acceptedTotal,
		Keys:           s.keys.keysState(),
		PausedJobTypes: s.PausedTypes(),
	}
}

// eachForSnapshot calls fn for every entry in snapshot order: the finished
// ones in finishing order, then the others in arrival order.
func (s *WorkState) eachForSnapshot(fn func(e *entry)) {
	// A work that ended dead or cancelled and was then completed by a late
	// result at the same instant has two live refs (one entry finished
	// twice; a re-submission is a new entry, whose old ref is stale): it is
	// listed once, at the first (FuzzReplay finds such a history).
	// The entry's listed mark says so (a map of a million ids here was
	// tens of MB of garbage per snapshot); the marks are cleared after.
	finished := s.finished[s.finHead:]
	n := 0
	for _, ref := range finished {
		if e := ref.e; ref.live() && !e.listed {
			e.listed = true
			n++
			fn(e)
		}
	}
	for _, ref := range finished {
		ref.e.listed = false
	}
	live := make([]*entry, 0, len(s.entries)-n)
	for _, e := range s.entries {
		if !e.finished() {
			live = append(live, e)
		}
	}
	// In arrival order, unique among unfinished works: the snapshot stays
	// deterministic, and comparing integers rather than ids matters here
	// (this runs on the master's goroutine; sorting a million ids as
	// strings took most of a snapshot's time).
	slices.SortFunc(live, func(a, b *entry) int {
		if c := cmp.Compare(a.order, b.order); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	for _, e := range live {
		fn(e)
	}
}

// RestoreWorkState rebuilds a state from a snapshot, packed (chunks) or
// written as WorkEntry messages by an older master.
func RestoreWorkState(snap *messages.MasterSnapshot) (*WorkState, error) {
	s := NewWorkState()
	if n := snap.GetChunkEntries(); n > 0 && n <= 1<<30 {
		s.entries = make(map[string]*entry, n)
	}
	s.nextOrder = snap.GetNextOrder()
	s.acceptedTotal = snap.GetAcceptedTotal()
	if len(snap.GetChunks()) > 0 && len(snap.GetEntries()) > 0 {
		return nil, fmt.Errorf("%w: both entries and chunks", ErrBadSnapshot)
	}
	s.restoring = make(map[string][]*entry)
	defer func() { s.restoring = nil }()
	if err := s.restoreChunks(snap.GetChunks()); err != nil {
		return nil, err
	}
	for i, we := range snap.GetEntries() {
		e := newEntry(we.GetWork())
		e.status = we.GetStatus()
		e.attempts = we.GetAttempts()
		e.readyAt, e.order = we.GetReadyAtUnixNano(), we.GetOrder()
		e.workerID = we.GetWorkerId()
		e.startedAt, e.finishedAt = we.GetStartedAtUnixNano(), we.GetFinishedAtUnixNano()
		e.setLastError(we.GetLastError())
		e.setHistory(historyFromProto(we.GetHistory()))
		if e.status == statusDone {
			e.data = we.GetResult() // see entry.data
		}
		if err := s.restoreEntry(i, e); err != nil {
			return nil, err
		}
	}
	for _, jt := range snap.GetPausedJobTypes() {
		s.applyQueuePaused(&messages.QueuePaused{JobType: jt, Paused: true})
	}
	s.keys.restoreKeys(snap.GetKeys())
	s.restoreQueues(s.restoring)
	return s, nil
}

// restoreEntry adds e, the i-th entry of a snapshot, to s.
func (s *WorkState) restoreEntry(i int, e *entry) error {
	id := e.id
	if id == "" {
		return fmt.Errorf("%w: entry %d has no work id", ErrBadSnapshot, i)
	}
	if _, dup := s.entries[id]; dup {
		return fmt.Errorf("%w: work id %q appears twice", ErrBadSnapshot, id)
	}
	s.see(e.evidence())
	switch {
	case e.pending() && s.restoring != nil:
		s.restoring[e.jobType] = append(s.restoring[e.jobType], e)
		s.counts.Pending++
	case e.pending():
		s.push(e)
	case e.status == statusRunning:
		s.addRunning(e)
	case e.status == statusDone:
		s.counts.Done++
	case e.status == statusDead:
		s.counts.Dead++
	case e.status == statusCancelled:
		s.counts.Cancelled++
	default:
		return fmt.Errorf("%w: work %q has status %v", ErrBadSnapshot, id, e.status)
	}
	if e.finished() {
		s.finished = append(s.finished, finishedRef{e: e, at: e.finishedAt})
	}
	e.compact()
	s.entries[id] = e
	s.keys.accepted(e)
	return nil
}

// Policy decides what happens to a work whose attempt failed or timed out.
type Policy struct {
	// MaxAttempts is how many hand-outs a work gets before it is dead. A
	// hand-out that comes back without a failure (a failover requeues it,
	// or a caller of several left before it started) is not counted.
	MaxAttempts int32
	// BackoffBase is the wait before the second attempt; it doubles for
	// each further attempt.
	BackoffBase time.Duration
	// BackoffMax caps the wait.
	BackoffMax time.Duration
}

// Backoff returns the wait after the given number of failed attempts
// (1 for the first): BackoffBase * 2^(attempts-1), at most BackoffMax.
func (p Policy) Backoff(attempts int32) time.Duration {
	if attempts < 1 {
		attempts = 1
	}
	d := p.BackoffBase
	for i := int32(1); i < attempts && d < p.BackoffMax; i++ {
		d *= 2
	}
	return min(d, p.BackoffMax)
}

// afterFailure returns the not-before time and deadness of a work that has
// been handed out attempts times and failed at now.
func (p Policy) afterFailure(attempts int32, now time.Time) (notBefore int64, dead bool) {
	if attempts >= p.MaxAttempts {
		return 0, true
	}
	return now.Add(p.Backoff(attempts)).UnixNano(), false
}

// FailureEvent returns the WorkerFailed event for a failure of workID, which
// workerID holds, reported at now; ok is false when workerID does not hold it
// (a stale report, which changes nothing).
func (s *WorkState) FailureEvent(p Policy, workID, workerID, reason string, now time.Time) (*messages.WorkerFailed, bool) {
	e, ok := s.entries[workID]
	if !ok || e.status != statusRunning || e.workerID != workerID {
		return nil, false
	}
	nb, dead := p.afterFailure(e.attempts, now)
	return &messages.WorkerFailed{WorkId: workID, WorkerId: workerID, Error: reason,
		AtUnixNano: now.UnixNano(), NotBeforeUnixNano: nb, Dead: dead, JobType: e.jobType}, true
}

// TimeoutEvent returns the WorkerTimedOut event for workID, which workerID
// holds, at now; ok is false when workerID does not hold it.
func (s *WorkState) TimeoutEvent(p Policy, workID, workerID string, now time.Time) (*messages.WorkerTimedOut, bool) {
	e, ok := s.entries[workID]
	if !ok || e.status != statusRunning || e.workerID != workerID {
		return nil, false
	}
	nb, dead := p.afterFailure(e.attempts, now)
	return &messages.WorkerTimedOut{WorkId: workID, WorkerId: workerID,
		AtUnixNano: now.UnixNano(), NotBeforeUnixNano: nb, Dead: dead, JobType: e.jobType}, true
}

// limitCut returns the FinishedForgotten time that forgets the oldest
// finished works beyond limit: one past the finishing time of the last of
// them (works that finished at that same instant go too). ok is false when
// no more than limit are finished.
func (s *WorkState) limitCut(limit int) (before int64, ok bool) {
	over := s.counts.Done + s.counts.Dead + s.counts.Cancelled - limit
	if over <= 0 {
		return 0, false
	}
	for _, ref := range s.finished[s.finHead:] {
		if !ref.live() {
			continue
		}
		before = ref.at
		if over--; over == 0 {
			break
		}
	}
	return before + 1, true
}

// OldestFinishedAt returns the finishing time of the oldest retained done or
// dead work (possibly of one already re-submitted); ok is false when none.
func (s *WorkState) OldestFinishedAt() (at int64, ok bool) {
	if s.finHead >= len(s.finished) {
		return 0, false
	}
	return s.finished[s.finHead].at, true
}
