package core

import "github.com/foreman-actors/foreman/messages"

// The worker core's own effects, beside those of actors/effect (Send, Timer,
// StopTimer, Log, which it also returns). Slot is an executor slot
// (0..Window-1); Seq numbers a work's passage through a slot, so that the
// runner can tell a stale report from a current one.
type (
	// Run starts Work in Slot's executor with a ctx of its own (child of the
	// worker's lifetime) and reports the job's end with Worker.RunDone, or a
	// panic with Worker.RunPanicked. A runner whose node is shutting down
	// may drop it: the master hands the work out again. It is returned as a
	// *Run that the core reuses for the slot's next Run, which comes only
	// after RunDone or RunPanicked for this one: copy it to keep it longer.
	Run struct {
		Slot int
		Seq  uint64
		Work *messages.Work
	}
	// Cancel cancels the ctx of the job that Run started with Slot and Seq,
	// with Cause (its caller left); a Cancel for an older Seq is dropped.
	Cancel struct {
		Slot  int
		Seq   uint64
		Cause error
	}
	// Ask sends AreYouStillInterested{WorkID} to Waiter from the watcher of
	// passage (Slot, Seq): an address of its own, so that the waiter's
	// answer, and a later unasked IAmNoLongerInterested, come back for this
	// passage only. The first Ask of a passage creates its watcher; the
	// runner reports what reaches it with Worker.Interest until Unwatch.
	Ask struct {
		Slot   int
		Seq    uint64
		WorkID string
		Waiter *messages.PID
	}
	// Unwatch ends the watcher of passage (Slot, Seq).
	Unwatch struct {
		Slot int
		Seq  uint64
	}
	// Resolve looks Shard's master up through its route (off the core's
	// goroutine, bounded by the resolve timeout) and reports the answer
	// with Worker.Resolved.
	Resolve struct{ Shard int }
	// WatchMaster asks for Worker.MasterTerminated once PID stops.
	WatchMaster struct{ PID *messages.PID }
	// UnwatchMaster cancels a WatchMaster.
	UnwatchMaster struct{ PID *messages.PID }
	// Acquire takes one permit of the shared limiter (off the core's
	// goroutine; the core asks for one at a time) and reports it with
	// Worker.PermitGranted, naming it by an id of the runner's, or the
	// error with Worker.PermitFailed.
	Acquire struct{}
	// Release gives Permit back with the job's timing: its job ran.
	Release struct{ Permit uint64 }
	// Abandon gives Permit back unused: it teaches the limiter nothing.
	Abandon struct{ Permit uint64 }
	// Yield asks to be stepped with Fired(Name) once the inputs already
	// waiting for the core have been handled (a message the worker sends
	// itself): results that finish together then leave together.
	Yield struct{ Name string }
	// Drained says a Drain is complete: the runner answers every Drain
	// sender with Drained and stops the worker (stepping it with Stop). A
	// core stepped again before Stop may say it again (the actor shell
	// stops at the first).
	Drained struct{}
	// CancelJobs cancels the ctx of every running job with Cause (the
	// drain timeout passed: ErrDrainTimeout); the core has handed them back
	// already, and their later RunDone is stale.
	CancelJobs struct{ Cause error }
	// Halt says the worker has stopped: the runner cancels every running
	// job's ctx with ErrWorkerStopping, drops the core's timers, gives back
	// the permits still on their way to it, and starts nothing more.
	Halt struct{}
)

// IsEffect marks Run as an effect.
func (*Run) IsEffect() {}

// IsEffect marks Cancel as an effect.
func (Cancel) IsEffect() {}

// IsEffect marks Ask as an effect.
func (Ask) IsEffect() {}

// IsEffect marks Unwatch as an effect.
func (Unwatch) IsEffect() {}

// IsEffect marks Resolve as an effect.
func (Resolve) IsEffect() {}

// IsEffect marks WatchMaster as an effect.
func (WatchMaster) IsEffect() {}

// IsEffect marks UnwatchMaster as an effect.
func (UnwatchMaster) IsEffect() {}

// IsEffect marks Acquire as an effect.
func (Acquire) IsEffect() {}

// IsEffect marks Release as an effect.
func (Release) IsEffect() {}

// IsEffect marks Abandon as an effect.
func (Abandon) IsEffect() {}

// IsEffect marks Yield as an effect.
func (Yield) IsEffect() {}

// IsEffect marks Drained as an effect.
func (Drained) IsEffect() {}

// IsEffect marks CancelJobs as an effect.
func (CancelJobs) IsEffect() {}

// IsEffect marks Halt as an effect.
func (Halt) IsEffect() {}

// AnswerKind is what reached a passage's watcher.
type AnswerKind int

const (
	// StillInterested means the waiter answered IAmStillInterested.
	StillInterested AnswerKind = iota + 1
	// NoLongerInterested means the waiter answered, or told unasked,
	// IAmNoLongerInterested (with Reason).
	NoLongerInterested
	// DeadLetter means the question came back undelivered; Gone says the
	// waiter's own node answered that it has no such actor, as opposed to
	// this node failing to reach that node (which says nothing about the
	// waiter).
	DeadLetter
)

// Answer is what the watcher of passage (Slot, Seq) of WorkID received.
type Answer struct {
	Slot   int
	Seq    uint64
	WorkID string
	Kind   AnswerKind
	Reason messages.NoLongerInterestedReason
	Gone   bool
}
