package worker

import (
	"sync/atomic"
	"time"
)

const (
	// execThroughput is how many messages an executor's mailbox run
	// handles before it yields, protoactor's default.
	execThroughput = 300
	// execIdle is how long a pool goroutine waits for the next run before
	// it ends: long enough to be reused under load, short enough that a
	// worker nobody stopped (its actor system shut down under it) leaves
	// no goroutine behind for long.
	execIdle = 100 * time.Millisecond
)

// execDispatcher runs the executors' mailboxes on goroutines that stay for
// the next run, at most one per slot, instead of a new goroutine for each
// run (protoactor's default dispatcher). It is a protoactor
// actor.Dispatcher by its methods (Schedule, Throughput); the shell's
// executors use it (worker.go).
//
// Why: a new goroutine starts with a small stack, and a job's call chain
// (the mailbox, the executor, the registry, the job function) grows it by
// copying, once or twice per job. In a worker node under load, stack growth
// was a fifth of the process's CPU (profile in BENCHMARKS.md); a goroutine
// that stays keeps the stack it grew.
//
// A run goes to a goroutine waiting in the pool, or else to a new one,
// never waits; after its run the new goroutine joins the pool if the pool
// has room. Pool goroutines end after execIdle without a run, or at close.
type execDispatcher struct {
	work    chan func()
	done    chan struct{}
	members atomic.Int32 // goroutines in the pool
	size    int32
	idle    time.Duration
}

// newExecDispatcher returns a dispatcher whose pool holds up to size
// goroutines; it starts none.
func newExecDispatcher(size int, idle time.Duration) *execDispatcher {
	return &execDispatcher{work: make(chan func()), done: make(chan struct{}), size: int32(size), idle: idle}
}

// Schedule hands fn to a waiting pool goroutine, or else to a new one.
func (d *execDispatcher) Schedule(fn func()) {
	select {
	case d.work <- fn:
	default:
		go d.run(fn)
	}
}

// run runs fn, then serves the pool while it has room.
func (d *execDispatcher) run(fn func()) {
	fn()
	if d.members.Add(1) > d.size {
		d.members.Add(-1)
		return
	}
	defer d.members.Add(-1)
	idle := time.NewTimer(d.idle)
	defer idle.Stop()
	for {
		select {
		case fn := <-d.work:
			fn()
			idle.Reset(d.idle)
		case <-idle.C:
			return
		case <-d.done:
			return
		}
	}
}

// Throughput implements actor.Dispatcher.
func (d *execDispatcher) Throughput() int { return execThroughput }

// close ends the pool goroutines once they finish what they run. Runs
// scheduled later still run, on goroutines of their own.
func (d *execDispatcher) close() { close(d.done) }
