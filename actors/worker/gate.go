package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/adaptive"
	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/messages"
)

// This file holds what happens between "the work has a slot" and "its
// executor runs it": the two gates of the seeds that work together in the
// distributed workers.
//
//	slot taken ──(WithLimiter)──> wait for a permit of the shared limiter (seed 004)
//	           ──(Work.waiter)──> ask the caller's waiter AreYouStillInterested (seed 003)
//	           ──> run in the slot's executor
//
// Every phase is owned by the worker's goroutine. The permit is acquired off
// it (one Acquire in flight per worker) and handed over by message; the
// waiter is asked by a watcher child, which stays while the job runs so that
// a waiter's later, unasked IAmNoLongerInterested cancels the job's ctx.

// gatePhase is where the work of one slot is. The zero value means the slot
// is free, or its work has not entered the gates yet (a zeroed gate); the
// named phases start at iota + 1 so that an idle gate is never mistaken for
// one of them.
type gatePhase int

const (
	// phaseWaitPermit: the work waits for a permit of the limiter.
	phaseWaitPermit gatePhase = iota + 1
	// phaseAsking: the watcher asked the waiter; no answer yet.
	phaseAsking
	// phaseRunning: the executor runs the work.
	phaseRunning
)

// gate is the shell's record of one slot's passage through the gates.
type gate struct {
	phase    gatePhase
	workID   string
	seq      uint64                  // unique per passage, so stale messages are ignored
	permit   *adaptive.Permit        // held for this work; nil without a limiter
	watcher  *actor.PID              // interest watcher child; nil without a waiter
	askTimer clock.Timer             // fires askTimeout while phaseAsking
	cancel   context.CancelCauseFunc // cancels the running job's ctx
	began    int64                   // when the work took the slot (Unix ns)
}

// Messages of the gates (all local, to the worker itself).
type (
	// interestAnswer is the watcher's first answer (or the ask timer).
	interestAnswer struct {
		slot   int
		seq    uint64
		workID string
		err    error // nil: still interested
	}
	// callerLeft is the watcher's report of an unasked IAmNoLongerInterested
	// while the work runs.
	callerLeft struct {
		slot   int
		seq    uint64
		workID string
		reason messages.NoLongerInterestedReason
	}
	// permitGranted hands over a permit acquired off the worker's goroutine.
	permitGranted struct {
		box    *permitBox
		permit *adaptive.Permit
	}
	// permitFailed reports an Acquire that returned an error.
	permitFailed struct {
		box *permitBox
		err error
	}
	// permitIdleTick checks the spare permits for idle ones.
	permitIdleTick struct{}
)

// permitBox hands permits from the acquiring goroutine to the worker so that
// none is lost when the worker stops or restarts: a permit put after close
// is abandoned by its goroutine, and close returns the permits that were put
// but not yet taken, for the worker to abandon.
type permitBox struct {
	mu      sync.Mutex                    // guards pending and closed
	pending map[*adaptive.Permit]struct{} // guarded by mu
	closed  bool                          // guarded by mu
}

func newPermitBox() *permitBox {
	return &permitBox{pending: make(map[*adaptive.Permit]struct{})}
}

// put records p as on its way to the worker; false once the box is closed.
func (b *permitBox) put(p *adaptive.Permit) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.pending[p] = struct{}{}
	return true
}

// take claims p for the worker; false when close claimed it first.
func (b *permitBox) take(p *adaptive.Permit) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.pending[p]
	delete(b.pending, p)
	return ok
}

// close refuses further puts and returns the permits not yet taken.
func (b *permitBox) close() []*adaptive.Permit {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	out := make([]*adaptive.Permit, 0, len(b.pending))
	for p := range b.pending {
		out = append(out, p)
	}
	clear(b.pending)
	return out
}

// spare is a permit held for work asked from the master, since at.
type spare struct {
	permit *adaptive.Permit
	at     time.Time
}

// begin starts the work w given slot: through the limiter, then the waiter,
// then the executor.
func (w *workerActor) begin(slot int, m *messages.Work) {
	// An actor system shut down under a worker that was not stopped (a
	// node that exits) starts nothing more: its results would reach no
	// master, and the work read ahead would keep executors running after
	// the system is gone. The master hands the work out again.
	if w.stopped || w.sys.IsStopped() {
		return
	}
	g := &w.gates[slot]
	w.gateSeq++
	*g = gate{workID: m.GetWorkId(), seq: w.gateSeq, began: w.cfg.clock.Now().UnixNano()}
	if w.debugOn() {
		w.log.Debug("Got work", "work_id", m.GetWorkId(), "job_type", m.GetJobType(), "attempt", m.GetAttempt())
	}
	if w.cfg.limiter != nil {
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
func (w *workerActor) afterPermit(slot int, m *messages.Work) {
	g := &w.gates[slot]
	wp := m.GetWaiter()
	if wp == nil {
		w.run(slot, m)
		return
	}
	g.phase = phaseAsking
	// A fresh PID: a protoactor PID caches the process it resolved to, and
	// the Work may have come from another actor system in this process.
	waiterPID := actor.NewPID(wp.GetAddress(), wp.GetId())
	g.watcher = w.actx.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &interestWatch{slot: slot, seq: g.seq, workID: m.GetWorkId(), waiter: waiterPID,
			clock: w.cfg.clock, retry: w.cfg.interestRetry, gone: w.cfg.waiterGone, book: w.goneBook}
	}))
	sys, self, id, seq, d := w.sys, w.self, m.GetWorkId(), g.seq, w.cfg.interestTimeout
	g.askTimer = w.cfg.clock.AfterFunc(d, func() {
		sys.Root.Send(self, &interestAnswer{slot: slot, seq: seq, workID: id,
			err: fmt.Errorf("%w: waiter %s did not answer AreYouStillInterested within %v", ErrCallerGone, waiterPID, d)})
	})
}

// run hands the work to the slot's executor with a ctx the worker can cancel.
func (w *workerActor) run(slot int, m *messages.Work) {
	g := &w.gates[slot]
	g.phase = phaseRunning
	ctx, cancel := context.WithCancelCause(w.ctx)
	g.cancel = cancel
	w.sys.Root.Send(w.execs[slot], &doWork{work: m, ctx: ctx})
}

// onInterest handles the waiter's first answer (or the ask timer).
func (w *workerActor) onInterest(m *interestAnswer) {
	g := w.gateOf(m.slot, m.seq, m.workID)
	if g == nil || g.phase != phaseAsking || w.stopped {
		return
	}
	if g.askTimer != nil {
		g.askTimer.Stop()
		g.askTimer = nil
	}
	if m.err == nil {
		w.run(m.slot, w.st.running(m.slot))
		return
	}
	// The caller has gone: the work is not started.
	failed, next := w.st.fail(m.slot, m.workID)
	w.endGate(m.slot, false)
	if failed != nil {
		w.fail(failed, m.err)
	}
	w.startNext(m.slot, next)
	w.maybeRequest()
}

// onCallerLeft cancels running work whose caller gave up.
func (w *workerActor) onCallerLeft(m *callerLeft) {
	g := w.gateOf(m.slot, m.seq, m.workID)
	if g == nil || g.phase != phaseRunning || g.cancel == nil {
		return
	}
	w.log.Info("Caller gave up; cancelling the running job", "work_id", m.workID, "reason", m.reason.String())
	g.cancel(fmt.Errorf("%w: the waiter said IAmNoLongerInterested (%s) while the job ran", ErrCallerGone, m.reason))
}

// gateOf returns the gate of slot if it is still the passage seq of workID.
func (w *workerActor) gateOf(slot int, seq uint64, workID string) *gate {
	if slot < 0 || slot >= len(w.gates) || w.gates[slot].seq != seq || w.gates[slot].workID != workID {
		return nil
	}
	return &w.gates[slot]
}

// endGate clears slot's gate when its work ends: the permit is released
// with the job's timing when the job function ran (ran), else abandoned;
// the watcher stops.
func (w *workerActor) endGate(slot int, ran bool) {
	g := &w.gates[slot]
	if g.began != 0 {
		w.ra.jobDone(w.cfg.clock.Now().UnixNano() - g.began)
	}
	if g.askTimer != nil {
		g.askTimer.Stop()
	}
	if g.cancel != nil {
		g.cancel(nil)
	}
	if g.watcher != nil {
		w.actx.Stop(g.watcher)
	}
	if g.phase == phaseWaitPermit {
		w.permitQueue = removeInt(w.permitQueue, slot)
	}
	if g.permit != nil {
		if ran {
			g.permit.Release()
		} else {
			g.permit.Abandon()
		}
	}
	*g = gate{}
	w.ensureAcquire()
}

func removeInt(s []int, v int) []int {
	for i, x := range s {
		if x == v {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}

// wantPermits is how many permits the worker should acquire now: one per
// slot waiting for one, plus one per free slot without a spare permit while
// it wants work.
func (w *workerActor) wantPermits() int {
	n := len(w.permitQueue)
	if w.hungry && !w.draining {
		n += max(0, w.st.capacity(0)-len(w.spare))
	}
	return n
}

// ensureAcquire starts an Acquire off the worker's goroutine when permits
// are wanted and none is being acquired.
func (w *workerActor) ensureAcquire() {
	lim := w.cfg.limiter
	if lim == nil || w.acquiring || w.stopped || w.limiterClosed || w.wantPermits() == 0 {
		return
	}
	w.acquiring = true
	ctx, sys, self, box := w.ctx, w.sys, w.self, w.box
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		p, err := lim.Acquire(ctx)
		if err != nil {
			sys.Root.Send(self, &permitFailed{box: box, err: err})
			return
		}
		if !box.put(p) {
			p.Abandon() // the worker stopped meanwhile
			return
		}
		sys.Root.Send(self, &permitGranted{box: box, permit: p})
	}()
}

// onPermit takes a permit from the acquiring goroutine.
func (w *workerActor) onPermit(m *permitGranted) {
	if !m.box.take(m.permit) {
		return // the box was closed and the permit abandoned
	}
	if m.box != w.box || w.stopped {
		m.permit.Abandon()
		return
	}
	w.acquiring = false
	switch {
	case len(w.permitQueue) > 0:
		slot := w.permitQueue[0]
		w.permitQueue = w.permitQueue[1:]
		w.gates[slot].permit = m.permit
		w.afterPermit(slot, w.st.running(slot))
	case w.hungry && !w.draining && len(w.spare) < w.st.capacity(0):
		w.pushSpare(m.permit)
		w.tell(&messages.WorkerRequestsWork{WorkerId: w.id, Worker: w.wire, Capacity: 1})
	default:
		m.permit.Abandon()
	}
	w.ensureAcquire()
}

// onPermitFailed handles an Acquire that failed: the worker stopping (its
// ctx) or the limiter closed.
func (w *workerActor) onPermitFailed(m *permitFailed) {
	if m.box != w.box || w.stopped {
		return
	}
	w.acquiring = false
	if w.ctx.Err() != nil {
		return
	}
	w.limiterClosed = true
	w.log.Error("Concurrency limiter closed; handing back work that waits for a permit", "error", m.err)
	for _, slot := range append([]int(nil), w.permitQueue...) {
		failed, next := w.st.fail(slot, w.gates[slot].workID)
		w.endGate(slot, false)
		if failed != nil {
			w.fail(failed, fmt.Errorf("%w: %w", ErrLimiterClosed, m.err))
		}
		// Queued work cannot get a permit either.
		for next != nil {
			failed, next = w.st.fail(slot, next.GetWorkId())
			w.fail(failed, fmt.Errorf("%w: %w", ErrLimiterClosed, m.err))
		}
	}
}

// pushSpare keeps a permit for work asked from the master and arms the idle
// check.
func (w *workerActor) pushSpare(p *adaptive.Permit) {
	w.spare = append(w.spare, spare{permit: p, at: w.cfg.clock.Now()})
	if w.idleTimer == nil {
		w.armIdle(w.cfg.permitIdle)
	}
}

func (w *workerActor) armIdle(d time.Duration) {
	sys, self := w.sys, w.self
	w.idleTimer = w.cfg.clock.AfterFunc(d, func() { sys.Root.Send(self, &permitIdleTick{}) })
}

// popSpare takes the oldest spare permit.
func (w *workerActor) popSpare() *adaptive.Permit {
	p := w.spare[0].permit
	w.spare[0] = spare{}
	w.spare = w.spare[1:]
	return p
}

// onPermitIdle gives back spare permits kept for the permit idle time
// without work arriving, and stops wanting work until the master says
// WorkIsReady (or work arrives).
func (w *workerActor) onPermitIdle() {
	w.idleTimer = nil
	if w.stopped {
		return
	}
	now := w.cfg.clock.Now()
	gave := 0
	for len(w.spare) > 0 && now.Sub(w.spare[0].at) >= w.cfg.permitIdle {
		w.popSpare().Abandon()
		gave++
	}
	if gave > 0 {
		w.hungry = false
		w.log.Debug("No work came for spare permits; gave them back", "permits", gave)
	}
	if len(w.spare) > 0 {
		w.armIdle(w.cfg.permitIdle - now.Sub(w.spare[0].at))
	}
}

// dropPermits abandons every permit the worker holds and closes the box
// (the worker stops).
func (w *workerActor) dropPermits() {
	if w.idleTimer != nil {
		w.idleTimer.Stop()
		w.idleTimer = nil
	}
	for len(w.spare) > 0 {
		w.popSpare().Abandon()
	}
	if w.box != nil {
		for _, p := range w.box.close() {
			p.Abandon()
		}
	}
}

// interestWatch is a child of the worker per job with a waiter: it asks the
// waiter AreYouStillInterested (as itself, so the waiter remembers it as
// the worker it told yes), reports the first answer, then stays until the
// worker stops it and reports an unasked IAmNoLongerInterested: the caller
// gave up while the job runs.
//
// Until the first answer it asks again every retry (the worker's ask timer
// bounds the whole wait). A dead letter comes two ways, told apart by its
// Target (see deadLetterGone): the waiter's node, reached, says it has no
// such actor (the caller's Interest stopped after its linger): gone at
// once, so work whose caller left long ago costs one round trip, not the
// interest timeout; or this node's endpoint could not reach that node (a
// connection being re-made): asked again, gone only once gone says the
// node is. Once the job runs, the same tick checks gone, so a job whose
// caller's node left is cancelled. gone is believed only once it has held
// for goneConfirm while the worker's watchers asked that node again every
// tick without an answer: asking makes protoactor re-make a connection a
// blip cut, and an answer from the node clears the suspicion. The
// suspicion is the worker's, per node (book): once a node is confirmed
// gone, the next jobs whose waiters are on it are skipped at once instead
// of each waiting goneConfirm again.
type interestWatch struct {
	book     *goneBook
	slot     int
	seq      uint64
	workID   string
	waiter   *actor.PID
	clock    clock.Clock
	retry    time.Duration
	gone     func(addr string) bool // nil: never
	answered bool
	left     bool // callerLeft sent
	tick     clock.Timer
}

// goneConfirm is how long WithWaiterGone must go on reporting a waiter's
// node gone, while the worker's watchers ask that node again every tick and
// get no answer, before its callers count as gone (goneBook). cluster/node
// reports a frontend gone once its connection stayed lost for 2 s, but
// protoactor re-makes a lost connection only when something is sent over
// it, and its endpoint writer waits 2 s after a failed attempt: without
// asking again and waiting a little longer than that, a connection cut for
// a second would cancel a running job of a live caller (nothing else is
// sent to its node) and could skip a waiting one.
const goneConfirm = 3 * time.Second

// goneBook is one worker's suspicion of waiter nodes that WithWaiterGone
// reports gone, by address, shared by its interest watchers (each on its
// own goroutine, hence the mutex). Keeping it per node rather than per job
// means that a frontend killed with many waited jobs queued costs one
// goneConfirm per worker, not one per job: the first job's watcher
// confirms the node, and the later ones find it confirmed.
type goneBook struct {
	mu    sync.Mutex
	nodes map[string]suspicion
}

// suspicion is how long a node has been reported gone while watchers asked
// it without an answer: since the first such question, asked the last.
type suspicion struct{ since, asked time.Time }

func newGoneBook() *goneBook { return &goneBook{nodes: make(map[string]suspicion)} }

// asking records that a watcher, at now, asks again a waiter whose node at
// addr is reported gone, and reports whether that node is confirmed gone:
// suspected for goneConfirm, asked every retry without an answer. A gap of
// more than two retries without a question (no watcher of that node was
// left) starts the suspicion afresh: a connection is re-made only when
// something is sent over it, so the time nothing was asked proves nothing.
func (b *goneBook) asking(addr string, now time.Time, retry time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.nodes[addr]
	if !ok {
		// A new suspicion: forget the stale ones, so the book holds only
		// nodes still being asked.
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

// clear forgets the suspicion of the node at addr: it answered, or it is no
// longer reported gone.
func (b *goneBook) clear(addr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.nodes, addr)
}

// watchTick is the interestWatch's retry tick.
type watchTick struct{}

// Receive handles the interest protocol.
func (a *interestWatch) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		// Asked even when the node is confirmed gone: the question makes
		// protoactor re-make the connection if the node is back, which
		// ends the report that it has gone.
		a.ask(c)
		if a.nodeGone() && a.book.asking(a.waiter.GetAddress(), a.clock.Now(), a.retry) {
			a.callerGone(c, messages.NoLongerInterestedReason_NO_LONGER_INTERESTED_REASON_CLOSED,
				fmt.Errorf("%w: the node of waiter %s left the cluster", ErrCallerGone, a.waiter))
		}
	case *watchTick:
		a.tick = nil
		if a.left {
			return
		}
		switch gone := a.nodeGone(); {
		case gone && a.book.asking(a.waiter.GetAddress(), a.clock.Now(), a.retry):
			a.callerGone(c, messages.NoLongerInterestedReason_NO_LONGER_INTERESTED_REASON_CLOSED,
				fmt.Errorf("%w: the node of waiter %s left the cluster", ErrCallerGone, a.waiter))
		case gone:
			// Not believed yet: ask, which makes protoactor re-make a lost
			// connection (an answer clears the suspicion).
			a.ask(c)
		case !a.answered:
			a.book.clear(a.waiter.GetAddress())
			a.ask(c)
		default:
			a.book.clear(a.waiter.GetAddress())
			a.arm(c)
		}
	case *messages.IAmStillInterested:
		a.book.clear(a.waiter.GetAddress())
		a.answer(c, nil)
	case *messages.IAmNoLongerInterested:
		a.book.clear(a.waiter.GetAddress())
		a.callerGone(c, m.GetReason(), fmt.Errorf("%w: waiter %s answered IAmNoLongerInterested (%s)", ErrCallerGone, a.waiter, m.GetReason()))
	case *actor.DeadLetterResponse:
		switch {
		case a.answered && deadLetterGone(m, a.waiter, c.Self()):
			// A question asked again while the job runs (a suspected node)
			// found no waiter: its node is there, and the waiter may have
			// been released (the caller let the job go on), so the job runs
			// on; a caller who gave up has said so with IAmNoLongerInterested.
			a.book.clear(a.waiter.GetAddress())
		case deadLetterGone(m, a.waiter, c.Self()):
			a.book.clear(a.waiter.GetAddress()) // its node answered
			a.callerGone(c, messages.NoLongerInterestedReason_NO_LONGER_INTERESTED_REASON_CLOSED,
				fmt.Errorf("%w: waiter %s is gone (dead letter from its node)", ErrCallerGone, a.waiter))
		case a.nodeGone() && !a.answered:
			a.callerGone(c, messages.NoLongerInterestedReason_NO_LONGER_INTERESTED_REASON_CLOSED,
				fmt.Errorf("%w: waiter %s is unreachable and its node has gone", ErrCallerGone, a.waiter))
		}
		// Otherwise this node could not reach the waiter's: the next tick
		// asks again.
	case *actor.Stopping:
		if a.tick != nil {
			a.tick.Stop()
		}
	}
}

// deadLetterGone reports whether the dead letter m, answering a question
// self sent to waiter, says the waiter is gone, as opposed to unreachable.
// protoactor answers a request that found no actor with a
// DeadLetterResponse without Target, from the dead-letter process of the
// node that looked the actor up: the waiter's own node when it lives on
// another, reached over the network (or this node when there is no remote
// to reach it by). The endpoint writer of this node answers a request it
// could not deliver, because the connection to the waiter's node is not
// made, with a DeadLetterResponse naming the Target: that says nothing
// about the waiter.
func deadLetterGone(m *actor.DeadLetterResponse, waiter, self *actor.PID) bool {
	return waiter.GetAddress() == self.GetAddress() || m.GetTarget() == nil
}

func (a *interestWatch) nodeGone() bool { return a.gone != nil && a.gone(a.waiter.GetAddress()) }

func (a *interestWatch) ask(c actor.Context) {
	c.Request(a.waiter, &messages.AreYouStillInterested{WorkId: a.workID})
	a.arm(c)
}

func (a *interestWatch) arm(c actor.Context) {
	if a.tick != nil || a.retry <= 0 || a.clock == nil {
		return
	}
	root, self := c.ActorSystem().Root, c.Self()
	a.tick = a.clock.AfterFunc(a.retry, func() { root.Send(self, &watchTick{}) })
}

// callerGone reports that the caller left: before the first answer as that
// answer, after it (the job runs) as callerLeft, once.
func (a *interestWatch) callerGone(c actor.Context, reason messages.NoLongerInterestedReason, err error) {
	if !a.answered {
		a.answer(c, err)
		return
	}
	if a.left {
		return
	}
	a.left = true
	c.Send(c.Parent(), &callerLeft{slot: a.slot, seq: a.seq, workID: a.workID, reason: reason})
}

func (a *interestWatch) answer(c actor.Context, err error) {
	if a.answered {
		return
	}
	a.answered = true
	c.Send(c.Parent(), &interestAnswer{slot: a.slot, seq: a.seq, workID: a.workID, err: err})
}
