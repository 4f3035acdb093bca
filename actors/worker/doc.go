// Package worker is the Worker side of Foreman's distributed workers (seed
// 001, the classic Akka 2.5 sample): a Worker actor that registers with the
// master, pulls work, runs each job in a WorkExecutor child and reports the
// result until the master acknowledges it; and the Registry of job functions,
// the library's extension point.
//
// # Jobs
//
// A job type is a name and a [JobFunc] `(ctx, payload) -> (result, error)`
// registered in a [Registry]. [RegisterBuiltins] adds the job types of the
// foreman binary: square (the sample's n*n after a simulated 1-2 s delay),
// factorize (seed 004's CPU-bound trial division), sleep and long (a job
// that heartbeats).
//
// A long job calls [Heartbeat] or [Progress] with its ctx; registered with
// [WithHeartbeatTimeout], it is then timed out by the master only when that
// long passes without a heartbeat, instead of after the work timeout. The
// beats are gathered: at most one WorkHeartbeat per master per heartbeat
// interval ([WithHeartbeatInterval]). See docs/long-jobs.md.
//
// # Messages
//
// The worker speaks the protocol of messages/work.proto:
//
//	worker -> master  RegisterWorker       at start and every register interval (10 s)
//	master -> worker  WorkIsReady          the worker asks for work if it has a free slot
//	worker -> master  WorkerRequestsWork   capacity = free slots of its window
//	                                       and of its read-ahead (WithPrefetch)
//	master -> worker  Work                 run in a WorkExecutor child
//	master -> worker  WorkBundle           the works of one request, when more than one
//	                                       (the request says the worker takes bundles)
//	worker -> master  WorkIsDone           re-sent every 5 s until the master's Ack
//	worker -> master  WorkIsDoneBatch      results that finished together, to a master
//	                                       that has sent a WorkBundle; AckBatch
//	worker -> master  WorkFailed           the job returned an error or panicked,
//	                                       its type is unknown, or its deadline passed
//	worker -> master  DeregisterWorker     when the worker stops
//	worker -> waiter  AreYouStillInterested before a Work with a waiter starts
//
// Every message to the master carries the worker as sender, so the master's
// Ack reaches it. The worker keeps pulling while earlier results wait for
// their Acks (bounded by WithMaxUnacked), so a master that makes completions
// durable in batches is not waited on per job. Results that complete while
// the worker handles other messages leave together: a result queues a flush
// message behind those already in the mailbox, and the flush sends what has
// gathered (one WorkIsDone, or a WorkIsDoneBatch once the master has shown
// it reads one by sending a WorkBundle) and then one request for the freed
// slots.
//
// That alone gathered little: under load the executors finish one by one,
// each after the worker handled the last, and 1.04 results left per flush.
// So while the worker still runs other jobs (a queued one it just started
// counts), a result waits up to WithResultHold (default 500 µs) for
// company, and the gathered results leave as soon as they number the window
// or the last running job ends; the request for the freed slots goes at
// once, not held with them. A busy worker so sends one
// message per several jobs instead of one and an Ack each, and a lone job's
// result waits for no timer.
//
// # Read-ahead
//
// A worker whose jobs are short against the round trip of a request would
// idle between finishing its window and receiving the next works. So it
// times both (how long a slot is taken per job, how long a request takes to
// bring work) and holds up to window*roundTrip/jobTime works beyond its
// window in its local queue, at most WithPrefetch (default: the window). It
// then asks again once that depth's worth of room has freed up, so that each
// request brings many works. Jobs longer than window round trips get no
// read-ahead (the window alone keeps the executors busy then): work goes
// only to free slots, as in the sample, and never waits behind a busy
// worker while another is idle. With no-op jobs at
// window 16 this raised a 3-process cluster from about 50,000 to about
// 65,000 jobs/s (BENCHMARKS.md).
//
// # States
//
// Each executor slot is free or running one job; work that arrives beyond
// the free slots waits in a local queue (never dropped); completed results
// wait for their Ack. A panicking job panics its executor with a
// [*PanicError]; the worker, as the executor's supervisor, reports WorkFailed
// with the panic value and a trimmed stack and restarts the executor.
//
// When the worker stops (or restarts after a crash) it cancels the ctx of
// running jobs, reports running and queued work as WorkFailed with
// [ErrWorkerStopping] (the master re-queues it at once instead of waiting
// for the work timeout), sends its unacknowledged results once more and
// sends DeregisterWorker.
//
// To stop gracefully instead, send [Drain]: the worker stops asking for
// work, hands back work that has not started, lets running jobs finish,
// waits for their Acks, deregisters, answers [Drained] and stops. With
// Drain.Timeout, jobs still running when it passes are cancelled (cause
// [ErrDrainTimeout]) and handed back; a hand-back is not a failed attempt.
//
// # The seeds working together
//
// Between "the work has a slot" and "its executor runs it" a work passes two
// gates (core/gate.go):
//
//   - The caller's interest (seed 003). A Work whose waiter field is set (a
//     WorkWaiter or a waiter.Interest of the submitting caller, on any
//     cluster member) is not started until the waiter answers
//     IAmStillInterested. IAmNoLongerInterested, a dead letter (the waiter
//     is gone) or no answer within WithInterestTimeout means the caller has
//     gone: the job is not started and is reported as WorkFailed with
//     [ErrCallerGone]. The question is asked by a watcher child per job,
//     which stays while the job runs: when the caller gives up later, the
//     waiter's unasked IAmNoLongerInterested cancels the job's ctx (with
//     ErrCallerGone as the cause) and the job is reported the same way.
//   - The node's adaptive pool (seed 004). With [WithLimiter], the workers
//     of a node share one adaptive.Limiter: a worker asks the master for
//     one job per permit it holds, runs a job only with a permit, releases
//     it with the job's timing when the job function returns, and abandons
//     it (teaching the policy nothing) when the job never ran. A permit no
//     work came for within WithPermitIdle is given back, and the worker
//     asks again on the master's next WorkIsReady.
//
// A WorkFailed for ErrCallerGone is final in intent: retrying asks the
// same waiter again, which still says no. A master that cannot tell it
// from other failures retries it until its attempts are used up (each
// attempt costs one question, never a run of the job).
//
// # Finding the master
//
// The master is given as a [route.Master]:
// [route.Fixed] names a master at a fixed PID (one process), [route.Resolver]
// finds it through a function (the cluster singleton): the worker calls it
// off its own goroutine at start, on every register tick, when the master's
// PID terminates and when a WorkIsDone goes unacknowledged.
//
// # The core and the shell
//
// Every decision above is made by a pure value, core.Worker (package
// actors/worker/core): it takes the time and one input (a message, a job's
// end, a timer) and returns effects (sends, named timers, Run, Ask,
// Cancel...). The Worker actor is its shell: it turns protoactor's
// messages, its children's results and its dead letters into inputs, and
// the effects into protoactor calls, clock timers and executor runs. The
// simulator (actors/sim) drives the same core on virtual time.
//
// # Example
//
//	reg := worker.NewRegistry()
//	_ = worker.RegisterBuiltins(reg)
//	props, err := worker.Props(route.Fixed(masterPID), reg, worker.WithWindow(4))
//	if err != nil { ... }
//	for range k {
//		sys.Root.Spawn(props)
//	}
package worker
