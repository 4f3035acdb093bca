// Package core is the interest protocol (seed 003's WorkWaiter, across the
// cluster) as pure values: [Waiter], the state machine of one caller's
// interest in one job, and [Interest], the caller's side that workers ask
// AreYouStillInterested before they start a job and that pushes
// IAmNoLongerInterested to the workers it told yes once the caller leaves.
// Neither starts a goroutine, reads a clock or imports protoactor: the
// shells in actors/waiter (WorkWaiter, waiter.Interest) carry out their
// effects with protoactor, and the simulator (actors/sim) on virtual time.
//
// # Driving an Interest
//
// One Interest stands for one caller (a Call, POST /work?wait=); its
// address goes in the Work's waiter field. A runner steps it with:
//
//	in := core.NewInterest(core.InterestConfig{})
//	effs := in.Step(now, core.Asked{From: worker, WorkID: id})  // a worker asks
//	effs = in.Step(now, core.CallerGone{Reason: core.ReasonCancelled}) // ctx ended
//	effs = in.Step(now, core.Released{})   // Detach: let the job go on
//	effs = in.Step(now, core.Outcome{Result: r}) // the master's WorkResult
//	effs = in.Step(now, effect.Fired{Name: core.TimerLinger})
//	effs = in.Step(now, core.Closed{})     // the caller got what it wanted
//
// and carries out, in order: effect.Reply (the answer to the worker that
// asked, To its address), effect.Send (IAmNoLongerInterested pushed,
// unasked, to a worker told yes: it cancels the running job), effect.Timer
// (the linger), Deliver (hand the outcome to the caller) and Stop (the
// Interest is gone: later questions get a dead letter, which a worker
// takes as "not interested").
//
// What the worker hears, in every case: yes while the caller waits (or
// after Released, until the release linger ends); no, with the reason,
// once the caller has left, for Linger; then a dead letter. A worker told
// yes hears no, unasked, when the caller leaves later; a worker that asked
// after the caller's ctx ended but before the shell learnt of it hears no
// (Asked.CallerLeft: the shell reads the ctx when the question comes).
package core
