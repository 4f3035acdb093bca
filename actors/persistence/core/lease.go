package core

import (
	"fmt"
	"time"
)

// Bug is test-only: reintroduces a known bug so that the simulator's tests
// can prove they catch it; never set in production. The zero value is no
// bug.
type Bug int

const (
	// NoBug is production behaviour.
	NoBug Bug = iota
	// LastChanceOverlap is the lease as it was before it became exclusive
	// (03f5da1): once its deadline has passed without a renewal, the holder
	// serves on through its "last chance" (a renewal asked for at once and
	// given a third of the ttl), and a renewal answered after the deadline
	// continues the lease as if it had come in time. The journal lets the
	// lease lapse a margin after the deadline and may grant it to a waiting
	// activation, which then serves while this one still does: two masters.
	LastChanceOverlap
)

// String returns the bug's name.
func (b Bug) String() string {
	switch b {
	case NoBug:
		return "none"
	case LastChanceOverlap:
		return "last_chance_overlap"
	}
	return fmt.Sprintf("Bug(%d)", int(b))
}

// Margin is how long before the end of its lease, on its own clock, a
// holder stops serving: 2% of the ttl, for a journal whose clock runs up to
// 2% faster than the holder's (20,000 ppm: forty times NTP's 500 ppm slew
// limit), plus up to 1 ms for the moment between a handler's check of the
// lease and what it does on it. Wall-clock steps are not covered: the
// runtime times its lease on the monotonic clock, and the backends document
// theirs.
func Margin(ttl time.Duration) time.Duration {
	return ttl/50 + min(ttl/10, time.Millisecond)
}

// MaxDrift is the largest rate difference, in parts per million, between a
// journal's clock running fast and a holder's, that Margin covers for any
// ttl: the 2% share of the margin (the millisecond share is for the holder's
// own check-to-act delay).
const MaxDrift = 20_000

// RenewEvery is the period of the renewals: a third of the ttl, so that two
// may fail and the third still come in time.
func RenewEvery(ttl time.Duration) time.Duration { return ttl / 3 }

// NextRenewal returns how long after now the renewal that follows one
// started at start begins: RenewEvery after that start, at once if the call
// took longer.
func NextRenewal(start, now time.Time, ttl time.Duration) time.Duration {
	return max(start.Add(RenewEvery(ttl)).Sub(now), 0)
}

// HolderConfig configures a Holder.
type HolderConfig struct {
	// TTL is the lease's ttl, as the runtime asks for it (WithLease); the
	// margin is taken from it even when a renewal asks for longer (a hold
	// for a long write).
	TTL time.Duration
	// Planted is test-only: reintroduces a known bug so that the
	// simulator's tests can prove they catch it; never set in production.
	Planted Bug
}

// Holder is the holder's side of one grant of the lease: from when the call
// that granted it started, until the holder recovers again or stops. It
// decides from when the holder may no longer serve (Serving), whether a
// renewal's answer continues the lease (Granted), and what the holder does
// when its deadline passes (OnDeadline). It reads no clock: the caller
// passes the instants it measured on its own clock.
//
// The deadline is the start of the last renewal granted in time plus the
// ttl it asked for, minus Margin(TTL): the start is before the journal
// received the call, and the journal keeps the lease for ttl from then, on
// its clock; so whenever the journal's clock runs less than MaxDrift faster
// than the holder's, the holder's last instant of service comes before the
// journal lets the lease lapse, and a successor's first after it.
type Holder struct {
	cfg    HolderConfig
	margin time.Duration
	// deadline is the serving deadline.
	deadline time.Time
	// regained is set when a renewal was granted but answered after the
	// deadline: the lease may have lapsed in between, and another
	// activation served, so the holder recovers under a new epoch.
	regained bool
	// lastChance is set once the deadline passed with no renewal: a renewal
	// was asked for at once, and OnDeadline stops the holder next time.
	lastChance bool
	// chanceEnds is when the last chance ends (LastChanceOverlap serves
	// until then).
	chanceEnds time.Time
}

// NewHolder returns the holder's side of a lease granted by the call that
// started at granted, on the holder's clock, asking for cfg.TTL.
func NewHolder(cfg HolderConfig, granted time.Time) Holder {
	m := Margin(cfg.TTL)
	return Holder{cfg: cfg, margin: m, deadline: granted.Add(cfg.TTL - m)}
}

// TTL returns the ttl the holder was made with.
func (h *Holder) TTL() time.Duration { return h.cfg.TTL }

// Deadline returns the serving deadline: the start of the last renewal
// granted in time + its ttl - the margin.
func (h *Holder) Deadline() time.Time { return h.deadline }

// ServingUntil returns the first instant at which Serving answers false,
// given what the holder knows now: the deadline (later with a planted
// LastChanceOverlap during its last chance). A runner that must answer
// Serving without a lock (the runtime's Recovered, on the actor's goroutine
// while renewals run on another) publishes this after every change.
func (h *Holder) ServingUntil() time.Time {
	if h.cfg.Planted == LastChanceOverlap && h.lastChance && h.chanceEnds.After(h.deadline) {
		return h.chanceEnds
	}
	return h.deadline
}

// Serving reports whether the holder may serve (hand out work, answer
// status) at now: now is before its deadline. It is the lease's half of the
// runtime's Recovered.
func (h *Holder) Serving(now time.Time) bool { return now.Before(h.ServingUntil()) }

// Regained reports whether a renewal was granted after the deadline (the
// holder must recover under a new epoch before it serves again).
func (h *Holder) Regained() bool { return h.regained }

// Granted records a renewal granted by the journal: the call started at
// start asking for ttl, and its answer arrived at now. Answered before the
// deadline, it moves the deadline to start + ttl - margin unless the
// deadline is later already, and Granted reports true. Answered after it,
// it does not count (the lease may have lapsed in between, and another
// activation may have served): the holder is marked regained and Granted
// reports false; the runner then treats the deadline as passed
// (OnDeadline), which recovers.
func (h *Holder) Granted(now, start time.Time, ttl time.Duration) bool {
	if !h.Serving(now) {
		h.regained = true
		return false
	}
	if h.cfg.Planted == LastChanceOverlap && h.lastChance {
		// The planted bug: the late renewal continues the lease.
		h.lastChance = false
	}
	if until := start.Add(ttl - h.margin); until.After(h.deadline) {
		h.deadline = until
	}
	return true
}

// DeadlineAction is what a holder does when its deadline timer fires.
type DeadlineAction int

const (
	// DeadlineRearm means a renewal came in time meanwhile; arm the deadline
	// timer again for At (the new deadline).
	DeadlineRearm DeadlineAction = iota + 1
	// DeadlineRecover means a renewal was granted late; recover under a new
	// epoch before serving again (the lease stays this holder's).
	DeadlineRecover
	// DeadlineLastChance means no renewal came; renew at once and check again
	// at At (a third of the ttl later). The holder does not serve
	// meanwhile: this is for a pause (GC, SIGSTOP, a starved machine), and
	// costs it a recovery, not its activation.
	DeadlineLastChance
	// DeadlineStop means the last chance passed with no renewal either; stop,
	// since another activation may take the lease.
	DeadlineStop
)

// String returns the action's name.
func (a DeadlineAction) String() string {
	switch a {
	case DeadlineRearm:
		return "rearm"
	case DeadlineRecover:
		return "recover"
	case DeadlineLastChance:
		return "last_chance"
	case DeadlineStop:
		return "stop"
	}
	return fmt.Sprintf("DeadlineAction(%d)", int(a))
}

// OnDeadline decides what the holder does when its deadline timer fires at
// now (the timer may be late, or the deadline may have moved since it was
// armed), and returns when to check again for DeadlineRearm and
// DeadlineLastChance.
func (h *Holder) OnDeadline(now time.Time) (DeadlineAction, time.Time) {
	if until := h.ServingUntil(); now.Before(until) {
		if now.Before(h.deadline) {
			h.lastChance = false // renewed in time: a later lapse gets a last chance of its own
		}
		// (Past the deadline, only the planted bug serves on: it checks
		// again when its last chance ends.)
		return DeadlineRearm, until
	}
	if h.regained {
		return DeadlineRecover, time.Time{}
	}
	if !h.lastChance {
		h.lastChance = true
		h.chanceEnds = now.Add(RenewEvery(h.cfg.TTL))
		return DeadlineLastChance, h.chanceEnds
	}
	return DeadlineStop, time.Time{}
}
