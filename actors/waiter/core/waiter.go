package core

import (
	"fmt"

	"github.com/foreman-actors/foreman/messages"
)

// Phase is the state of a Waiter.
type Phase int

const (
	// PhaseInterested is the initial state: the caller waits for the
	// result. Left for PhaseNotInterested when the caller gives up, for
	// PhaseDone when the result arrives or the job is dropped.
	PhaseInterested Phase = iota + 1
	// PhaseNotInterested means the caller gave up (deadline, cancel). The waiter
	// stays to answer the worker's question (seed: "the hangabout of the
	// WorkWaiter") and leaves for PhaseDone once it has.
	PhaseNotInterested
	// PhaseDone is terminal: the actor stops.
	PhaseDone
)

// String returns the phase's name.
func (p Phase) String() string {
	switch p {
	case PhaseInterested:
		return "interested"
	case PhaseNotInterested:
		return "not_interested"
	case PhaseDone:
		return "done"
	default:
		return fmt.Sprintf("waiterPhase(%d)", int(p))
	}
}

// Answer is the waiter's reply to AreYouStillInterested.
type Answer int

const (
	// AnswerNone means no reply.
	AnswerNone Answer = iota
	// AnswerStill means IAmStillInterested.
	AnswerStill
	// AnswerNoLonger means IAmNoLongerInterested.
	AnswerNoLonger
)

// Effects are what the shell must do after a Waiter step (a value, so the
// WorkWaiter's path allocates nothing).
type Effects struct {
	Reply        Answer // reply to the sender of AreYouStillInterested
	Deliver      bool   // complete the promise with the work's result
	Fail         bool   // complete the promise with the give-up or drop error
	CancelWorker bool   // tell the worker that was told "still interested" to cancel
	Stop         bool   // stop the waiter
}

// Reason says why a waiter stopped being interested.
type Reason int

const (
	// ReasonDeadline means the caller's deadline passed.
	ReasonDeadline Reason = iota + 1
	// ReasonCancelled means the caller cancelled.
	ReasonCancelled
	// ReasonClosed means the API is stopping.
	ReasonClosed
)

// String returns the reason's name.
func (r Reason) String() string {
	switch r {
	case ReasonDeadline:
		return "deadline"
	case ReasonCancelled:
		return "cancelled"
	case ReasonClosed:
		return "closed"
	default:
		return fmt.Sprintf("giveUpReason(%d)", int(r))
	}
}

// Proto returns the reason as IAmNoLongerInterested carries it.
func (r Reason) Proto() messages.NoLongerInterestedReason {
	switch r {
	case ReasonDeadline:
		return messages.NoLongerInterestedReason_NO_LONGER_INTERESTED_REASON_DEADLINE
	case ReasonCancelled:
		return messages.NoLongerInterestedReason_NO_LONGER_INTERESTED_REASON_CANCELLED
	case ReasonClosed:
		return messages.NoLongerInterestedReason_NO_LONGER_INTERESTED_REASON_CLOSED
	default:
		return messages.NoLongerInterestedReason_NO_LONGER_INTERESTED_REASON_UNSPECIFIED
	}
}

// Waiter is the WorkWaiter's logic (seed 003 WorkWaiter: interested /
// notInterested), with two additions: a worker told "still interested" is
// told to cancel when the caller gives up later, and a result that arrives
// after the caller gave up stops the waiter (the seed's waiter lingered).
// The zero value is not usable; make one with NewWaiter.
type Waiter struct {
	phase    Phase
	reason   Reason
	promised bool // a worker was told IAmStillInterested and has not reported
}

// NewWaiter returns an interested waiter.
func NewWaiter() Waiter { return Waiter{phase: PhaseInterested} }

// Phase returns the waiter's state.
func (w *Waiter) Phase() Phase { return w.phase }

// Reason returns why the caller gave up (0 while it has not).
func (w *Waiter) Reason() Reason { return w.reason }

// Ask handles AreYouStillInterested.
func (w *Waiter) Ask() Effects {
	switch w.phase {
	case PhaseInterested:
		w.promised = true
		return Effects{Reply: AnswerStill}
	case PhaseNotInterested:
		w.phase = PhaseDone
		return Effects{Reply: AnswerNoLonger, Stop: true}
	default:
		return Effects{}
	}
}

// GiveUp handles the caller giving up (deadline or cancel).
func (w *Waiter) GiveUp(r Reason) Effects {
	if w.phase != PhaseInterested {
		return Effects{}
	}
	w.phase = PhaseNotInterested
	w.reason = r
	return Effects{Fail: true, CancelWorker: w.promised}
}

// Complete handles WorkComplete: the result is delivered if the caller
// still waits and dropped otherwise; either way the waiter is finished.
func (w *Waiter) Complete() Effects {
	switch w.phase {
	case PhaseInterested:
		w.phase, w.promised = PhaseDone, false
		return Effects{Deliver: true, Stop: true}
	case PhaseNotInterested:
		w.phase, w.promised = PhaseDone, false
		return Effects{Stop: true}
	default:
		return Effects{}
	}
}

// Drop handles the scheduler dropping the job (backlog full, shutting
// down).
func (w *Waiter) Drop() Effects {
	switch w.phase {
	case PhaseInterested:
		w.phase = PhaseDone
		return Effects{Fail: true, Stop: true}
	case PhaseNotInterested:
		w.phase = PhaseDone
		return Effects{Stop: true}
	default:
		return Effects{}
	}
}
