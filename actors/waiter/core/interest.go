package core

import (
	"time"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/messages"
)

// Defaults of an Interest (the waiter package's).
const (
	// DefaultLinger is how long an Interest keeps answering
	// IAmNoLongerInterested after its caller has gone, before it stops.
	DefaultLinger = 5 * time.Second
	// DefaultReleaseLinger is how long a released Interest keeps answering
	// IAmStillInterested: for workers that got the work before the master
	// dropped its waiter and ask later.
	DefaultReleaseLinger = time.Minute
)

// TimerLinger is the name of an Interest's linger timer.
const TimerLinger = "linger"

// InterestConfig configures an Interest.
type InterestConfig struct {
	// Linger and ReleaseLinger: see DefaultLinger, DefaultReleaseLinger
	// (the defaults when zero).
	Linger, ReleaseLinger time.Duration
}

// Inputs of Interest.Step (besides effect.Fired).
type (
	// Asked is AreYouStillInterested from the worker at From. CallerLeft
	// says the caller's ctx had ended when the question came (Reason
	// why), though CallerGone has not been stepped yet: the shell reads
	// the ctx, whose own notice comes from another goroutine and may lag.
	Asked struct {
		From       *messages.PID
		WorkID     string
		CallerLeft bool
		Reason     Reason
	}
	// CallerGone is the caller's ctx ending.
	CallerGone struct{ Reason Reason }
	// Released is Detach: the job goes on without the caller.
	Released struct{}
	// Outcome is the work's outcome, sent by the master once durable.
	Outcome struct{ Result *messages.WorkResult }
	// Closed is the caller closing the Interest (it got what it wanted).
	Closed struct{}
)

// Effects of Interest.Step (besides effect.Reply, effect.Send and
// effect.Timer).
type (
	// Deliver hands the work's outcome to the caller (only the first).
	Deliver struct{ Result *messages.WorkResult }
	// Stop ends the Interest: later questions get a dead letter.
	Stop struct{}
)

// IsEffect marks Deliver as an effect.Effect.
func (Deliver) IsEffect() {}

// IsEffect marks Stop as an effect.Effect.
func (Stop) IsEffect() {}

// Interest is the caller's side of the interest protocol for a caller
// outside the actor system (waiter.Interest): a Waiter without a promise,
// asked by any number of workers. Not safe for concurrent use.
type Interest struct {
	cfg       InterestConfig
	w         Waiter
	workers   []toldYes // workers told IAmStillInterested
	released  bool      // yes to every question until the linger ends
	delivered bool
	lingering bool
	stopped   bool
}

// toldYes is a worker told IAmStillInterested and the work it asked
// about: the "no" it is told when the caller leaves names that work, so a
// worker whose watch address now belongs to another job's passage (a
// worker restarted at the same address) drops it (the simulator's seed
// 1018802).
type toldYes struct {
	to     *messages.PID
	workID string
}

// NewInterest returns the interest of a caller that waits.
func NewInterest(cfg InterestConfig) *Interest {
	if cfg.Linger <= 0 {
		cfg.Linger = DefaultLinger
	}
	if cfg.ReleaseLinger <= 0 {
		cfg.ReleaseLinger = DefaultReleaseLinger
	}
	return &Interest{cfg: cfg, w: NewWaiter()}
}

// Phase returns the interest's Waiter phase.
func (i *Interest) Phase() Phase { return i.w.Phase() }

// Stopped reports whether the Interest has stopped.
func (i *Interest) Stopped() bool { return i.stopped }

// Step takes one input (Asked, CallerGone, Released, Outcome, Closed,
// effect.Fired) at now and returns the effects.
func (i *Interest) Step(now time.Time, in any) []effect.Effect {
	if i.stopped {
		return nil
	}
	switch m := in.(type) {
	case Outcome:
		if i.delivered {
			return nil // only the first outcome counts
		}
		i.delivered = true
		return []effect.Effect{Deliver(m)}
	case Released:
		if i.w.Phase() != PhaseInterested || i.released {
			return nil
		}
		i.released, i.lingering = true, true
		return []effect.Effect{effect.Timer{Name: TimerLinger, At: now.Add(i.cfg.ReleaseLinger)}}
	case Asked:
		return i.asked(now, m)
	case CallerGone:
		if i.released || i.w.Phase() != PhaseInterested {
			return nil // released, or gave up already when asked
		}
		return i.giveUp(now, m.Reason, nil)
	case Closed:
		i.stopped = true
		return []effect.Effect{effect.StopTimer{Name: TimerLinger}, Stop{}}
	case effect.Fired:
		if m.Name == TimerLinger && i.lingering {
			i.stopped = true
			return []effect.Effect{Stop{}}
		}
	}
	return nil
}

func (i *Interest) asked(now time.Time, m Asked) []effect.Effect {
	if i.released {
		return []effect.Effect{effect.Reply{To: m.From, Msg: &messages.IAmStillInterested{WorkId: m.WorkID}}}
	}
	var out []effect.Effect
	if i.w.Phase() == PhaseInterested && m.CallerLeft {
		out = i.giveUp(now, m.Reason, out)
	}
	if i.w.Phase() == PhaseInterested {
		i.w.Ask()
		if m.From != nil {
			i.workers = append(i.workers, toldYes{to: m.From, workID: m.WorkID})
		}
		return append(out, effect.Reply{To: m.From, Msg: &messages.IAmStillInterested{WorkId: m.WorkID}})
	}
	// Unlike a WorkWaiter (one job, one question) an Interest may be asked
	// by several workers, so it keeps answering while it lingers.
	return append(out, effect.Reply{To: m.From, Msg: &messages.IAmNoLongerInterested{WorkId: m.WorkID, Reason: i.w.Reason().Proto()}})
}

// giveUp records that the caller left: the workers told yes are told no
// (they cancel the running job), and the Interest lingers, answering no.
func (i *Interest) giveUp(now time.Time, r Reason, out []effect.Effect) []effect.Effect {
	eff := i.w.GiveUp(r)
	if eff.CancelWorker {
		for _, w := range i.workers {
			out = append(out, effect.Send{To: w.to, Msg: &messages.IAmNoLongerInterested{WorkId: w.workID, Reason: i.w.Reason().Proto()}})
		}
	}
	i.workers = nil
	if !i.lingering {
		i.lingering = true
		out = append(out, effect.Timer{Name: TimerLinger, At: now.Add(i.cfg.Linger)})
	}
	return out
}
