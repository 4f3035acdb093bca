package core

import (
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/messages"
)

// DefaultAskTimeout is how long a worker waits for the waiter's answer
// before it takes the silence for "not interested" (waiter's).
const DefaultAskTimeout = 5 * time.Second

// TimerAsk is the name of an Asker's answer timeout.
const TimerAsk = "interest-ask"

// Inputs of Asker.Step (besides effect.Fired).
type (
	// Ask sends the question to the waiter at Waiter.
	Ask struct {
		Waiter *messages.PID
		WorkID string
	}
	// Heard is what came back from the waiter: IAmStillInterested,
	// IAmNoLongerInterested (an answer, or pushed unasked later), or nil
	// for a dead letter (the waiter is gone).
	Heard struct{ Msg proto.Message }
	// RunEnded tells the Asker that the job it allowed has ended: a later
	// push is no longer about it.
	RunEnded struct{}
)

// Effects of Asker.Step (besides effect.Send, effect.Timer, StopTimer).
type (
	// Verdict is the answer to the question: run the job (Interested),
	// or skip it. Answered is false when no answer came (a dead letter or
	// the timeout), which a worker also takes as "not interested".
	Verdict struct {
		Interested bool
		Answered   bool
		Reason     messages.NoLongerInterestedReason
	}
	// Cancel tells the worker to cancel the job it runs: the caller left
	// after saying yes.
	Cancel struct {
		Reason messages.NoLongerInterestedReason
	}
)

// IsEffect marks Verdict as an effect.Effect.
func (Verdict) IsEffect() {}

// IsEffect marks Cancel as an effect.Effect.
func (Cancel) IsEffect() {}

type askPhase uint8

const (
	askIdle askPhase = iota
	askWaiting
	askRunning
	askOver
)

// Asker is the worker's side of the interest protocol for one job
// (waiter.AskStillInterested, and the worker that keeps listening while
// the job runs): ask, wait at most the timeout, run on yes, skip on no or
// silence, and cancel the run when told no unasked. Not safe for
// concurrent use.
type Asker struct {
	timeout time.Duration
	phase   askPhase
}

// NewAsker returns the question of one job; timeout 0 is
// DefaultAskTimeout.
func NewAsker(timeout time.Duration) *Asker {
	if timeout <= 0 {
		timeout = DefaultAskTimeout
	}
	return &Asker{timeout: timeout}
}

// Step takes one input (Ask, Heard, RunEnded, effect.Fired) at now and
// returns the effects.
func (a *Asker) Step(now time.Time, in any) []effect.Effect {
	switch m := in.(type) {
	case Ask:
		if a.phase != askIdle {
			return nil
		}
		if m.Waiter == nil {
			a.phase = askOver
			return []effect.Effect{Verdict{}}
		}
		a.phase = askWaiting
		return []effect.Effect{
			effect.Send{To: m.Waiter, Msg: &messages.AreYouStillInterested{WorkId: m.WorkID}},
			effect.Timer{Name: TimerAsk, At: now.Add(a.timeout)},
		}
	case Heard:
		return a.heard(m.Msg)
	case RunEnded:
		a.phase = askOver
	case effect.Fired:
		if m.Name == TimerAsk && a.phase == askWaiting {
			a.phase = askOver
			return []effect.Effect{Verdict{}}
		}
	}
	return nil
}

func (a *Asker) heard(msg proto.Message) []effect.Effect {
	no, isNo := msg.(*messages.IAmNoLongerInterested)
	switch a.phase {
	case askWaiting:
		stop := effect.StopTimer{Name: TimerAsk}
		switch msg.(type) {
		case *messages.IAmStillInterested:
			a.phase = askRunning
			return []effect.Effect{stop, Verdict{Interested: true, Answered: true}}
		case *messages.IAmNoLongerInterested:
			a.phase = askOver
			return []effect.Effect{stop, Verdict{Answered: true, Reason: no.GetReason()}}
		case nil:
			a.phase = askOver
			return []effect.Effect{stop, Verdict{}}
		}
	case askRunning:
		if isNo {
			a.phase = askOver
			return []effect.Effect{Cancel{Reason: no.GetReason()}}
		}
	}
	return nil
}
