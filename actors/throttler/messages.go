package throttler

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// The throttler actor's messages. They are local Go values (a throttler and
// its users live in one process); the messages it throttles may be anything,
// protobuf included, and reach the target unchanged.

// SetTarget sets the throttler's target (seed 002's SetTarget(Option[ActorRef])).
// A nil Target pauses delivery: messages keep being queued and go to the
// next target that is set.
type SetTarget struct {
	Target *actor.PID
}

// SetRate changes the throttler's rate at once (see FSM.SetRate for what
// happens mid-period). An invalid rate is refused with a *Rejected reply to
// the sender and the old rate is kept.
type SetRate struct {
	Rate Rate
}

// Queue wraps a message to throttle. Any message that is not a throttler
// control message is throttled as it is; Queue is needed only to throttle a
// value of one of this package's message types.
type Queue struct {
	Msg any
}

// GetStats asks the throttler for its counters; the reply is a *Stats.
type GetStats struct{}

// Rejected is the reply to the sender of a message the throttler refused:
// a message that met a full queue (Err wraps ErrQueueFull) or a SetRate with
// an invalid rate (Err wraps ErrInvalidRate).
type Rejected struct {
	// Message is the refused message as it was sent.
	Message any
	// Err says why.
	Err error
}

// tick is the timer firing. gen identifies the timer that sent it, so a tick
// of a timer stopped or replaced in the meantime is ignored; due is the time
// it was scheduled for (the base of the next period in ModeTimer).
type tick struct {
	gen uint64
	due time.Time
}

// envelope is a queued message with what is needed to deliver it as if the
// original sender had sent it to the target.
type envelope struct {
	msg    any
	sender *actor.PID
	header map[string]string
}
