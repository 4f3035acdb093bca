package worker

import "github.com/asynkron/protoactor-go/actor"

// execThroughput is how many messages an executor's mailbox run handles
// before it yields, protoactor's default.
const execThroughput = 300

// execDispatcher runs the executors' mailboxes on goroutines that live as
// long as the worker, one per slot, instead of a new goroutine each time an
// executor's mailbox gets a message (protoactor's default dispatcher).
//
// Why: a new goroutine starts with a small stack, and a job's call chain
// (the mailbox, the executor, the registry, the job function) grows it by
// copying, once or twice per job. In a worker node under load, stack growth
// was a fifth of the process's CPU (profile in BENCHMARKS.md); a long-lived
// goroutine keeps the stack it grew.
//
// A run that finds every pool goroutine busy (one is busy only while an
// executor's mailbox runs on it, so this is rare) gets a goroutine of its
// own, as with the default dispatcher, rather than wait.
type execDispatcher struct {
	work chan func()
	done chan struct{}
}

var _ actor.Dispatcher = (*execDispatcher)(nil)

// newExecDispatcher starts n pool goroutines; close ends them.
func newExecDispatcher(n int) *execDispatcher {
	d := &execDispatcher{work: make(chan func()), done: make(chan struct{})}
	for range n {
		go d.loop()
	}
	return d
}

func (d *execDispatcher) loop() {
	for {
		select {
		case fn := <-d.work:
			fn()
		case <-d.done:
			return
		}
	}
}

// Schedule hands fn to an idle pool goroutine, or else to a new one.
func (d *execDispatcher) Schedule(fn func()) {
	select {
	case d.work <- fn:
	default:
		go fn()
	}
}

// Throughput implements actor.Dispatcher.
func (d *execDispatcher) Throughput() int { return execThroughput }

// close ends the pool goroutines once they finish what they run. Runs
// scheduled later still run: on a goroutine of their own once the pool's
// have ended.
func (d *execDispatcher) close() { close(d.done) }
