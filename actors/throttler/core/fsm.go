package core

import (
	"fmt"
	"time"
)

// State is the throttler's FSM state (seed 002, "A skeleton").
type State uint8

const (
	// StateIdle means no timer runs. Entered at start, when the target is unset,
	// and (timer mode) on a Tick with an empty queue or (strict modes) when
	// the queue empties. Left for StateActive when there is a target and a
	// message to deliver.
	StateIdle State = iota + 1
	// StateActive means a target is set and the timer runs, because messages wait
	// or (timer mode) the period of the latest delivery has not ended yet.
	StateActive
)

// String returns "idle" or "active".
func (s State) String() string {
	switch s {
	case StateIdle:
		return "idle"
	case StateActive:
		return "active"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// TimerOp is what the shell must do with its timer after an FSM step.
type TimerOp uint8

const (
	// TimerNone leaves the timer as it is (the zero value: nothing to do).
	TimerNone TimerOp = iota
	// TimerStartPeriodic (re)starts a periodic timer that calls Tick every
	// Effects.TimerAfter, first after one period (ModeTimer).
	TimerStartPeriodic
	// TimerStartOnce (re)arms a one-shot timer that calls Tick after
	// Effects.TimerAfter (strict modes).
	TimerStartOnce
	// TimerStop stops the timer; a Tick that was already on its way is
	// harmless (the FSM ignores a Tick in StateIdle).
	TimerStop
)

// String returns the operation's name.
func (o TimerOp) String() string {
	switch o {
	case TimerNone:
		return "none"
	case TimerStartPeriodic:
		return "start_periodic"
	case TimerStartOnce:
		return "start_once"
	case TimerStop:
		return "stop"
	}
	return fmt.Sprintf("TimerOp(%d)", uint8(o))
}

// Effects is what one FSM step asks its shell to do, in this order: deliver
// Deliver to Target, tell the senders of Rejected that the queue was full,
// forget Dropped, then apply Timer.
//
// The slices are reused by the next step of the same FSM: use them, or copy
// them, before calling it again.
type Effects[T comparable, M any] struct {
	// From and To are the states before and after the step.
	From, To State
	// Target is where Deliver goes: the target after the step.
	Target T
	// Deliver lists the messages to deliver now, oldest first.
	Deliver []M
	// Rejected lists messages refused by OverflowReject.
	Rejected []M
	// Dropped lists messages dropped by OverflowDropOldest or
	// OverflowDropNewest.
	Dropped []M
	// Timer is the timer operation, with its duration in TimerAfter.
	Timer      TimerOp
	TimerAfter time.Duration
	// TimerFirst, when positive, is when a TimerStartPeriodic timer first
	// fires (then every TimerAfter): a throttler that resumes a timer
	// period a predecessor began ends that period on time (see resume).
	TimerFirst time.Duration
}

// Stats are a throttler's counters and current shape.
type Stats struct {
	State     State
	Mode      Mode
	Rate      Rate
	HasTarget bool
	// Queued is the number of messages waiting for delivery now.
	Queued int
	// VouchersLeft is how many deliveries the current timer period still
	// allows (ModeTimer; 0 in strict modes).
	VouchersLeft int
	// Delivered, Rejected and Dropped count messages since the start.
	Delivered uint64
	Rejected  uint64
	Dropped   uint64
}

// FSM is the throttler's pure state machine: seed 002's states Idle and
// Active with data (target, vouchers left in this period, queue), plus the
// strict modes and the queue bound. T is the target type, whose zero value
// means "no target" (nil for *actor.PID); M is the queued message type.
//
// Every method takes the current time and returns the effects to perform;
// the FSM starts no goroutine and reads no clock. It is not safe for
// concurrent use.
type FSM[T comparable, M any] struct {
	mode     Mode
	maxQueue int
	overflow Overflow

	rate    Rate
	state   State
	target  T
	used    int       // ModeTimer: deliveries in this timer period; vouchers left = rate.Calls - used
	started time.Time // ModeTimer: start of this timer period
	queue   ring[M]   // messages waiting for delivery, oldest first
	limiter *Limiter  // strict modes
	wakeAt  time.Time // strict modes: when the armed one-shot timer fires
	resumed bool      // ModeTimer: started and used were restored (resume); becomeActive keeps the period

	delivered, rejected, dropped uint64

	eff Effects[T, M] // reused between steps
}

// NewFSM returns an FSM in StateIdle with no target and a full set of
// vouchers. Options: WithMode, WithBurst, WithSlices, WithMaxQueue, WithOverflow; other
// options are ignored.
func NewFSM[T comparable, M any](rate Rate, opts ...Option) (*FSM[T, M], error) {
	cfg, err := newConfig(defaultConfig(), opts)
	if err != nil {
		return nil, err
	}
	f := &FSM[T, M]{mode: cfg.mode, maxQueue: cfg.maxQueue, overflow: cfg.overflow, state: StateIdle}
	if cfg.mode.strict() {
		f.limiter, err = NewLimiter(rate, WithMode(cfg.mode), WithBurst(cfg.burst), WithSlices(cfg.slices))
		if err != nil {
			return nil, err
		}
	} else if err := rate.Validate(); err != nil {
		return nil, err
	}
	f.rate = rate
	return f, nil
}

// State returns the current state.
func (f *FSM[T, M]) State() State { return f.state }

// Target returns the current target (the zero T when none is set).
func (f *FSM[T, M]) Target() T { return f.target }

// Rate returns the current rate.
func (f *FSM[T, M]) Rate() Rate { return f.rate }

// Mode returns the FSM's mode.
func (f *FSM[T, M]) Mode() Mode { return f.mode }

// Len returns the number of queued messages.
func (f *FSM[T, M]) Len() int { return f.queue.len() }

// Stats returns the counters and current shape.
func (f *FSM[T, M]) Stats() Stats {
	var zero T
	s := Stats{
		State: f.state, Mode: f.mode, Rate: f.rate, HasTarget: f.target != zero,
		Queued: f.queue.len(), Delivered: f.delivered, Rejected: f.rejected, Dropped: f.dropped,
	}
	if f.mode == ModeTimer {
		s.VouchersLeft = f.vouchersLeft()
	}
	return s
}

// SetTarget sets the target; the zero T unsets it, pausing delivery while
// messages keep being queued.
func (f *FSM[T, M]) SetTarget(t T, now time.Time) Effects[T, M] {
	f.begin()
	var none T
	f.target = t
	if f.mode.strict() {
		f.pump(now)
		return f.end()
	}
	switch f.state {
	case StateIdle:
		if t != none && f.queue.len() > 0 {
			// Reference: seed 002, "When a SetTarget message arrives and our
			// queue is non-empty, we can start sending messages."
			f.becomeActive(now)
			f.deliverVouchers()
		}
		// Reference: seed 002, "When a SetTarget message arrives and our
		// queue is empty, we stay, recording the new target."
	case StateActive:
		if t == none {
			// Reference: seed 002, "When a SetTarget message arrives to unset
			// the target, we hop to Idle."
			f.becomeIdle()
		}
		// Reference: seed 002, "When a SetTarget message arrives to change
		// the target to another one, we update our internal state".
	}
	return f.end()
}

// Enqueue takes a message to throttle (seed 002's Queue(msg)): it is
// delivered now if the rate allows it and a target is set, queued otherwise
// (subject to the queue bound). In ModeTimer and StateActive, now is not
// read (the timer counts the periods), so a caller may pass the zero time.
func (f *FSM[T, M]) Enqueue(m M, now time.Time) Effects[T, M] {
	f.begin()
	var none T
	if f.mode.strict() {
		if f.queue.len() > 0 {
			f.pump(now) // make room for m with what is due already
		}
		f.push(m)
		f.pump(now)
		return f.end()
	}
	switch f.state {
	case StateIdle:
		f.push(m)
		if f.target != none {
			// Reference: seed 002, "When a Queue message arrives and the
			// target is set, we jump to Active, delivering the message that
			// we just received."
			f.becomeActive(now)
			f.deliverVouchers()
		}
		// Reference: seed 002, "When a Queue message arrives and the target
		// is not set, we stay in Idle, after adding the new message to our
		// queue."
	case StateActive:
		// Reference: seed 002, "When a Queue message arrives and we have
		// vouchers left, we use them; when we've run out of vouchers, we put
		// the message at the end of our queue."
		f.push(m)
		f.deliverVouchers()
	}
	return f.end()
}

// Tick is the timer firing. In ModeTimer it starts a new period with a full
// set of vouchers; in strict modes it retries the queue.
func (f *FSM[T, M]) Tick(now time.Time) Effects[T, M] {
	f.begin()
	if f.mode.strict() {
		f.wakeAt = time.Time{} // the one-shot timer has fired
		f.pump(now)
		return f.end()
	}
	if f.state != StateActive {
		return f.end() // a tick from a stopped timer
	}
	// The period ends: the vouchers come back (also on the way to Idle, as
	// in Akka's version, so that the next message in Idle finds them).
	f.used, f.started = 0, now
	if f.queue.len() == 0 {
		// Reference: seed 002, "When a Tick message arrives, we check whether
		// the queue is empty, in which case there is no more work to do and
		// we can transition back to Idle, deactivating the timer."
		f.becomeIdle()
		return f.end()
	}
	// Reference: seed 002, "Period ends and we get more occasions to send
	// messages".
	f.deliverVouchers()
	return f.end()
}

// SetRate changes the rate at once; an invalid rate is refused and nothing
// changes.
//
// In ModeTimer the current period is cut short and a period of the new
// length starts now (an Active throttler restarts its timer); the
// deliveries already made in the cut period count against the new period's
// Calls, so the two together deliver at most max(already delivered, new
// Calls). In strict modes the history of deliveries is kept, so windows
// that start after the change hold at most the new Calls (see
// Limiter.SetRate).
func (f *FSM[T, M]) SetRate(r Rate, now time.Time) (Effects[T, M], error) {
	if f.mode.strict() {
		if err := f.limiter.SetRate(r); err != nil {
			return Effects[T, M]{From: f.state, To: f.state}, err
		}
		f.begin()
		f.rate = r
		f.wakeAt = time.Time{} // the wake-up time changes with the rate
		f.pump(now)
		return f.end(), nil
	}
	if err := r.Validate(); err != nil {
		return Effects[T, M]{From: f.state, To: f.state}, err
	}
	f.begin()
	f.rate = r
	if f.state == StateActive {
		f.started = now
		f.eff.Timer, f.eff.TimerAfter = TimerStartPeriodic, r.Per
		f.deliverVouchers()
	}
	return f.end(), nil
}

func (f *FSM[T, M]) begin() {
	var none T
	f.eff.From, f.eff.To, f.eff.Target = f.state, f.state, none
	f.eff.Deliver = f.eff.Deliver[:0]
	f.eff.Rejected = f.eff.Rejected[:0]
	f.eff.Dropped = f.eff.Dropped[:0]
	f.eff.Timer, f.eff.TimerAfter, f.eff.TimerFirst = TimerNone, 0, 0
}

func (f *FSM[T, M]) end() Effects[T, M] {
	f.eff.To, f.eff.Target = f.state, f.target
	return f.eff
}

// becomeActive enters StateActive and starts the periodic timer (seed 002:
// "case Idle -> Active => setTimer(...)"). A new timer period starts now;
// the deliveries of the previous period still count against it unless that
// period is over (it was cut short by SetTarget(none)).
func (f *FSM[T, M]) becomeActive(now time.Time) {
	if f.state == StateActive {
		return
	}
	if f.resumed {
		f.resumed = false
		if end := f.started.Add(f.rate.Per); now.Before(end) {
			// A predecessor's period goes on: its deliveries count, and
			// it ends when it would have, not one period from now.
			f.state = StateActive
			f.eff.Timer, f.eff.TimerAfter, f.eff.TimerFirst = TimerStartPeriodic, f.rate.Per, end.Sub(now)
			return
		}
	}
	if !now.Before(f.started.Add(f.rate.Per)) {
		f.used = 0
	}
	f.started = now
	f.state = StateActive
	f.eff.Timer, f.eff.TimerAfter = TimerStartPeriodic, f.rate.Per
}

// resume makes an idle ModeTimer FSM continue the timer period that began
// at started, in which used deliveries were made (by a predecessor, as its
// journal says): until started+Per it delivers at most Calls-used more, and
// its first period ends at started+Per. In strict modes it is a no-op (feed
// the limiter instead, see restoreGrant).
func (f *FSM[T, M]) resume(started time.Time, used int) {
	if f.mode.strict() || f.state != StateIdle {
		return
	}
	f.started, f.used, f.resumed = started, min(used, f.rate.Calls), true
}

// restoreGrants records grants at ts (oldest first) in the strict window,
// numbered so that the last is lastSeq (see Limiter.amend).
func (f *FSM[T, M]) restoreGrants(ts []time.Time, lastSeq uint64) {
	if f.limiter == nil {
		return
	}
	f.limiter.seq = lastSeq - min(lastSeq, uint64(len(ts)))
	for _, t := range ts {
		f.limiter.record(f.limiter.clamp(t))
	}
	f.limiter.seq = lastSeq
}

// periodEnd is when the current ModeTimer period ends.
func (f *FSM[T, M]) periodEnd() time.Time { return f.started.Add(f.rate.Per) }

// periodUsed returns the current ModeTimer period's start and deliveries.
func (f *FSM[T, M]) periodUsed() (time.Time, int) { return f.started, f.used }

// becomeIdle enters StateIdle and stops the timer (seed 002: "case Active ->
// Idle => cancelTimer(...)").
func (f *FSM[T, M]) becomeIdle() {
	if f.state == StateIdle {
		return
	}
	f.state = StateIdle
	f.wakeAt = time.Time{}
	f.eff.Timer, f.eff.TimerAfter = TimerStop, 0
}

// becomeWaiting enters (or stays in) StateActive with the one-shot timer due
// at wakeAt, re-arming it only when the wake-up time changes.
func (f *FSM[T, M]) becomeWaiting(now time.Time, wait time.Duration) {
	at := now.Add(wait)
	if f.state == StateActive && f.wakeAt.Equal(at) {
		return
	}
	f.state = StateActive
	f.wakeAt = at
	f.eff.Timer, f.eff.TimerAfter = TimerStartOnce, wait
}

// deliverVouchers is seed 002's deliverMessages: send as many queued
// messages as there are vouchers.
func (f *FSM[T, M]) deliverVouchers() {
	for f.used < f.rate.Calls && f.queue.len() > 0 {
		f.used++
		f.deliverOne()
	}
}

// vouchersLeft is the seed's vouchersLeft: deliveries this period still
// allows.
func (f *FSM[T, M]) vouchersLeft() int { return max(0, f.rate.Calls-f.used) }

// pump is the strict modes' delivery: send what the limiter allows now, then
// wait for the next allowed time if messages remain.
func (f *FSM[T, M]) pump(now time.Time) {
	var none T
	if f.target == none || f.queue.len() == 0 {
		f.becomeIdle()
		return
	}
	for f.queue.len() > 0 {
		ok, wait := f.limiter.Reserve(now)
		if !ok {
			f.becomeWaiting(now, wait)
			return
		}
		f.deliverOne()
	}
	f.becomeIdle()
}

func (f *FSM[T, M]) deliverOne() {
	f.eff.Deliver = append(f.eff.Deliver, f.queue.pop())
	f.delivered++
}

// push queues m, applying the overflow policy when the queue is full.
func (f *FSM[T, M]) push(m M) {
	if f.queue.len() < f.maxQueue {
		f.queue.push(m)
		return
	}
	switch f.overflow {
	case OverflowReject:
		f.eff.Rejected = append(f.eff.Rejected, m)
		f.rejected++
	case OverflowDropNewest:
		f.eff.Dropped = append(f.eff.Dropped, m)
		f.dropped++
	case OverflowDropOldest:
		f.eff.Dropped = append(f.eff.Dropped, f.queue.pop())
		f.queue.push(m)
		f.dropped++
	}
}
