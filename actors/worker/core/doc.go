// Package core is the worker's protocol as a pure value: register with
// each shard's master, ask for work with a window and a read-ahead, take
// Work and WorkBundle, pass each work through its gates (a permit of a
// shared limiter; the caller's interest), run it, report it done or failed
// until the master's Ack, hand work back on Drain and Stop, and cancel a
// running job whose caller left. It has no goroutines, reads no clock,
// imports no protoactor and draws no random numbers; the actor shell
// (actors/worker) and the simulator (actors/sim) drive the same code.
//
// # Driving a Worker
//
// Make one with New(Config) and step it with Start. Every method takes the
// current time and one input, and returns the effects to carry out in
// order (the slice is reused by the next call: consume it first). The
// runner reports back as follows:
//
//	from a master:  WorkIsReady(from)  Work(m)  Bundle(m.Works)  Ack(ids...)
//	                (an Ack and an AckBatch both go to Ack)
//	Resolve{k}      Resolved(k, pid, err) once the route answered
//	WatchMaster     MasterTerminated(pid) once that master stops
//	*Run{slot,seq}  RunDone(slot, workID, result, err) when the job returns,
//	                or RunPanicked(slot, err) when it panicked
//	Ask{slot,seq}   Interest(Answer{...}) for each answer, unasked
//	                IAmNoLongerInterested or dead letter that reaches the
//	                passage's watcher, until Unwatch{slot,seq}
//	Acquire         PermitGranted(id) or PermitFailed(err)
//	effect.Timer    Fired(name) at its time, unless stopped or re-armed
//	Yield{name}     Fired(name) after the inputs already waiting
//	(Drain request) Drain; the Drained effect then asks the runner to
//	                answer the drainers and Stop the worker
//	(stop)          Stop; the Halt effect cancels the running jobs
//
// effect.Send goes to a master with the worker as sender (the master's Ack
// comes back to it). Cancel cancels a running job's ctx with its Cause; the
// job then ends with RunDone carrying an error that wraps that cause.
// Release and Abandon give back a permit named by the runner's id.
//
// Timers are named: TimerRegister, TimerHold, TimerIdle, and per work
// "resend:<work id>", "ask:<slot>:<seq>" and "watch:<slot>:<seq>"; the
// core ignores one that fires for a passage that has ended. A Fired name
// it does not know is ignored.
//
// Config.NodeGone is the one question the core asks its runner while it
// steps (is the node at this address gone for good?); a simulator answers
// from its membership model.
package core
