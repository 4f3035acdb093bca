package core

import (
	"fmt"
	"time"
)

// Phase is where a persistent actor's session is in its life (the
// runtime's persistence.Phase is this type).
type Phase int

// The phases of a session.
const (
	// PhaseRecovering: taking the lease, loading the snapshot and
	// replaying events, or waiting to retry that. Entered at Start, after
	// a failed append and when a lease wait ends; left for PhaseRunning
	// when recovery succeeds, for PhaseWaitingForLease when another
	// activation holds the lease, for PhaseStopped when fenced.
	PhaseRecovering Phase = iota + 1
	// PhaseWaitingForLease (with a lease only): another activation's lease
	// on the stream is live, or the lease guard reports this node cut off.
	// No epoch is taken, so the activation that serves is not fenced. Left
	// for PhaseRecovering to ask again when the lease may be free (the
	// other's time left has passed, or ttl/3 has: it may have been
	// released), for PhaseStopped with the actor.
	PhaseWaitingForLease
	// PhaseRunning: recovered; persisting and replying are allowed. With a
	// lease, the lease is renewed every ttl/3.
	PhaseRunning
	// PhaseStopped: fenced by a newer activation, out of its lease (taken
	// by another, not renewed for a ttl, or the lease guard said no), or
	// stopped with the actor. Terminal.
	PhaseStopped
)

// String returns the phase's name.
func (p Phase) String() string {
	switch p {
	case PhaseRecovering:
		return "recovering"
	case PhaseWaitingForLease:
		return "waiting for lease"
	case PhaseRunning:
		return "running"
	case PhaseStopped:
		return "stopped"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// Failure classifies a failed journal call, as far as the protocol cares.
// The zero value is no failure.
type Failure int

const (
	// FailNone means the call succeeded.
	FailNone Failure = iota
	// FailAway means the journal did not answer (a timeout, a lost connection):
	// it may answer again soon, so the session probes it.
	FailAway
	// FailRefused means the journal answered with a refusal that says what is
	// wrong (what it holds cannot be replayed, the call is invalid, the
	// journal is closed): the session backs off.
	FailRefused
	// FailFenced means a newer writer took the stream's epoch.
	FailFenced
	// FailLeaseHeld means another holder's lease is live.
	FailLeaseHeld
)

// String returns the failure's name.
func (f Failure) String() string {
	switch f {
	case FailNone:
		return "none"
	case FailAway:
		return "away"
	case FailRefused:
		return "refused"
	case FailFenced:
		return "fenced"
	case FailLeaseHeld:
		return "lease_held"
	}
	return fmt.Sprintf("Failure(%d)", int(f))
}

const (
	// MaxProbeEvery is the longest wait between two probes of a journal
	// that does not answer.
	MaxProbeEvery = 250 * time.Millisecond
	// LeaseRetrySlack is added to another holder's time left before the
	// lease is asked for again, so the lapse is past on the journal's
	// clock too; a retry that is early only finds the lease held and waits
	// again.
	LeaseRetrySlack = 5 * time.Millisecond
)

// LeaseWait returns how long an activation that found the lease held, with
// remaining left on it, waits before asking again: until the lease may have
// lapsed, and at most ttl/3, since a holder that stops releases its lease
// and the successor should not wait out the time that was left.
func LeaseWait(remaining, ttl time.Duration) time.Duration {
	return min(remaining+LeaseRetrySlack, RenewEvery(ttl))
}

// Yield reports whether an activation that began waiting for the lease at
// since has waited maxWait by now and should stop (0: wait as long as it
// takes): the holder is alive and serving, so this one is a stray.
func Yield(since, now time.Time, maxWait time.Duration) bool {
	return maxWait > 0 && now.Sub(since) >= maxWait
}

// Backoff is a recovery's retry state: the backoff between attempts that
// the journal refused, and the probes of a journal that does not answer.
// The zero value is a recovery that has not failed.
type Backoff struct {
	// Retry is the current backoff; > 0 means the last attempt failed.
	Retry time.Duration
	// Probe is the wait before the next probe of a journal that is away.
	Probe time.Duration
	// ProbeLed is set while a recovery started by an answered probe runs:
	// if it fails all the same, the next wait is the backoff.
	ProbeLed bool
}

// Failed records a failed recovery attempt and returns whether to probe the
// journal (true) or retry the recovery (false), and after how long. While
// the journal does not answer, the wait is a cheap probe at most
// MaxProbeEvery apart, and recovery is retried as soon as one is answered;
// unless the failed recovery was itself started by a successful probe: the
// probe then does not tell whether recovery would work, and the backoff
// bounds the retries.
func (b *Backoff) Failed(f Failure, lo, hi time.Duration) (probe bool, wait time.Duration) {
	b.Retry = min(max(2*b.Retry, lo), hi)
	led := b.ProbeLed
	b.ProbeLed = false
	if f == FailAway && !led {
		b.Probe = min(max(2*b.Probe, lo), MaxProbeEvery, hi)
		return true, b.Probe
	}
	return false, b.Retry
}

// ProbeFailed records an unanswered probe and returns the wait before the
// next.
func (b *Backoff) ProbeFailed(lo, hi time.Duration) time.Duration {
	b.Probe = min(max(2*b.Probe, lo), MaxProbeEvery, hi)
	return b.Probe
}

// Failing reports whether the last recovery attempt failed.
func (b *Backoff) Failing() bool { return b.Retry > 0 }

// BatchFull reports whether a group commit of events events and bytes
// encoded bytes is to be written at once, rather than after the messages
// already in the mailbox.
func BatchFull(events, bytes, maxEvents, maxBytes int) bool {
	return events >= maxEvents || bytes >= maxBytes
}

// SnapshotDue reports whether a flush that brought the events since the
// last snapshot to since takes one (every 0: never), unless one is pending
// or being written.
func SnapshotDue(since, every int, pending, inFlight bool) bool {
	return every > 0 && since >= every && !pending && !inFlight
}

// BigSnapshot reports whether a snapshot taken since events after the
// previous one is big (the lease is held longer while it is written; big 0:
// never).
func BigSnapshot(since, big int) bool { return big > 0 && since >= big }

// Quiet is what IdleSnapshotDue asks of a runtime at a fence tick.
type Quiet struct {
	// Flushed: a batch was flushed since the previous tick.
	Flushed bool
	// Since is the events since the last snapshot, Every the snapshot
	// interval (0: never).
	Since, Every int
	// Pending or InFlight: a snapshot waits for durability or is being
	// written.
	Pending, InFlight bool
	// Unwritten: an event is not durable yet (open batch, append in
	// flight).
	Unwritten bool
}

// IdleSnapshotDue reports whether a runtime quiet for a whole fence-check
// interval offers an IdleSnapshotter a snapshot.
func IdleSnapshotDue(q Quiet) bool {
	return !q.Flushed && q.Every > 0 && q.Since >= q.Every && !q.Pending && !q.InFlight && !q.Unwritten
}
