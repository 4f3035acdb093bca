package core

import (
	"fmt"
	"time"
)

// Result classifies one attempt's answer (a submission, a batch, a
// question to the master), as the retry policy needs it.
type Result uint8

const (
	// Acked means the master acknowledged (the work is durable) or answered.
	Acked Result = iota + 1
	// Rejected means the master refused for good (a permanent WorkRejected).
	Rejected
	// Unavailable means REJECT_CODE_UNAVAILABLE, the master is recovering:
	// retried with backoff.
	Unavailable
	// TimedOut means no answer within the ask timeout: retried with backoff.
	TimedOut
	// NoMaster means the route found no master, or the answer was a dead
	// letter: retried with backoff.
	NoMaster
	// MasterGone means the master's node left the cluster while the ask was in
	// flight: retried at once, once (its successor is being found now).
	MasterGone
	// Failed means anything not worth retrying (an unexpected reply, invalid
	// work).
	Failed
)

// String returns the result's name.
func (r Result) String() string {
	switch r {
	case Acked:
		return "acked"
	case Rejected:
		return "rejected"
	case Unavailable:
		return "unavailable"
	case TimedOut:
		return "timed_out"
	case NoMaster:
		return "no_master"
	case MasterGone:
		return "master_gone"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("Result(%d)", uint8(r))
}

// Retryable reports whether an attempt that ended so is tried again.
func (r Result) Retryable() bool {
	switch r {
	case Unavailable, TimedOut, NoMaster, MasterGone:
		return true
	}
	return false
}

// Source is the random source of retry jitter: a *math/rand/v2.Rand
// seeded by the caller (the simulator's one seed) satisfies it.
type Source interface {
	Int64N(n int64) int64
}

// Backoff is the pause between attempts: it starts at Min and doubles up
// to Max. With Jitter set, each pause is drawn uniformly from [d/2, d]
// (d the pause without jitter); nil keeps the pauses exact, as the
// frontend's Client has them.
type Backoff struct {
	Min, Max time.Duration
	Jitter   Source
}

// Action is what to do after an attempt.
type Action uint8

const (
	// Stop means the attempt's answer is final (acked, rejected for good, not
	// retryable) or the caller has left: return.
	Stop Action = iota + 1
	// Again means send the next attempt at once.
	Again
	// Wait means send the next attempt after Decision.Wait, unless the caller
	// leaves first.
	Wait
)

// String returns the action's name.
func (a Action) String() string {
	switch a {
	case Stop:
		return "stop"
	case Again:
		return "again"
	case Wait:
		return "wait"
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// Decision is the retry policy's answer after one attempt.
type Decision struct {
	Action Action
	// Wait is the pause before the next attempt (Action Wait).
	Wait time.Duration
	// Attempt is the number of the attempt just made, from 1.
	Attempt int
}

// Retry is the frontend's retry policy for one call (Client.Submit, a
// SubmitMany chunk): a value the Client's blocking loop and the
// [Submission] core both consult, so that the simulator runs the decisions
// the real client makes. The zero value is not usable; make it with
// NewRetry.
type Retry struct {
	b        Backoff
	next     time.Duration
	attempts int
	lastGone bool
}

// NewRetry returns the policy of a new call.
func NewRetry(b Backoff) Retry { return Retry{b: b, next: b.Min} }

// After decides what follows an attempt that ended with r; callerLeft
// says whether the caller's context has ended. A master that left is
// tried again at once, once in a row; other retryable results wait the
// backoff, which then doubles up to Backoff.Max.
func (p *Retry) After(r Result, callerLeft bool) Decision {
	p.attempts++
	if r == MasterGone && !p.lastGone && !callerLeft {
		p.lastGone = true
		return Decision{Action: Again, Attempt: p.attempts}
	}
	p.lastGone = false
	if !r.Retryable() || callerLeft {
		return Decision{Action: Stop, Attempt: p.attempts}
	}
	d := p.next
	p.next = min(2*p.next, p.b.Max)
	if p.b.Jitter != nil && d > 1 {
		d = d/2 + time.Duration(p.b.Jitter.Int64N(int64(d-d/2)+1))
	}
	return Decision{Action: Wait, Wait: d, Attempt: p.attempts}
}

// Attempts returns how many attempts were made.
func (p *Retry) Attempts() int { return p.attempts }
