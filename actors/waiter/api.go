package waiter

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// API runs a work function for callers that may give up: the seed's TheApi.
// Do queues the work and waits; a WorkScheduler runs at most the concurrency
// limit of jobs at once, and a job whose caller has gone before its turn
// comes is never started.
//
// An API is safe for concurrent use. Create it with New and stop it with
// Stop.
type API[W, R any] struct {
	sys       *actor.ActorSystem
	cfg       config
	fn        func(context.Context, W) (R, error)
	scheduler *actor.PID
	stats     *statsBox
	stopped   chan struct{} // closed when the scheduler actor has stopped

	mu      sync.Mutex    // guards the fields below; Do holds it while it enqueues
	closed  bool          // set by Stop; Do refuses work after it
	live    int           // waiters not yet stopped
	idle    chan struct{} // closed once closed && live == 0
	nextID  uint64        // job ids, for logs
	aborted bool          // the scheduler was told to drop and cancel
}

// New starts an API on sys: one WorkScheduler actor that runs fn, at most
// WithConcurrency jobs at once (default DefaultConcurrency). fn receives a
// context that is cancelled when the job's caller gives up (or Stop gives up
// waiting); work that honours it stops early, work that ignores it runs to
// the end and its result is dropped.
//
// New returns an error wrapping ErrInvalidOption for a bad option.
func New[W, R any](sys *actor.ActorSystem, fn func(context.Context, W) (R, error), opts ...Option) (*API[W, R], error) {
	if sys == nil {
		return nil, fmt.Errorf("%w: nil actor system: pass the *actor.ActorSystem to run on", ErrInvalidOption)
	}
	if fn == nil {
		return nil, fmt.Errorf("%w: nil work function: pass the func(ctx, work) (result, error) to run", ErrInvalidOption)
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a := &API[W, R]{
		sys:     sys,
		cfg:     cfg,
		fn:      fn,
		stats:   &statsBox{},
		stopped: make(chan struct{}),
		idle:    make(chan struct{}),
	}
	hooks := a.hooks()
	sched := &workScheduler[W, R]{
		api:     hooks,
		fn:      fn,
		q:       NewQueue[*job[W]](cfg.concurrency, cfg.maxBacklog, cfg.order),
		running: make(map[string]*job[W]),
		box:     a.stats,
		stopped: a.stopped,
		logger:  cfg.logger.With("component", "work_scheduler"),
	}
	// A worker that panics outside the work function (a bug) is stopped, not
	// restarted: the scheduler sees Terminated and frees the slot.
	stopChild := actor.NewOneForOneStrategy(0, 0, func(any) actor.Directive { return actor.StopDirective })
	a.scheduler = sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return sched },
		actor.WithSupervisor(stopChild)))
	sched.logger = sched.logger.With("pid", a.scheduler.String())
	cfg.logger.Debug("waiter api started", "pid", a.scheduler.String(), "concurrency", cfg.concurrency,
		"max_backlog", cfg.maxBacklog, "order", cfg.order.String())
	return a, nil
}

func (a *API[W, R]) hooks() apiHooks {
	return apiHooks{cfg: &a.cfg, waiterEnded: a.waiterEnded}
}

func (a *API[W, R]) waiterEnded() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.live--
	if a.closed && a.live == 0 {
		close(a.idle)
	}
}

// Do runs fn(work) under the concurrency limit and returns its result, or
// returns early when ctx is done:
//
//   - ctx's deadline passed: an error wrapping ErrTimeout and
//     context.DeadlineExceeded;
//   - ctx cancelled: an error wrapping ErrCancelled and context.Canceled;
//   - fn returned an error: that error; fn panicked: an error wrapping
//     ErrWorkPanicked;
//   - the backlog was full: ErrBacklogFull; after Stop: ErrClosed.
//
// Do returns as soon as ctx is done, whatever the work is doing. A job whose
// caller has gone is not started when its turn comes; a running one sees its
// context cancelled.
func (a *API[W, R]) Do(ctx context.Context, work W) (R, error) {
	var zero R
	if err := ctx.Err(); err != nil {
		return zero, giveUpError(reasonOf(err), 0, err)
	}
	start := a.cfg.clock.Now()
	deadline, _ := ctx.Deadline()
	promise := make(chan reply[R], 1)

	// Holding the lock while enqueueing orders this job before Stop's stop
	// message in the scheduler's mailbox: Stop never overtakes a job it did
	// not refuse.
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return zero, ErrClosed
	}
	a.live++
	a.nextID++
	id := a.nextID
	w := &workWaiter[R]{api: a.hooks(), fsm: newWaiterFSM(), promise: promise, deadline: deadline}
	pid := a.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return w }))
	a.sys.Root.Send(a.scheduler, &job[W]{id: id, work: work, waiter: pid})
	a.mu.Unlock()

	select {
	case r := <-promise:
		return r.value, r.err
	case <-ctx.Done():
		select {
		case r := <-promise: // the result won the race; hand it over
			return r.value, r.err
		default:
		}
		err := ctx.Err()
		a.sys.Root.Send(pid, &callerGone{reason: reasonOf(err)})
		return zero, giveUpError(reasonOf(err), a.cfg.clock.Since(start), err)
	}
}

func reasonOf(ctxErr error) giveUpReason {
	if errors.Is(ctxErr, context.DeadlineExceeded) {
		return reasonDeadline
	}
	return reasonCancelled
}

// Stats returns a snapshot of the scheduler's counters. It does not block.
func (a *API[W, R]) Stats() Stats { return a.stats.get() }

// Stop refuses new work (Do returns ErrClosed), lets queued and running jobs
// finish (jobs whose callers have gone are skipped as usual), and returns
// once the scheduler and every WorkWaiter have stopped.
//
// If ctx is done first, Stop drops the queued jobs (their callers get
// ErrClosed), cancels the context of running work and returns an error
// wrapping ctx.Err(); work that ignores its context may still be running
// then. Stop may be called again, e.g. with a longer deadline, and is safe to
// call concurrently and more than once.
func (a *API[W, R]) Stop(ctx context.Context) error {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		if a.live == 0 {
			close(a.idle)
		}
		a.sys.Root.Send(a.scheduler, &stopGracefully{})
	}
	a.mu.Unlock()
	for _, ch := range []chan struct{}{a.stopped, a.idle} {
		select {
		case <-ch:
		case <-ctx.Done():
			a.mu.Lock()
			first := !a.aborted
			a.aborted = true
			a.mu.Unlock()
			if first {
				a.sys.Root.Send(a.scheduler, &abortAll{})
			}
			return fmt.Errorf("waiter: stop: gave up waiting; queued jobs dropped and running work cancelled: %w", ctx.Err())
		}
	}
	return nil
}
