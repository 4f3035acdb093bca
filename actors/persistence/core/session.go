package core

import (
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
)

// Timer names a Session arms (effect.Timer) and expects back (effect.Fired).
const (
	TimerRetry    = "persistence.retry"    // recover again (backoff, lease wait)
	TimerProbe    = "persistence.probe"    // probe a journal that is away
	TimerRenew    = "persistence.renew"    // renew the lease
	TimerDeadline = "persistence.deadline" // the lease's serving deadline
)

// Why a Session halts (Halt.Reason).
const (
	HaltFenced    = "fenced"         // a newer activation took the epoch
	HaltLeaseLost = "lease lost"     // another activation took the lease
	HaltDeadline  = "lease deadline" // the lease could not be renewed for its ttl
	HaltStray     = "stray"          // waited LeaseMaxWait for a lease another keeps
)

// Config configures a Session. Its fields are the runtime's options of the
// same names (persistence.With...).
type Config struct {
	// LeaseTTL is the lease's ttl; 0: no lease.
	LeaseTTL time.Duration
	// LeaseMaxWait bounds the wait for the lease (0: no bound).
	LeaseMaxWait time.Duration
	// RetryMin and RetryMax bound the recovery backoff (both > 0).
	RetryMin, RetryMax time.Duration
	// MaxBatchEvents caps one group commit (> 0).
	MaxBatchEvents int
	// Planted is test-only: reintroduces a known bug so that the
	// simulator's tests can prove they catch it; never set in production.
	Planted Bug
}

// The Session's own effects (effect.Effect), each a call its runner makes
// to the journal or the actor, answered by the input named in its doc.
type (
	// LeaseCall asks the journal for the lease for TTL (Journal.Lease);
	// answer with LeaseAnswer{Call}.
	LeaseCall struct {
		Call uint64
		TTL  time.Duration
	}
	// Load recovers: AcquireEpoch, the newest snapshot (Handler.Reset, which
	// drops every unconfirmed decision), the events after it
	// (Handler.Replay) and a recovery marker; answer with Loaded{Call}.
	Load struct{ Call uint64 }
	// Probe reads nothing from the journal to see whether it answers;
	// answer with Probed{Call}.
	Probe struct{ Call uint64 }
	// JournalAppend writes Events, numbered from First, under Epoch, after
	// every earlier JournalAppend (Journal.AppendAsync); answer with
	// Appended{Batch}.
	JournalAppend struct {
		Batch  uint64
		Epoch  int64
		First  int64
		Events []proto.Message
	}
	// FlushSoon asks for Flush once the inputs already queued (the actor's
	// mailbox) have been stepped: what they persist shares the group
	// commit.
	FlushSoon struct{}
	// Confirm tells the runner that the Append with Token (the upper
	// core's effect.Append) is durable: step the upper core with
	// effect.Durable{Token}, and send the replies that waited for it. With
	// RepliesOnly the session stopped or recovered since (the runtime's
	// then callbacks are dropped): only the replies leave.
	Confirm struct {
		Token       uint64
		RepliesOnly bool
	}
	// Serve says the session recovered under Epoch with Seq the last event: the actor may
	// decide (the runtime's onRecovered).
	Serve struct {
		Epoch int64
		Seq   int64
	}
	// Release ends the lease at once (Journal.ReleaseLease).
	Release struct{}
	// Halt stops the actor (fenced, out of its lease, a stray).
	Halt struct{ Reason string }
)

// IsEffect marks LeaseCall as an effect.Effect.
func (LeaseCall) IsEffect() {}

// IsEffect marks Load as an effect.Effect.
func (Load) IsEffect() {}

// IsEffect marks Probe as an effect.Effect.
func (Probe) IsEffect() {}

// IsEffect marks JournalAppend as an effect.Effect.
func (JournalAppend) IsEffect() {}

// IsEffect marks FlushSoon as an effect.Effect.
func (FlushSoon) IsEffect() {}

// IsEffect marks Confirm as an effect.Effect.
func (Confirm) IsEffect() {}

// IsEffect marks Serve as an effect.Effect.
func (Serve) IsEffect() {}

// IsEffect marks Release as an effect.Effect.
func (Release) IsEffect() {}

// IsEffect marks Halt as an effect.Effect.
func (Halt) IsEffect() {}

// Input is what a runner steps a Session with: Start, Stop, Flush,
// LeaseAnswer, Loaded, Probed, Appended, an effect.Append of the upper core
// (to persist) or an effect.Fired.
type Input any

// The Session's inputs.
type (
	// Start begins the first recovery.
	Start struct{}
	// Stop stops the session: the open batch is written, and the lease
	// released once the appends in flight are answered.
	Stop struct{}
	// Flush writes the open batch (after FlushSoon).
	Flush struct{}
	// LeaseAnswer answers LeaseCall{Call}: granted, refused with State
	// (Failure FailLeaseHeld), or failed.
	LeaseAnswer struct {
		Call    uint64
		Failure Failure
		State   LeaseState
	}
	// Loaded answers Load{Call}: the epoch taken and the last event
	// replayed (the recovery marker included), or a failure.
	Loaded struct {
		Call    uint64
		Failure Failure
		Epoch   int64
		LastSeq int64
	}
	// Probed answers Probe{Call}.
	Probed struct {
		Call    uint64
		Failure Failure
	}
	// Appended answers JournalAppend{Batch}.
	Appended struct {
		Batch   uint64
		Failure Failure
	}
)

// batch is one group commit and the tokens that wait for it.
type batch struct {
	id      uint64
	first   int64
	lastSeq int64
	events  []proto.Message
	tokens  []uint64
}

// barrier is a token with no events, waiting for the appends before it.
type barrier struct {
	seq   int64
	token uint64
}

// renewal is a lease call of the keeper in flight.
type renewal struct {
	call  uint64
	start time.Time
	ttl   time.Duration
}

// Session is the persistence runtime's protocol as a value: recovery (take
// the lease, take an epoch, load, replay, serve), the lease's keeper and
// deadline, retries with backoff and probes, and group commit with
// confirmations in sequence order. It is what persistence.Runtime does, for
// a runner on virtual time (actors/sim); the Runtime itself calls the same
// decisions (Holder, Backoff, LeaseWait, Yield, BatchFull).
//
// Not modelled: the lease guard, fence checks, snapshots (their decisions
// are SnapshotDue, BigSnapshot and IdleSnapshotDue), and the byte cap of a
// batch.
type Session struct {
	cfg   Config
	phase Phase
	calls uint64 // the last call id handed out

	// Recovery.
	backoff      Backoff
	take         uint64    // the lease call of this recovery, 0: none
	takeStart    time.Time // when it was asked for
	load         uint64    // the Load in flight, 0: none
	probe        uint64    // the Probe in flight, 0: none
	waitingSince time.Time // zero: not waiting for the lease

	// The lease.
	leaseHeld bool    // granted and not released: Stop releases it
	holder    *Holder // since the lease was granted; nil: no keeper
	renewals  []renewal
	lost      bool // a renewal was refused: another holder took the lease

	// Serving and group commit.
	epoch      int64
	nextSeq    int64
	durableSeq int64
	building   *batch
	flushSent  bool
	inflight   []*batch
	barriers   []barrier
	orphans    []*batch // written before a recovery or stop: replies only
	release    bool     // release the lease once inflight is empty (stopping)
}

// NewSession returns a session that does nothing until Start.
func NewSession(cfg Config) *Session { return &Session{cfg: cfg} }

// Phase returns the session's phase (0 before Start).
func (s *Session) Phase() Phase { return s.phase }

// Epoch returns the epoch of the current activation.
func (s *Session) Epoch() int64 { return s.epoch }

// DurableSeq returns the highest sequence number known durable.
func (s *Session) DurableSeq() int64 { return s.durableSeq }

// LastSeq returns the sequence number of the last event persisted.
func (s *Session) LastSeq() int64 { return s.nextSeq - 1 }

// Holder returns the lease's holder side (nil when no lease is held): what
// an invariant checker compares with the journal.
func (s *Session) Holder() *Holder { return s.holder }

// Serving reports whether the actor may decide at now: the runtime's
// Recovered (running, and before the lease's deadline).
func (s *Session) Serving(now time.Time) bool {
	return s.phase == PhaseRunning && (s.holder == nil || s.holder.Serving(now))
}

// RecoveryFailing reports whether the last recovery attempt failed.
func (s *Session) RecoveryFailing() bool {
	return s.phase == PhaseRecovering && s.backoff.Failing()
}

// Step advances the session by one input at now and returns the effects,
// in the order to carry them out. Persisting (an effect.Append) outside
// PhaseRunning panics, as the runtime's Persist does: check Serving first.
func (s *Session) Step(now time.Time, in Input) []effect.Effect {
	var out []effect.Effect
	switch m := in.(type) {
	case Start:
		out = s.recover(now, out)
	case Stop:
		out = s.stop(out)
	case Flush:
		if s.phase == PhaseRunning {
			s.flushSent = false
			out = s.flush(out)
		}
	case effect.Append:
		out = s.persist(m, out)
	case LeaseAnswer:
		out = s.onLease(now, m, out)
	case Loaded:
		out = s.onLoaded(now, m, out)
	case Probed:
		out = s.onProbed(now, m, out)
	case Appended:
		out = s.onAppended(now, m, out)
	case effect.Fired:
		out = s.onFired(now, m, out)
	default:
		panic(fmt.Sprintf("persistence/core: unknown input %T", in))
	}
	return out
}

func (s *Session) nextCall() uint64 {
	s.calls++
	return s.calls
}

func logf(out []effect.Effect, level slog.Level, msg string, attrs ...any) []effect.Effect {
	return append(out, effect.Log{Level: level, Msg: msg, Attrs: attrs})
}

// stopTimers disarms every timer and forgets the keeper and the calls in
// flight: their answers are stale from now on.
func (s *Session) stopTimers(out []effect.Effect) []effect.Effect {
	s.take, s.load, s.probe = 0, 0, 0
	s.holder, s.renewals = nil, nil
	return append(out,
		effect.StopTimer{Name: TimerRetry}, effect.StopTimer{Name: TimerProbe},
		effect.StopTimer{Name: TimerRenew}, effect.StopTimer{Name: TimerDeadline})
}

// orphan moves the batches not yet confirmed aside: their replies still
// leave if they turn out durable, nothing else waits for them.
func (s *Session) orphan() {
	s.orphans = append(s.orphans, s.inflight...)
	s.building, s.flushSent, s.inflight, s.barriers = nil, false, nil, nil
}

// recover starts a recovery: the lease first (with one), then Load.
func (s *Session) recover(now time.Time, out []effect.Effect) []effect.Effect {
	s.phase = PhaseRecovering
	s.orphan()
	out = s.stopTimers(out)
	if s.cfg.LeaseTTL > 0 {
		s.take, s.takeStart = s.nextCall(), now
		return append(out, LeaseCall{Call: s.take, TTL: s.cfg.LeaseTTL})
	}
	s.load = s.nextCall()
	return append(out, Load{Call: s.load})
}

// retry records a failed recovery and waits for the backoff or a probe.
// The lease is not renewed meanwhile: an activation that cannot recover
// must not keep another from serving.
func (s *Session) retry(now time.Time, f Failure, out []effect.Effect) []effect.Effect {
	out = s.stopTimers(out)
	probe, wait := s.backoff.Failed(f, s.cfg.RetryMin, s.cfg.RetryMax)
	if probe {
		out = logf(out, slog.LevelError, "recovery failed; retrying as soon as the journal answers", "failure", f, "probe_every", wait)
		return append(out, effect.Timer{Name: TimerProbe, At: now.Add(wait)})
	}
	out = logf(out, slog.LevelError, "recovery failed; retrying", "failure", f, "retry_in", wait)
	return append(out, effect.Timer{Name: TimerRetry, At: now.Add(wait)})
}

// halt stops the session and the actor without writing the open batch.
func (s *Session) halt(reason string, out []effect.Effect) []effect.Effect {
	s.phase = PhaseStopped
	s.orphan()
	out = s.stopTimers(out)
	if reason == HaltLeaseLost {
		s.leaseHeld = false // another holder has it: nothing to release
	}
	return append(out, Halt{Reason: reason})
}

func (s *Session) onLease(now time.Time, m LeaseAnswer, out []effect.Effect) []effect.Effect {
	if m.Call != 0 && m.Call == s.take {
		return s.onTake(now, m, out)
	}
	for i, r := range s.renewals {
		if r.call == m.Call {
			s.renewals = append(s.renewals[:i:i], s.renewals[i+1:]...)
			return s.onRenewed(now, r, m, out)
		}
	}
	return out // stale: from before a recovery or a stop
}

// onTake handles the answer to the recovery's lease call.
func (s *Session) onTake(now time.Time, m LeaseAnswer, out []effect.Effect) []effect.Effect {
	s.take = 0
	switch m.Failure {
	case FailNone:
		s.leaseHeld = true
		s.waitingSince = time.Time{}
		h := NewHolder(HolderConfig{TTL: s.cfg.LeaseTTL, Planted: s.cfg.Planted}, s.takeStart)
		s.holder, s.lost = &h, false
		s.load = s.nextCall()
		return append(out,
			effect.Timer{Name: TimerRenew, At: now.Add(RenewEvery(s.cfg.LeaseTTL))},
			Load{Call: s.load})
	case FailLeaseHeld:
		s.leaseHeld = false
		s.backoff.ProbeLed = false // the journal answered
		if s.waitingSince.IsZero() {
			s.waitingSince = now
		}
		if Yield(s.waitingSince, now, s.cfg.LeaseMaxWait) {
			out = logf(out, slog.LevelInfo, "the lease stayed with another activation that keeps it; this one yields and stops", "lease_holder", m.State.Holder)
			return s.halt(HaltStray, out)
		}
		s.phase = PhaseWaitingForLease
		return append(out, effect.Timer{Name: TimerRetry, At: now.Add(LeaseWait(m.State.Remaining, s.cfg.LeaseTTL))})
	default:
		return s.retry(now, m.Failure, out)
	}
}

// onRenewed handles the answer to one of the keeper's renewals.
func (s *Session) onRenewed(now time.Time, r renewal, m LeaseAnswer, out []effect.Effect) []effect.Effect {
	switch m.Failure {
	case FailNone:
		if !s.holder.Granted(now, r.start, r.ttl) && s.phase == PhaseRunning {
			// Answered after the deadline: the runtime's keeper sends the
			// actor leaseExpiry at once.
			out = s.onDeadline(now, out)
			if s.phase != PhaseRunning || s.holder == nil {
				return out
			}
		}
	case FailLeaseHeld:
		s.lost = true
		if s.phase == PhaseRunning {
			return s.halt(HaltLeaseLost, out)
		}
		return out // Loaded stops the recovery
	case FailRefused:
		return out // the journal is gone; the deadline stops the actor
	}
	return append(out, effect.Timer{Name: TimerRenew, At: now.Add(NextRenewal(r.start, now, s.cfg.LeaseTTL))})
}

// renew starts one of the keeper's renewals.
func (s *Session) renew(now time.Time, out []effect.Effect) []effect.Effect {
	r := renewal{call: s.nextCall(), start: now, ttl: s.cfg.LeaseTTL}
	s.renewals = append(s.renewals, r)
	return append(out, LeaseCall{Call: r.call, TTL: r.ttl})
}

func (s *Session) onLoaded(now time.Time, m Loaded, out []effect.Effect) []effect.Effect {
	if m.Call == 0 || m.Call != s.load {
		return out
	}
	s.load = 0
	if s.lost {
		return s.halt(HaltLeaseLost, out)
	}
	switch m.Failure {
	case FailNone:
	case FailFenced, FailLeaseHeld:
		return s.halt(HaltFenced, out)
	default:
		return s.retry(now, m.Failure, out)
	}
	s.backoff = Backoff{}
	s.epoch, s.durableSeq, s.nextSeq = m.Epoch, m.LastSeq, m.LastSeq+1
	s.phase = PhaseRunning
	out = append(out, Serve{Epoch: m.Epoch, Seq: m.LastSeq})
	if s.holder != nil {
		out = append(out, effect.Timer{Name: TimerDeadline, At: s.holder.Deadline()})
	}
	return out
}

func (s *Session) onProbed(now time.Time, m Probed, out []effect.Effect) []effect.Effect {
	if m.Call == 0 || m.Call != s.probe || s.phase != PhaseRecovering {
		return out
	}
	s.probe = 0
	if m.Failure != FailNone {
		wait := s.backoff.ProbeFailed(s.cfg.RetryMin, s.cfg.RetryMax)
		return append(out, effect.Timer{Name: TimerProbe, At: now.Add(wait)})
	}
	s.backoff.ProbeLed = true
	return s.recover(now, out)
}

func (s *Session) onFired(now time.Time, m effect.Fired, out []effect.Effect) []effect.Effect {
	switch m.Name {
	case TimerRetry:
		if s.phase == PhaseRecovering || s.phase == PhaseWaitingForLease {
			return s.recover(now, out)
		}
	case TimerProbe:
		if s.phase == PhaseRecovering && s.probe == 0 {
			s.probe = s.nextCall()
			return append(out, Probe{Call: s.probe})
		}
	case TimerRenew:
		if s.holder != nil && s.phase != PhaseStopped {
			return s.renew(now, out)
		}
	case TimerDeadline:
		if s.phase == PhaseRunning && s.holder != nil {
			return s.onDeadline(now, out)
		}
	}
	return out
}

// onDeadline carries out the Holder's decision at its deadline.
func (s *Session) onDeadline(now time.Time, out []effect.Effect) []effect.Effect {
	switch act, at := s.holder.OnDeadline(now); act {
	case DeadlineRearm:
		return append(out, effect.Timer{Name: TimerDeadline, At: at})
	case DeadlineRecover:
		out = logf(out, slog.LevelWarn, "took the lease again after its deadline; recovering under a new epoch before serving")
		return s.recover(now, out)
	case DeadlineLastChance:
		out = logf(out, slog.LevelWarn, "the lease's deadline passed without a renewal; not serving, renewing at once")
		out = s.renew(now, out)
		return append(out, effect.Timer{Name: TimerDeadline, At: at})
	default:
		out = logf(out, slog.LevelError, "could not renew the lease for its whole ttl; stopping")
		return s.halt(HaltDeadline, out)
	}
}

// persist adds the upper core's events to the open group commit.
func (s *Session) persist(a effect.Append, out []effect.Effect) []effect.Effect {
	if s.phase != PhaseRunning {
		panic(fmt.Sprintf("persistence/core: Persist while %s; check Serving first", s.phase))
	}
	if len(a.Events) == 0 {
		return s.defer1(a.Token, out)
	}
	if s.building == nil {
		s.building = &batch{first: s.nextSeq}
	}
	s.building.events = append(s.building.events, a.Events...)
	s.building.tokens = append(s.building.tokens, a.Token)
	s.nextSeq += int64(len(a.Events))
	if BatchFull(len(s.building.events), 0, s.cfg.MaxBatchEvents, 1<<62) {
		return s.flush(out)
	}
	if !s.flushSent {
		s.flushSent = true
		out = append(out, FlushSoon{})
	}
	return out
}

// defer1 confirms a token with no events once everything before it is
// durable (the runtime's Defer and Reply).
func (s *Session) defer1(token uint64, out []effect.Effect) []effect.Effect {
	switch {
	case s.building != nil:
		s.building.tokens = append(s.building.tokens, token)
	case len(s.inflight) > 0:
		s.barriers = append(s.barriers, barrier{seq: s.inflight[len(s.inflight)-1].lastSeq, token: token})
	default:
		out = append(out, Confirm{Token: token})
	}
	return out
}

// flush hands the open batch to the journal.
func (s *Session) flush(out []effect.Effect) []effect.Effect {
	b := s.building
	if b == nil {
		return out
	}
	s.building = nil
	b.lastSeq = b.first + int64(len(b.events)) - 1
	b.id = s.nextCall()
	s.inflight = append(s.inflight, b)
	return append(out, JournalAppend{Batch: b.id, Epoch: s.epoch, First: b.first, Events: b.events})
}

func (s *Session) onAppended(now time.Time, m Appended, out []effect.Effect) []effect.Effect {
	for i, b := range s.orphans {
		if b.id == m.Batch {
			s.orphans = append(s.orphans[:i:i], s.orphans[i+1:]...)
			if m.Failure == FailNone {
				for _, t := range b.tokens {
					out = append(out, Confirm{Token: t, RepliesOnly: true})
				}
			}
			return s.maybeRelease(out)
		}
	}
	var b *batch
	for _, x := range s.inflight {
		if x.id == m.Batch {
			b = x
		}
	}
	if b == nil {
		return out
	}
	switch m.Failure {
	case FailNone:
	case FailFenced:
		return s.halt(HaltFenced, out)
	default:
		// Memory is ahead of the journal: drop it and read the journal
		// back, as a restart would.
		out = logf(out, slog.LevelError, "journal append failed; recovering from the journal", "failure", m.Failure, "seq", b.lastSeq)
		return s.recover(now, out)
	}
	s.durableSeq = max(s.durableSeq, b.lastSeq)
	for len(s.inflight) > 0 && s.inflight[0].lastSeq <= s.durableSeq {
		for _, t := range s.inflight[0].tokens {
			out = append(out, Confirm{Token: t})
		}
		s.inflight = s.inflight[1:]
	}
	n := 0
	for n < len(s.barriers) && s.barriers[n].seq <= s.durableSeq {
		out = append(out, Confirm{Token: s.barriers[n].token})
		n++
	}
	s.barriers = s.barriers[n:]
	return out
}

// stop writes the open batch and releases the lease once every append in
// flight is answered, so that none of this activation's writes lands after
// the successor took its epoch.
func (s *Session) stop(out []effect.Effect) []effect.Effect {
	if s.phase == PhaseStopped && !s.leaseHeld {
		return out
	}
	if s.phase == PhaseRunning && s.building != nil {
		out = s.flush(out)
	}
	s.phase = PhaseStopped
	s.orphan()
	out = s.stopTimers(out)
	s.release = s.leaseHeld
	return s.maybeRelease(out)
}

func (s *Session) maybeRelease(out []effect.Effect) []effect.Effect {
	if !s.release || len(s.orphans) > 0 {
		return out
	}
	s.release, s.leaseHeld = false, false
	return append(out, Release{})
}
