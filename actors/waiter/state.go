package waiter

import (
	"fmt"
	"time"

	"github.com/foreman-actors/foreman/actors/waiter/core"
)

// This file holds the pure logic of the package: the WorkScheduler's queue,
// the WorkWaiter's state machine and the statistics. Nothing here knows about
// actors or reads a clock; the actor shells in actor.go drive it.

// Order says which queued job a free worker slot takes next.
type Order int

const (
	// FIFO serves the oldest queued job first, as the seed's scheduler does.
	FIFO Order = iota + 1
	// LIFO serves the newest queued job first: under overload the freshest
	// callers are the most likely to still wait (Netflix's LIFO limiter).
	LIFO
)

// String returns "fifo", "lifo" or "Order(n)".
func (o Order) String() string {
	switch o {
	case FIFO:
		return "fifo"
	case LIFO:
		return "lifo"
	default:
		return fmt.Sprintf("Order(%d)", int(o))
	}
}

// Admission is the Queue's answer to Submit.
type Admission int

const (
	// AdmitStart means a slot was free: start the job now (it counts as running).
	AdmitStart Admission = iota + 1
	// AdmitQueued means every slot is busy: the job waits in the backlog.
	AdmitQueued
	// AdmitRejected means the backlog is full: the job was not taken.
	AdmitRejected
)

// String returns "start", "queued", "rejected" or "Admission(n)".
func (a Admission) String() string {
	switch a {
	case AdmitStart:
		return "start"
	case AdmitQueued:
		return "queued"
	case AdmitRejected:
		return "rejected"
	default:
		return fmt.Sprintf("Admission(%d)", int(a))
	}
}

// Queue is the WorkScheduler's own queue (seed 003: "Don't use the mailbox
// to do it - use a queue"): at most limit jobs run at once, the rest wait in
// a backlog of at most maxBacklog jobs (0 = unbounded), served in FIFO or
// LIFO order. It is a plain value owned by one goroutine; it is not safe for
// concurrent use.
type Queue[J any] struct {
	limit      int
	maxBacklog int
	order      Order
	running    int
	items      []J // the backlog: items[head:] in arrival order
	head       int
}

// NewQueue returns an empty queue. It panics if limit < 1, maxBacklog < 0 or
// order is neither FIFO nor LIFO: these are wiring mistakes that the API's
// options reject with an error first.
func NewQueue[J any](limit, maxBacklog int, order Order) *Queue[J] {
	if limit < 1 {
		panic(fmt.Sprintf("waiter: queue limit %d, want >= 1", limit))
	}
	if maxBacklog < 0 {
		panic(fmt.Sprintf("waiter: queue backlog bound %d, want >= 0 (0 = unbounded)", maxBacklog))
	}
	if order != FIFO && order != LIFO {
		panic(fmt.Sprintf("waiter: queue order %v, want FIFO or LIFO", order))
	}
	return &Queue[J]{limit: limit, maxBacklog: maxBacklog, order: order}
}

// Submit offers a job. With a free slot the job runs at once (AdmitStart,
// and the caller starts it); otherwise it joins the backlog (AdmitQueued),
// unless the backlog is full (AdmitRejected, the job is not kept).
func (q *Queue[J]) Submit(j J) Admission {
	if q.running < q.limit {
		q.running++
		return AdmitStart
	}
	if q.maxBacklog > 0 && q.Backlog() >= q.maxBacklog {
		return AdmitRejected
	}
	q.items = append(q.items, j)
	return AdmitQueued
}

// Done records that a running job finished and frees its slot. If the
// backlog holds a job, Done takes it (by the queue's order), counts it as
// running and returns it with ok true: the caller starts it. Done panics if
// nothing was running, which would be a bookkeeping bug in the caller.
func (q *Queue[J]) Done() (next J, ok bool) {
	if q.running == 0 {
		panic("waiter: Queue.Done called with no job running")
	}
	q.running--
	if q.Backlog() == 0 {
		return next, false
	}
	q.running++
	return q.pop(), true
}

func (q *Queue[J]) pop() J {
	var zero J
	var j J
	if q.order == LIFO {
		last := len(q.items) - 1
		j = q.items[last]
		q.items[last] = zero
		q.items = q.items[:last]
	} else {
		j = q.items[q.head]
		q.items[q.head] = zero
		q.head++
	}
	switch {
	case q.head == len(q.items):
		q.items, q.head = q.items[:0], 0
	case q.head > 32 && q.head*2 > len(q.items):
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	return j
}

// Drain removes every job from the backlog and returns them in the order
// they would have been served. Running jobs are not affected.
func (q *Queue[J]) Drain() []J {
	out := make([]J, 0, q.Backlog())
	for q.Backlog() > 0 {
		out = append(out, q.pop())
	}
	return out
}

// Running returns how many jobs hold a slot.
func (q *Queue[J]) Running() int { return q.running }

// Backlog returns how many jobs wait for a slot.
func (q *Queue[J]) Backlog() int { return len(q.items) - q.head }

// Limit returns the number of slots.
func (q *Queue[J]) Limit() int { return q.limit }

// Idle reports whether nothing runs and nothing waits.
func (q *Queue[J]) Idle() bool { return q.running == 0 && q.Backlog() == 0 }

// The WorkWaiter's state machine is core.Waiter (actors/waiter/core),
// which the simulator drives too; these names keep the shells' code short.
type (
	waiterFSM     = core.Waiter
	waiterEffects = core.Effects
	giveUpReason  = core.Reason
)

const (
	reasonDeadline  = core.ReasonDeadline
	reasonCancelled = core.ReasonCancelled
	reasonClosed    = core.ReasonClosed
)

func newWaiterFSM() waiterFSM { return core.NewWaiter() }

// outcome is how one job ended, as its Worker saw it.
type outcome int

const (
	outcomeSkipped   outcome = iota + 1 // never started: the caller was gone
	outcomeCompleted                    // ran and returned a nil error
	outcomeFailed                       // ran and returned an error or panicked
	outcomeCancelled                    // ran, and the caller gave up while it ran
	outcomeDropped                      // never started: dropped at shutdown
)

func (o outcome) String() string {
	switch o {
	case outcomeSkipped:
		return "skipped"
	case outcomeCompleted:
		return "completed"
	case outcomeFailed:
		return "failed"
	case outcomeCancelled:
		return "cancelled"
	case outcomeDropped:
		return "dropped"
	default:
		return fmt.Sprintf("outcome(%d)", int(o))
	}
}

// Stats is a snapshot of the scheduler's counters (the statistics the seed
// wished for). Every job that reached the scheduler ends as exactly one of
// Rejected, Skipped, Dropped, Completed, Failed or CancelledWhileRunning, or is
// still Running or in the Backlog; Started counts the work function's
// invocations: Started == Completed + Failed + CancelledWhileRunning +
// (started jobs still running).
type Stats struct {
	// Submitted counts jobs that reached the scheduler.
	Submitted uint64
	// Rejected counts jobs refused because the backlog was full.
	Rejected uint64
	// Started counts invocations of the work function.
	Started uint64
	// Skipped counts jobs never started because the caller had given up
	// before a worker asked (or the waiter could not be reached).
	Skipped uint64
	// Dropped counts queued jobs thrown away by a Stop whose context expired.
	Dropped uint64
	// Completed counts runs that returned a nil error to a waiting caller.
	Completed uint64
	// Failed counts runs that returned an error or panicked, caller waiting.
	Failed uint64
	// CancelledWhileRunning counts runs whose caller gave up during the run
	// (their context was cancelled; the result, if any, was dropped).
	CancelledWhileRunning uint64
	// BusyTime is the total time spent in the work function.
	BusyTime time.Duration
	// WastedTime is the part of BusyTime spent on runs whose caller gave up
	// during the run: work nobody waited for.
	WastedTime time.Duration
	// Running is the number of jobs holding a slot (a worker asking or running).
	Running int
	// Backlog is the number of jobs waiting for a slot.
	Backlog int
}

// record adds one finished job.
func (s *Stats) record(o outcome, ran time.Duration) {
	switch o {
	case outcomeSkipped:
		s.Skipped++
		return
	case outcomeDropped:
		s.Dropped++
		return
	case outcomeCompleted:
		s.Completed++
	case outcomeFailed:
		s.Failed++
	case outcomeCancelled:
		s.CancelledWhileRunning++
		s.WastedTime += ran
	}
	s.BusyTime += ran
}

// Finished returns the number of jobs that have reached a final outcome.
func (s Stats) Finished() uint64 {
	return s.Rejected + s.Skipped + s.Dropped + s.Completed + s.Failed + s.CancelledWhileRunning
}
