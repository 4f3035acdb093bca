package waiter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/waiter/core"
	"github.com/foreman-actors/foreman/messages"
)

// This file holds the actor shells: WorkWaiter (one per Do call),
// WorkScheduler (one per API) and Worker (one per job, a child of the
// scheduler). The rules live in state.go; the shells receive, call the pure
// types and perform their effects.

// Local messages. They never leave the process: the result type R is a Go
// value chosen by the user. What may cross nodes (the interest protocol) is
// protobuf in messages/waiter.proto.
type (
	// job is the seed's QueueWork: sent to the scheduler on a waiter's behalf.
	job[W any] struct {
		id     uint64
		work   W
		waiter *actor.PID
	}
	// workComplete is the seed's WorkComplete: worker -> waiter.
	workComplete[R any] struct {
		value R
		err   error
	}
	// jobDropped tells a waiter that its job will never run.
	jobDropped struct{ err error }
	// callerGone tells a waiter that Do returned because its ctx was done.
	callerGone struct{ reason giveUpReason }
	// deadlinePassed is the waiter's timer: the caller's deadline passed.
	deadlinePassed struct{}
	// askTimedOut is the worker's timer: the waiter did not answer in time.
	askTimedOut struct{}
	// runDone carries the work function's return from the run goroutine to
	// its Worker.
	runDone[R any] struct {
		value R
		err   error
	}
	// workStarted tells the scheduler that a worker invoked the work function.
	workStarted struct{}
	// workerFinished tells the scheduler how a worker's job ended; the
	// scheduler then frees the slot and stops the worker.
	workerFinished struct {
		worker  *actor.PID
		outcome outcome
		ran     time.Duration
	}
	// abortRun tells a worker to cancel its run (Stop's context expired).
	abortRun struct{}
	// stopGracefully tells the scheduler to stop once idle.
	stopGracefully struct{}
	// abortAll tells the scheduler to drop the backlog and cancel running work.
	abortAll struct{}
)

// reply is what a waiter hands to the Do call waiting on its promise.
type reply[R any] struct {
	value R
	err   error
}

// workWaiter is the seed's WorkWaiter: it holds the promise of one Do call,
// answers the Worker's AreYouStillInterested, and gives up at the caller's
// deadline (receive timeout) or when Do tells it the caller has gone.
type workWaiter[R any] struct {
	api      apiHooks
	fsm      waiterFSM
	promise  chan<- reply[R] // buffered 1; the FSM completes it at most once
	deadline time.Time       // zero: no deadline
	worker   *actor.PID      // the worker told IAmStillInterested
	timer    clock.Timer     // fires deadlinePassed; nil without a deadline
}

// apiHooks is what the actors need from the API that owns them.
type apiHooks struct {
	cfg         *config
	waiterEnded func() // called once per waiter, when it has stopped
}

func (w *workWaiter[R]) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		w.armDeadline(c)
	case *deadlinePassed:
		w.apply(c, w.fsm.GiveUp(reasonDeadline))
	case *messages.AreYouStillInterested:
		// The deadline timer's message may still be queued behind this
		// question (many waiters time out together): read the clock too.
		if !w.deadline.IsZero() && !w.api.cfg.clock.Now().Before(w.deadline) {
			w.apply(c, w.fsm.GiveUp(reasonDeadline))
		}
		w.worker = c.Sender()
		w.apply(c, w.fsm.Ask())
	case *workComplete[R]:
		eff := w.fsm.Complete()
		if eff.Deliver {
			w.promise <- reply[R](*m)
		}
		w.apply(c, eff)
	case *callerGone:
		w.apply(c, w.fsm.GiveUp(m.reason))
	case *jobDropped:
		eff := w.fsm.Drop()
		if eff.Fail {
			w.promise <- reply[R]{err: m.err}
			eff.Fail = false
		}
		w.apply(c, eff)
	case *actor.Stopped:
		if w.timer != nil {
			w.timer.Stop()
		}
		w.api.waiterEnded()
	}
}

// armDeadline schedules a deadlinePassed message for the caller's deadline,
// read against the API's clock. It plays the part of the seed's receive
// timeout; protoactor's own ReceiveTimeout is not used because its timer
// callback writes actor state from the timer goroutine (a data race that
// go test -race reports), and because it restarts after every message.
func (w *workWaiter[R]) armDeadline(c actor.Context) {
	if w.deadline.IsZero() {
		return
	}
	left := w.deadline.Sub(w.api.cfg.clock.Now())
	if left <= 0 {
		w.apply(c, w.fsm.GiveUp(reasonDeadline))
		return
	}
	root, self := c.ActorSystem().Root, c.Self()
	w.timer = w.api.cfg.clock.AfterFunc(left, func() { root.Send(self, &deadlinePassed{}) })
}

func (w *workWaiter[R]) apply(c actor.Context, eff waiterEffects) {
	switch eff.Reply {
	case core.AnswerStill:
		c.Respond(&messages.IAmStillInterested{})
	case core.AnswerNoLonger:
		c.Respond(&messages.IAmNoLongerInterested{Reason: w.fsm.Reason().Proto()})
	}
	if eff.Fail {
		w.promise <- reply[R]{err: giveUpError(w.fsm.Reason(), 0, nil)}
	}
	if eff.CancelWorker && w.worker != nil {
		c.Send(w.worker, &messages.IAmNoLongerInterested{Reason: w.fsm.Reason().Proto()})
	}
	if eff.Stop {
		c.Stop(c.Self())
	}
}

// giveUpError is the error a caller gets when it stopped waiting. waited and
// ctxErr are optional (zero, nil): Do supplies them, the waiter's own
// deadline does not know them.
func giveUpError(r giveUpReason, waited time.Duration, ctxErr error) error {
	sentinel, base := ErrTimeout, context.DeadlineExceeded
	switch r {
	case reasonCancelled:
		sentinel, base = ErrCancelled, context.Canceled
	case reasonClosed:
		return ErrClosed
	}
	if ctxErr == nil {
		ctxErr = base
	}
	if waited > 0 {
		return fmt.Errorf("%w (waited %s): %w", sentinel, waited.Round(time.Millisecond), ctxErr)
	}
	return fmt.Errorf("%w: %w", sentinel, ctxErr)
}

// statsBox publishes the scheduler's statistics to API.Stats.
type statsBox struct {
	mu sync.Mutex // guards s
	s  Stats      // written by the scheduler actor, read by API.Stats
}

func (b *statsBox) set(s Stats) {
	b.mu.Lock()
	b.s = s
	b.mu.Unlock()
}

func (b *statsBox) get() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.s
}

// workScheduler is the seed's WorkScheduler: it keeps jobs in its own Queue
// (never in the mailbox) and runs at most the concurrency limit of Workers.
type workScheduler[W, R any] struct {
	api      apiHooks
	fn       func(context.Context, W) (R, error)
	q        *Queue[*job[W]]
	running  map[string]*job[W] // worker PID id -> its job, while it holds a slot
	stats    Stats
	box      *statsBox
	stopping bool
	stopped  chan struct{} // closed when the actor has stopped
	logger   *slog.Logger
}

func (s *workScheduler[W, R]) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *job[W]:
		s.stats.Submitted++
		if s.stopping { // cannot happen through the API (see Do); kept for safety
			s.stats.Rejected++
			c.Send(m.waiter, &jobDropped{err: ErrClosed})
			break
		}
		switch s.q.Submit(m) {
		case AdmitStart:
			s.spawn(c, m)
		case AdmitRejected:
			s.stats.Rejected++
			c.Send(m.waiter, &jobDropped{err: fmt.Errorf("%w: %d running, %d queued (WithMaxBacklog(%d))",
				ErrBacklogFull, s.q.Running(), s.q.Backlog(), s.api.cfg.maxBacklog)})
		}
	case *workStarted:
		s.stats.Started++
	case *workerFinished:
		if _, ok := s.running[m.worker.Id]; ok {
			delete(s.running, m.worker.Id)
			s.stats.record(m.outcome, m.ran)
			s.logger.Debug("job finished", "outcome", m.outcome.String(), "ran", m.ran)
			c.Stop(m.worker)
			s.next(c)
		}
	case *actor.Terminated:
		// A worker stopped without reporting: only a bug in the worker itself
		// (the work function runs under recover) can get here.
		if j, ok := s.running[m.Who.Id]; ok {
			delete(s.running, m.Who.Id)
			s.stats.record(outcomeFailed, 0)
			s.logger.Error("worker stopped without reporting; job failed", "job_id", j.id)
			c.Send(j.waiter, &jobDropped{err: fmt.Errorf("waiter: worker for job %d crashed", j.id)})
			s.next(c)
		}
	case *stopGracefully:
		s.stopping = true
	case *abortAll:
		s.stopping = true
		for _, j := range s.q.Drain() {
			s.stats.record(outcomeDropped, 0)
			c.Send(j.waiter, &jobDropped{err: fmt.Errorf("%w: queued job dropped by Stop", ErrClosed)})
		}
		for _, child := range c.Children() {
			c.Send(child, &abortRun{})
		}
	case *actor.Stopped:
		s.publish()
		close(s.stopped)
		return
	}
	s.publish()
	if s.stopping && s.q.Idle() {
		c.Stop(c.Self())
	}
}

// next frees the finished job's slot and starts the next queued job, if any.
func (s *workScheduler[W, R]) next(c actor.Context) {
	if j, ok := s.q.Done(); ok {
		s.spawn(c, j)
	}
}

func (s *workScheduler[W, R]) spawn(c actor.Context, j *job[W]) {
	pid := c.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &worker[W, R]{api: s.api, job: j, fn: s.fn, logger: s.logger}
	}))
	s.running[pid.Id] = j
}

func (s *workScheduler[W, R]) publish() {
	st := s.stats
	st.Running, st.Backlog = s.q.Running(), s.q.Backlog()
	s.box.set(st)
}

// worker is the seed's Worker: it asks its job's waiter whether the caller
// still waits, runs the work function if so, and reports to both. Unlike the
// seed's, it runs the function in a goroutine with a context it cancels
// when the waiter says the caller gave up mid-run.
type worker[W, R any] struct {
	api      apiHooks
	job      *job[W]
	fn       func(context.Context, W) (R, error)
	logger   *slog.Logger
	running  bool
	finished bool
	aborted  bool // Stop's context expired
	gaveUp   bool // the caller gave up while the work ran
	cancel   context.CancelFunc
	started  time.Time
	askTimer clock.Timer // fires askTimedOut while waiting for the answer
}

func (w *worker[W, R]) stopAskTimer() {
	if w.askTimer != nil {
		w.askTimer.Stop()
	}
}

func (w *worker[W, R]) Receive(c actor.Context) {
	if _, ok := c.Message().(*actor.Stopped); ok {
		w.stopAskTimer()
		return
	}
	if w.finished {
		return
	}
	switch m := c.Message().(type) {
	case *actor.Started:
		if !w.api.cfg.interestCheck {
			w.run(c)
			return
		}
		root, self := c.ActorSystem().Root, c.Self()
		w.askTimer = w.api.cfg.clock.AfterFunc(w.api.cfg.askTimeout, func() { root.Send(self, &askTimedOut{}) })
		c.Request(w.job.waiter, &messages.AreYouStillInterested{})
	case *messages.IAmStillInterested:
		if w.running {
			return
		}
		w.stopAskTimer()
		if w.aborted {
			c.Send(w.job.waiter, &jobDropped{err: fmt.Errorf("%w: job dropped by Stop", ErrClosed)})
			w.finish(c, outcomeDropped, 0)
			return
		}
		w.run(c)
	case *messages.IAmNoLongerInterested:
		if w.running {
			w.gaveUp = true
			w.cancel()
			return
		}
		w.finish(c, outcomeSkipped, 0)
	case *askTimedOut, *actor.DeadLetterResponse:
		// The seed's "recover { ForgetIt }": no answer means no interest.
		if !w.running {
			// A waiter that is alive but slow would otherwise wait for this
			// job forever: tell it the job is off.
			c.Send(w.job.waiter, &jobDropped{err: fmt.Errorf("%w within %s: job %d skipped",
				ErrNotInterested, w.api.cfg.askTimeout, w.job.id)})
			w.finish(c, outcomeSkipped, 0)
		}
	case *runDone[R]:
		ran := w.api.cfg.clock.Since(w.started)
		w.cancel()
		o := outcomeCompleted
		switch {
		case w.gaveUp:
			o = outcomeCancelled
		case w.aborted:
			o = outcomeCancelled
		case m.err != nil:
			o = outcomeFailed
		}
		if w.aborted && !w.gaveUp {
			c.Send(w.job.waiter, &jobDropped{err: fmt.Errorf("%w: running job cancelled by Stop", ErrClosed)})
		} else {
			c.Send(w.job.waiter, &workComplete[R]{value: m.value, err: m.err})
		}
		w.finish(c, o, ran)
	case *abortRun:
		w.aborted = true
		if w.running {
			w.cancel()
		}
	}
}

// run starts the work function in its own goroutine; its return comes back
// to this actor as a runDone message.
func (w *worker[W, R]) run(c actor.Context) {
	w.running = true
	w.started = w.api.cfg.clock.Now()
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	c.Send(c.Parent(), &workStarted{})
	self, root, fn, work, logger, id := c.Self(), c.ActorSystem().Root, w.fn, w.job.work, w.logger, w.job.id
	go func() {
		v, err := call(ctx, fn, work)
		if errors.Is(err, ErrWorkPanicked) {
			logger.Warn("work function panicked", "job_id", id, "error", err)
		}
		root.Send(self, &runDone[R]{value: v, err: err})
	}()
}

func (w *worker[W, R]) finish(c actor.Context, o outcome, ran time.Duration) {
	w.finished = true
	w.stopAskTimer()
	c.Send(c.Parent(), &workerFinished{worker: c.Self(), outcome: o, ran: ran})
}

// maxPanicStack bounds the stack trace carried by ErrWorkPanicked errors.
const maxPanicStack = 4 << 10

// call runs fn, turning a panic into an error that wraps ErrWorkPanicked and
// carries the panic value and a trimmed stack.
func call[W, R any](ctx context.Context, fn func(context.Context, W) (R, error), work W) (v R, err error) {
	defer func() {
		if p := recover(); p != nil {
			stack := debug.Stack()
			if len(stack) > maxPanicStack {
				stack = stack[:maxPanicStack]
			}
			err = fmt.Errorf("%w: %v\n%s", ErrWorkPanicked, p, stack)
		}
	}()
	return fn(ctx, work)
}
