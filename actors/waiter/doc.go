// Package waiter runs work for callers that may give up, and does not start
// work whose caller has gone: a Go port of "Cancelling work in flight" (seed
// 003, the passive method).
//
// [New] starts an [API] around a work function func(ctx, W) (R, error) and a
// concurrency limit; [API.Do] queues one piece of work and waits for its
// result until the caller's ctx is done.
//
//	square, err := waiter.New(sys, func(ctx context.Context, n int) (int, error) {
//		return n * n, nil
//	}, waiter.WithConcurrency(2))
//	ctx, cancel := context.WithTimeout(ctx, time.Second)
//	defer cancel()
//	v, err := square.Do(ctx, 7) // ErrTimeout (and context.DeadlineExceeded) after 1 s
//
// # Actors
//
// Per Do call a WorkWaiter actor holds the caller's promise and deadline.
// One WorkScheduler per API keeps jobs in its own [Queue] (never in the
// mailbox) and runs at most the concurrency limit of Worker actors. Before
// running a job, its Worker asks the job's WorkWaiter AreYouStillInterested:
//
//	Do ──spawn──> WorkWaiter ──(job)──> WorkScheduler ──spawn──> Worker
//	                  <──── AreYouStillInterested ─────────────────┘
//	                  ───── IAmStillInterested ──────────────────> runs fn(ctx, work)
//	                  <──── WorkComplete ──────────────────────────┘
//
// When the caller's ctx is done first, Do returns at once and tells the
// waiter, which becomes not interested: a Worker that asks later is told
// IAmNoLongerInterested and skips the job, and a Worker already running is
// told the same, unasked, and cancels the work's ctx. Work that ignores its
// ctx runs to the end and its result is dropped.
//
// # Messages
//
// The interest protocol (messages.AreYouStillInterested, IAmStillInterested,
// IAmNoLongerInterested) is protobuf in messages/waiter.proto, so a worker on
// another cluster member can ask a waiter on the caller's member. For work
// that does not go through an API, [NewInterest] is a waiter without a
// result (for example for an HTTP request's context) and
// [AskStillInterested] is the worker's question.
//
// # States
//
// A WorkWaiter is interested (initial), then not interested once its caller
// gave up, then done (it stops) once the result came, the job was dropped,
// or it has answered a Worker while not interested. A Worker asks, then
// runs, then reports to the scheduler, which frees the slot and starts the
// next queued job (FIFO by default, or LIFO with [WithOrder]).
//
// # Statistics
//
// [API.Stats] returns counters: jobs started, skipped (caller gone before
// start), cancelled while running, completed, failed, rejected (backlog
// full, see [WithMaxBacklog]), and the time spent on work nobody waited for.
//
// # Stopping
//
// [API.Stop] refuses new work, lets queued and running jobs finish (or be
// skipped), and waits for every actor it started; if its ctx ends first it
// drops the backlog and cancels running work.
package waiter
