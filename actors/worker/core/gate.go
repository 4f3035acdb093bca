package core

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/messages"
)

// This file holds what happens between "the work has a slot" and "its
// executor runs it": the two gates of the seeds that work together in the
// distributed workers.
//
//	slot taken ──(Limiter)──> wait for a permit of the shared limiter (seed 004)
//	           ──(Work.waiter)──> ask the caller's waiter AreYouStillInterested (seed 003)
//	           ──> Run in the slot's executor
//
// The waiter is asked from a watcher of the passage (Ask), which stays while
// the job runs so that a waiter's later, unasked IAmNoLongerInterested
// cancels the job's ctx.
//
// Until the first answer the watcher asks again every InterestRetry (the ask
// timer bounds the whole wait). A dead letter comes two ways (Answer.Gone):
// the waiter's node, reached, says it has no such actor (the caller's
// Interest stopped after its linger): gone at once, so work whose caller
// left long ago costs one round trip, not the interest timeout; or this node
// could not reach that node (a connection being re-made): asked again, gone
// only once NodeGone says the node is. Once the job runs, the same tick
// checks NodeGone, so a job whose caller's node left is cancelled. NodeGone
// is believed only once it has held for goneConfirm while the worker asked
// that node again every tick without an answer: asking makes protoactor
// re-make a connection a blip cut, and an answer from the node clears the
// suspicion. The suspicion is the worker's, per node (goneBook): once a node
// is confirmed gone, the next jobs whose waiters are on it are skipped at
// once instead of each waiting goneConfirm again.

// gatePhase is where the work of one slot is; the zero value means the slot
// is free or its work has not entered the gates.
type gatePhase int

const (
	phaseWaitPermit gatePhase = iota + 1 // waits for a permit of the limiter
	phaseAsking                          // the waiter was asked; no answer yet
	phaseRunning                         // the executor runs the work
)

// gate is one slot's passage through the gates.
type gate struct {
	phase    gatePhase
	workID   string
	seq      uint64        // unique per passage (from 1), so stale reports are ignored
	permit   uint64        // held for this work; 0 without a limiter
	waiter   *messages.PID // watched waiter; nil without one
	askName  string        // the ask timer's name, made once per passage
	tickName string        // the watch tick's name, made once per passage
	began    int64         // when the work took the slot (Unix ns)
	asking   bool          // the ask timer is armed
	ticking  bool          // the watch tick is armed
	answered bool          // the waiter's first answer came
	left     bool          // the caller left while the job ran
}

// spare is a permit held for work asked from the master, since at.
type spare struct {
	permit uint64
	at     time.Time
}

// goneConfirm is how long NodeGone must go on reporting a waiter's node
// gone, while the worker asks that node again every tick and gets no
// answer, before its callers count as gone. cluster/node reports a frontend
// gone once its connection stayed lost for 2 s, but protoactor re-makes a
// lost connection only when something is sent over it, and its endpoint
// writer waits 2 s after a failed attempt: without asking again and waiting
// a little longer than that, a connection cut for a second would cancel a
// running job of a live caller and could skip a waiting one.
const goneConfirm = 3 * time.Second

// goneBook is the worker's suspicion of waiter nodes that NodeGone reports
// gone, by address. Per node rather than per job, a frontend killed with
// many waited jobs queued costs one goneConfirm per worker, not one per job.
type goneBook struct {
	nodes map[string]suspicion
}

// suspicion is how long a node has been reported gone while it was asked
// without an answer: since the first such question, asked the last.
type suspicion struct{ since, asked time.Time }

// asking records a question, at now, to a waiter whose node at addr is
// reported gone, and reports whether that node is confirmed gone: suspected
// for goneConfirm, asked every retry without an answer. A gap of more than
// two retries without a question starts the suspicion afresh: a connection
// is re-made only when something is sent over it.
func (b *goneBook) asking(addr string, now time.Time, retry time.Duration) bool {
	s, ok := b.nodes[addr]
	if !ok {
		// A new suspicion: forget the stale ones (the order does not matter:
		// every stale one goes).
		for a, old := range b.nodes {
			if now.Sub(old.asked) > 2*retry {
				delete(b.nodes, a)
			}
		}
	}
	if !ok || now.Sub(s.asked) > 2*retry {
		s.since = now
	}
	s.asked = now
	b.nodes[addr] = s
	return now.Sub(s.since) >= goneConfirm
}

// clear forgets the suspicion of the node at addr: it answered, or it is
// no longer reported gone.
func (b *goneBook) clear(addr string) { delete(b.nodes, addr) }

// enter starts the work m given slot: through the limiter, then the
// waiter, then the executor.
func (w *Worker) enter(slot int, m *messages.Work) {
	if w.stopped {
		return
	}
	g := &w.gates[slot]
	w.gateSeq++
	*g = gate{workID: m.GetWorkId(), seq: w.gateSeq, began: w.now.UnixNano()}
	if w.cfg.Debug {
		w.log(slog.LevelDebug, "Got work", "work_id", m.GetWorkId(), "job_type", m.GetJobType(), "attempt", m.GetAttempt())
	}
	if w.cfg.Limiter {
		if len(w.spare) == 0 {
			g.phase = phaseWaitPermit
			w.permitQueue = append(w.permitQueue, slot)
			w.ensureAcquire()
			return
		}
		g.permit = w.popSpare()
	}
	w.afterPermit(slot, m)
}

// afterPermit asks the work's waiter, if it has one, or runs the work.
func (w *Worker) afterPermit(slot int, m *messages.Work) {
	g := &w.gates[slot]
	wp := m.GetWaiter()
	if wp == nil {
		w.run(slot, m)
		return
	}
	g.phase = phaseAsking
	g.waiter = wp
	g.askName, g.tickName = gateTimer(timerAsk, slot, g.seq), gateTimer(timerWatch, slot, g.seq)
	w.ask(slot)
	g.asking = true
	w.arm(g.askName, w.cfg.InterestTimeout)
	// Asked even when the node is confirmed gone: the question makes
	// protoactor re-make the connection if the node is back.
	if w.nodeGone(g.waiter) && w.book.asking(g.waiter.GetAddress(), w.now, w.cfg.InterestRetry) {
		w.callerGone(slot, messages.NoLongerInterestedReason_NO_LONGER_INTERESTED_REASON_CLOSED,
			fmt.Errorf("%w: the node of waiter %s left the cluster", ErrCallerGone, g.waiter))
	}
}

func (w *Worker) run(slot int, m *messages.Work) {
	g := &w.gates[slot]
	g.phase = phaseRunning
	r := &w.runs[slot] // one per slot, reused: boxing a Run cost an allocation per job
	*r = Run{Slot: slot, Seq: g.seq, Work: m}
	w.emit(r)
}

func (w *Worker) ask(slot int) {
	g := &w.gates[slot]
	w.emit(Ask{Slot: slot, Seq: g.seq, WorkID: g.workID, Waiter: g.waiter})
	w.armWatch(slot)
}

func (w *Worker) armWatch(slot int) {
	if g := &w.gates[slot]; !g.ticking {
		g.ticking = true
		w.arm(g.tickName, w.cfg.InterestRetry)
	}
}

func (w *Worker) nodeGone(p *messages.PID) bool {
	return w.cfg.NodeGone != nil && w.cfg.NodeGone(p.GetAddress())
}

func gateTimer(kind string, slot int, seq uint64) string {
	b := make([]byte, 0, len(kind)+24)
	b = append(b, kind...)
	b = strconv.AppendInt(b, int64(slot), 10)
	b = append(b, ':')
	return string(strconv.AppendUint(b, seq, 10))
}

// gateOf returns the gate of slot if it is still the passage seq of workID
// (any work id when workID is "").
func (w *Worker) gateOf(slot int, seq uint64, workID string) *gate {
	if slot < 0 || slot >= len(w.gates) || w.gates[slot].seq != seq || seq == 0 ||
		(workID != "" && w.gates[slot].workID != workID) {
		return nil
	}
	return &w.gates[slot]
}

// firedGate handles a gate's ask timer or watch tick.
func (w *Worker) firedGate(name string) {
	kind, rest := timerAsk, ""
	switch {
	case strings.HasPrefix(name, timerAsk):
		rest = name[len(timerAsk):]
	case strings.HasPrefix(name, timerWatch):
		kind, rest = timerWatch, name[len(timerWatch):]
	default:
		return
	}
	a, b, _ := strings.Cut(rest, ":")
	slot, err1 := strconv.Atoi(a)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	g := w.gateOf(slot, seq, "")
	if err1 != nil || err2 != nil || g == nil || w.stopped {
		return
	}
	if kind == timerAsk {
		if g.asking {
			g.asking = false
			w.onInterest(slot, seq, fmt.Errorf("%w: waiter %s did not answer AreYouStillInterested within %v",
				ErrCallerGone, g.waiter, w.cfg.InterestTimeout))
		}
		return
	}
	g.ticking = false
	if g.left || g.waiter == nil {
		return
	}
	addr := g.waiter.GetAddress()
	switch gone := w.nodeGone(g.waiter); {
	case gone && w.book.asking(addr, w.now, w.cfg.InterestRetry):
		w.callerGone(slot, messages.NoLongerInterestedReason_NO_LONGER_INTERESTED_REASON_CLOSED,
			fmt.Errorf("%w: the node of waiter %s left the cluster", ErrCallerGone, g.waiter))
	case gone:
		// Not believed yet: ask, which makes protoactor re-make a lost
		// connection (an answer clears the suspicion).
		w.ask(slot)
	case !g.answered:
		w.book.clear(addr)
		w.ask(slot)
	default:
		w.book.clear(addr)
		w.armWatch(slot)
	}
}

// Interest reports what reached the watcher of a passage (see Ask).
func (w *Worker) Interest(now time.Time, a Answer) []effect.Effect {
	w.begin(now)
	g := w.gateOf(a.Slot, a.Seq, a.WorkID)
	if g == nil || g.waiter == nil || w.stopped {
		return w.out
	}
	addr := g.waiter.GetAddress()
	closed := messages.NoLongerInterestedReason_NO_LONGER_INTERESTED_REASON_CLOSED
	switch a.Kind {
	case StillInterested:
		w.book.clear(addr)
		w.answer(a.Slot, nil)
	case NoLongerInterested:
		w.book.clear(addr)
		w.callerGone(a.Slot, a.Reason, fmt.Errorf("%w: waiter %s answered IAmNoLongerInterested (%s)", ErrCallerGone, g.waiter, a.Reason))
	case DeadLetter:
		switch {
		case g.answered && a.Gone:
			// A question asked again while the job runs (a suspected node)
			// found no waiter: its node is there, and the waiter may have
			// been released (the caller let the job go on), so the job runs
			// on; a caller who gave up has said so with IAmNoLongerInterested.
			w.book.clear(addr)
		case a.Gone:
			w.book.clear(addr) // its node answered
			w.callerGone(a.Slot, closed, fmt.Errorf("%w: waiter %s is gone (dead letter from its node)", ErrCallerGone, g.waiter))
		case w.nodeGone(g.waiter) && !g.answered:
			w.callerGone(a.Slot, closed, fmt.Errorf("%w: waiter %s is unreachable and its node has gone", ErrCallerGone, g.waiter))
		}
		// Otherwise this node could not reach the waiter's: the next tick
		// asks again.
	}
	return w.out
}

// callerGone reports that the caller left: before the first answer as that
// answer, after it (the job runs) by cancelling the job, once.
func (w *Worker) callerGone(slot int, reason messages.NoLongerInterestedReason, err error) {
	g := &w.gates[slot]
	if !g.answered {
		w.answer(slot, err)
		return
	}
	if g.left {
		return
	}
	g.left = true
	if g.phase != phaseRunning {
		return
	}
	w.log(slog.LevelInfo, "Caller gave up; cancelling the running job", "work_id", g.workID, "reason", reason.String())
	w.emit(Cancel{Slot: slot, Seq: g.seq,
		Cause: fmt.Errorf("%w: the waiter said IAmNoLongerInterested (%s) while the job ran", ErrCallerGone, reason)})
}

// answer takes the waiter's first answer (nil: still interested).
func (w *Worker) answer(slot int, err error) {
	g := &w.gates[slot]
	if g.answered {
		return
	}
	g.answered = true
	w.onInterest(slot, g.seq, err)
}

// onInterest ends the wait for the waiter: the work runs, or (err) is
// handed back as the caller's gone and not started.
func (w *Worker) onInterest(slot int, seq uint64, err error) {
	g := w.gateOf(slot, seq, "")
	if g == nil || g.phase != phaseAsking || w.stopped {
		return
	}
	if g.asking {
		g.asking = false
		w.emit(effect.StopTimer{Name: g.askName})
	}
	if err == nil {
		w.run(slot, w.st.running(slot))
		return
	}
	failed, next := w.st.fail(slot, g.workID)
	w.endGate(slot, false)
	if failed != nil {
		w.fail(failed, err)
	}
	w.startNext(slot, next)
	w.maybeRequest()
}

// endGate clears slot's gate when its work ends: the permit is released
// when the job function ran (ran), else abandoned; the watcher ends.
func (w *Worker) endGate(slot int, ran bool) {
	g := &w.gates[slot]
	if g.seq != 0 {
		w.ra.jobDone(w.now.UnixNano() - g.began)
	}
	if g.asking {
		w.emit(effect.StopTimer{Name: g.askName})
	}
	if g.ticking {
		w.emit(effect.StopTimer{Name: g.tickName})
	}
	if g.waiter != nil {
		w.emit(Unwatch{Slot: slot, Seq: g.seq})
	}
	if g.phase == phaseWaitPermit {
		for i, s := range w.permitQueue {
			if s == slot {
				w.permitQueue = append(w.permitQueue[:i], w.permitQueue[i+1:]...)
				break
			}
		}
	}
	if g.permit != 0 {
		if ran {
			w.emit(Release{Permit: g.permit})
		} else {
			w.emit(Abandon{Permit: g.permit})
		}
	}
	*g = gate{}
	w.beats[slot] = slotBeat{}
	w.ensureAcquire()
}

// wantPermits is how many permits the worker should acquire now: one per
// slot waiting for one, plus one per free slot without a spare permit while
// it wants work.
func (w *Worker) wantPermits() int {
	n := len(w.permitQueue)
	if w.hungry && !w.draining {
		n += max(0, w.st.capacity(0)-len(w.spare))
	}
	return n
}

func (w *Worker) ensureAcquire() {
	if !w.cfg.Limiter || w.acquiring || w.stopped || w.closed || w.wantPermits() == 0 {
		return
	}
	w.acquiring = true
	w.emit(Acquire{})
}

// PermitGranted hands over the permit an Acquire took, named id (not 0).
func (w *Worker) PermitGranted(now time.Time, id uint64) []effect.Effect {
	w.begin(now)
	if w.stopped {
		w.emit(Abandon{Permit: id})
		return w.out
	}
	w.acquiring = false
	switch {
	case len(w.permitQueue) > 0:
		slot := w.permitQueue[0]
		w.permitQueue = w.permitQueue[1:]
		w.gates[slot].permit = id
		w.afterPermit(slot, w.st.running(slot))
	case w.hungry && !w.draining && len(w.spare) < w.st.capacity(0):
		w.pushSpare(id)
		w.tell(&messages.WorkerRequestsWork{WorkerId: w.cfg.ID, Worker: w.cfg.Self, Capacity: 1})
	default:
		w.emit(Abandon{Permit: id})
	}
	w.ensureAcquire()
	return w.out
}

// PermitFailed reports an Acquire that failed (not because the worker
// stopped): the limiter is closed, and work waiting for a permit goes back.
func (w *Worker) PermitFailed(now time.Time, err error) []effect.Effect {
	w.begin(now)
	if w.stopped {
		return w.out
	}
	w.acquiring = false
	w.closed = true
	w.log(slog.LevelError, "Concurrency limiter closed; handing back work that waits for a permit", "error", err)
	for _, slot := range append([]int(nil), w.permitQueue...) {
		failed, next := w.st.fail(slot, w.gates[slot].workID)
		w.endGate(slot, false)
		if failed != nil {
			w.fail(failed, fmt.Errorf("%w: %w", ErrLimiterClosed, err))
		}
		// Queued work cannot get a permit either.
		for next != nil {
			failed, next = w.st.fail(slot, next.GetWorkId())
			w.fail(failed, fmt.Errorf("%w: %w", ErrLimiterClosed, err))
		}
	}
	return w.out
}

func (w *Worker) pushSpare(id uint64) {
	w.spare = append(w.spare, spare{permit: id, at: w.now})
	if !w.idleArmed {
		w.idleArmed = true
		w.arm(TimerIdle, w.cfg.PermitIdle)
	}
}

// popSpare takes the oldest spare permit.
func (w *Worker) popSpare() uint64 {
	p := w.spare[0].permit
	w.spare = w.spare[1:]
	return p
}

// onPermitIdle gives back spare permits kept for PermitIdle without work
// arriving, and stops wanting work until the master says WorkIsReady (or
// work arrives).
func (w *Worker) onPermitIdle() {
	w.idleArmed = false
	if w.stopped {
		return
	}
	gave := 0
	for len(w.spare) > 0 && w.now.Sub(w.spare[0].at) >= w.cfg.PermitIdle {
		w.emit(Abandon{Permit: w.popSpare()})
		gave++
	}
	if gave > 0 {
		w.hungry = false
		w.log(slog.LevelDebug, "No work came for spare permits; gave them back", "permits", gave)
	}
	if len(w.spare) > 0 {
		w.idleArmed = true
		w.arm(TimerIdle, w.cfg.PermitIdle-w.now.Sub(w.spare[0].at))
	}
}
