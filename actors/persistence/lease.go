package persistence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/persistence/core"
)

// The runtime's lease (WithLease): taken on the actor's goroutine, as the
// first step of recovery; from then on a keeper renews it off the actor's
// goroutine, through the rest of recovery and while the runtime serves,
// until the runtime recovers again or stops; Stop releases it.
//
// Why a keeper and not a renewal message per tick: a renewal that waits
// for its turn in the mailbox of a busy actor (thousands of queued Work
// messages under load), and whose result waits again, misses the deadline
// even when the journal answered in time (seen in a loaded test run). The
// keeper keeps the lease's deadline itself and tells the actor only what
// ends its service.
//
// Exclusivity. The journal grants a lease for ttl from when the call
// reaches it, on its own clock; a waiting activation is granted the lease
// only once that has passed. The holder serves (Recovered is true: it hands
// out work, answers status) only until its local deadline: the start of the
// last granted call, which is before the journal received it, plus the ttl,
// minus the drift margin (core.Margin), checked against the clock at every
// question, not when a timer's message gets through the mailbox. A renewal
// counts only if its answer came back before that deadline: one answered
// later may have been granted after the lease lapsed, when another
// activation could have served in between, so the runtime recovers under a
// new epoch instead of serving on from what it remembers. So the holder's
// last instant of service comes before the journal's expiry, and the
// successor's first after it, whenever the two clocks' rates differ by less
// than the margin. The decisions are core.Holder's; the keeper carries
// them out with goroutines and the injected clock.

// leaseKeeper renews one grant of the lease every ttl/3: a timer on the
// injected clock starts one renewal call on a goroutine of its own, which
// arms the next timer when it is done. Nothing runs between calls, so a
// keeper whose actor system was shut down without stopping the actor ends
// at its next tick.
type leaseKeeper struct {
	rt *Runtime        // identifies the runtime in messages; its fields belong to the actor's goroutine
	wg *sync.WaitGroup // the runtime's: counts the calls in flight
	// What the calls need, copied from the runtime when the lease was
	// granted.
	j              Journal
	stream, holder string
	gen            int64
	ttl            time.Duration
	timeout        time.Duration // of one call: a renewal longer than the ttl proves nothing
	clock          clock.Clock
	guard          func() bool
	log            *slog.Logger
	root           *actor.RootContext
	self           *actor.PID

	// base is when the keeper was made: deadline counts from it, so that a
	// real clock's deadline keeps its monotonic reading (a wall clock
	// stepped back must not lengthen the lease).
	base time.Time
	// deadline is h.ServingUntil() as an offset from base, published after
	// every change of h so that the actor's Recovered reads it without a
	// lock; written by the calls (and at creation), read by the actor.
	deadline atomic.Int64
	// hold is the ttl renewals ask for while a long write runs (holdFor),
	// 0 otherwise; set off the actor by that write's goroutine.
	hold atomic.Int64

	mu      sync.Mutex
	h       core.Holder // guarded by mu: the lease's decisions
	stopped bool        // guarded by mu; a call starts only while false
	timer   clock.Timer // guarded by mu: the next tick
	lost    error       // guarded by mu: the refusal, once another holder took the lease
}

// stop ends the keeper: no call starts after it returns. A call in flight
// finishes (Stop waits for it through the runtime's wg).
func (k *leaseKeeper) stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stopped = true
	if k.timer != nil {
		k.timer.Stop()
	}
}

// until returns the lease's local serving deadline.
func (k *leaseKeeper) until() time.Time { return k.base.Add(time.Duration(k.deadline.Load())) }

// live reports whether now is before the serving deadline: the Holder's
// Serving, read without its lock.
func (k *leaseKeeper) live(now time.Time) bool { return now.Before(k.until()) }

// publish stores h's serving deadline for live. k.mu must be held.
func (k *leaseKeeper) publish() { k.deadline.Store(int64(k.h.ServingUntil().Sub(k.base))) }

// granted records a granted Lease call that started at start and asked for
// ttl (core.Holder.Granted): it extends the deadline when its answer came
// before the deadline, and otherwise marks the lease regained and reports
// false.
func (k *leaseKeeper) granted(start time.Time, ttl time.Duration) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	ok := k.h.Granted(k.clock.Now(), start, ttl)
	k.publish()
	return ok
}

// onDeadline asks the Holder what to do now that the deadline timer fired.
func (k *leaseKeeper) onDeadline(now time.Time) (core.DeadlineAction, time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	act, at := k.h.OnDeadline(now)
	k.publish()
	return act, at
}

// lostTo returns the refusal if another holder took the lease.
func (k *leaseKeeper) lostTo() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lost
}

// arm schedules the next tick after d, unless the keeper was stopped.
func (k *leaseKeeper) arm(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.stopped {
		k.timer = k.clock.AfterFunc(d, k.tick)
	}
}

// tick starts one renewal call. The call is counted in the runtime's wg
// under mu while the keeper runs, so every Add happens before Stop's Wait.
func (k *leaseKeeper) tick() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped || k.root.ActorSystem().IsStopped() {
		return
	}
	k.wg.Add(1)
	go k.renew()
}

// renew asks the lease guard, renews the lease, records the outcome and
// arms the next tick, or tells the actor what ends its service.
func (k *leaseKeeper) renew() {
	defer k.wg.Done()
	if k.guard != nil && !k.guard() {
		k.root.Send(k.self, &leaseCut{rt: k.rt, gen: k.gen})
		return
	}
	start := k.clock.Now()
	ttl := k.ttl
	if h := time.Duration(k.hold.Load()); h > ttl {
		ttl = h // a long write is under way (holdFor)
	}
	ctx, cancel := context.WithTimeout(context.Background(), k.timeout)
	_, err := k.j.Lease(ctx, k.stream, k.holder, ttl)
	cancel()
	switch {
	case err == nil:
		if !k.granted(start, ttl) {
			// Answered after the deadline: the actor no longer serves, and
			// recovers under a new epoch (onLeaseExpiry); the renewals go
			// on meanwhile, so the lease stays its own.
			k.root.Send(k.self, &leaseExpiry{rt: k.rt, gen: k.gen})
		}
	case errors.Is(err, ErrLeaseHeld):
		// The lease lapsed (this process paused, or its renewals failed for
		// a ttl) and another activation took it, and with it an epoch.
		k.mu.Lock()
		k.lost = err
		k.mu.Unlock()
		k.root.Send(k.self, &leaseLost{rt: k.rt, gen: k.gen, err: fmt.Errorf("persistence: renew the lease of %q: %w", k.stream, err)})
		return
	case errors.Is(err, ErrClosed):
		return // the journal is gone; the deadline stops the actor
	default:
		k.log.Warn("lease renewal failed; serving until the lease's deadline", "error", err, "deadline", k.until())
	}
	// Every ttl/3 from the start of the last call; at once if that call
	// took longer.
	k.arm(core.NextRenewal(start, k.clock.Now(), k.ttl))
}

// holdFor renews the lease for d instead of the ttl, before journal writes
// long enough to hold up the renewals queued behind them for more than a
// ttl (a big snapshot and the deletion of the events it covers), and makes
// every renewal ask for d until release: one that slips in between two long
// writes must not shorten the lease before the second. A failed call
// changes nothing (the writes go ahead; epochs fence them if the lease was
// lost).
func (k *leaseKeeper) holdFor(ctx context.Context, d time.Duration) {
	k.hold.Store(int64(d))
	start := k.clock.Now()
	if _, err := k.j.Lease(ctx, k.stream, k.holder, d); err != nil {
		k.log.Warn("could not lengthen the lease before a long journal write", "error", err, "for", d)
		return
	}
	if !k.granted(start, d) {
		k.root.Send(k.self, &leaseExpiry{rt: k.rt, gen: k.gen})
		return
	}
	k.log.Debug("lengthened the lease for a long journal write", "for", d)
}

// release ends holdFor: the next renewal asks for the ttl again.
func (k *leaseKeeper) release() { k.hold.Store(0) }

// guardOK reports what the lease guard says (true without one).
func (r *Runtime) guardOK() bool { return r.cfg.leaseGuard == nil || r.cfg.leaseGuard() }

// takeLease asks the journal for the lease, on the actor's goroutine like
// the rest of recovery, and starts the keeper once it is granted. It returns
// how long to wait before asking again, or 0 when the lease is this
// activation's.
func (r *Runtime) takeLease() (time.Duration, error) {
	ttl := r.cfg.leaseTTL
	if !r.guardOK() {
		if r.waitingFor != guardWait {
			r.waitingFor = guardWait
			r.log.Info("the lease guard reports this node cut off; waiting before taking the lease", "poll_every", core.RenewEvery(ttl))
		}
		return core.RenewEvery(ttl), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.journalTimeout)
	defer cancel()
	start := r.cfg.clock.Now()
	st, err := r.j.Lease(ctx, r.stream, r.holder, ttl)
	switch {
	case err == nil:
		r.leaseHeld = true
		r.waitingSince = time.Time{}
		if r.waitingFor != "" {
			r.log.Info("took the lease", "holder", r.holder, "ttl", ttl)
		}
		r.waitingFor = ""
		r.startKeeper(start)
		return 0, nil
	case errors.Is(err, ErrLeaseHeld):
		r.leaseHeld = false
		if st.Holder != r.waitingFor {
			// Once per holder: the lease is re-read every few moments, and
			// a holder that keeps renewing is the normal case, not news.
			r.waitingFor = st.Holder
			r.log.Info("another activation holds the lease; waiting for it to lapse or be released",
				"lease_holder", st.Holder, "remaining", st.Remaining)
		} else {
			r.log.Debug("the lease is still held", "lease_holder", st.Holder, "remaining", st.Remaining)
		}
		// Re-read when the lease may have lapsed, and at least every ttl/3:
		// a holder that stops releases its lease, and the successor should
		// not wait out the time that was left.
		return core.LeaseWait(st.Remaining, ttl), nil
	default:
		return 0, err
	}
}

// yieldLease stops the actor when it has waited for the lease for the
// max wait (WithLeaseMaxWait) and reports whether it did.
func (r *Runtime) yieldLease(c actor.Context) bool {
	now := r.cfg.clock.Now()
	if r.waitingSince.IsZero() {
		r.waitingSince = now
	}
	if !core.Yield(r.waitingSince, now, r.cfg.leaseMaxWait) {
		return false
	}
	r.log.Info("the lease stayed with another activation that keeps it; this one yields and stops",
		"lease_holder", r.waitingFor, "waited", now.Sub(r.waitingSince))
	r.halt(c)
	return true
}

// loadKeepingLease runs load. The keeper renews the lease meanwhile: the
// actor is blocked in load, and a replay longer than the ttl would otherwise
// hand the lease to a waiting activation, which would fence this one and
// replay in turn. It returns an error wrapping ErrLeaseHeld if another
// holder took the lease all the same.
func (r *Runtime) loadKeepingLease() error {
	err := r.load()
	if r.keeper != nil {
		if lost := r.keeper.lostTo(); lost != nil {
			return fmt.Errorf("persistence: renew the lease of %q during recovery: %w", r.stream, lost)
		}
	}
	return err
}

// startKeeper starts renewing the lease granted by the call that began at
// granted. The keeper touches no actor state: it keeps its own deadline,
// and sends the actor leaseLost or leaseCut, which end its service.
func (r *Runtime) startKeeper(granted time.Time) {
	r.stopKeeper()
	ttl := r.cfg.leaseTTL
	k := &leaseKeeper{
		rt: r, wg: &r.wg, j: r.j, stream: r.stream, holder: r.holder, gen: r.gen,
		ttl: ttl, timeout: min(ttl, r.cfg.journalTimeout), clock: r.cfg.clock, guard: r.cfg.leaseGuard,
		log: r.log, root: r.root, self: r.self, base: granted,
		// A new grant has a last chance of its own.
		h: core.NewHolder(core.HolderConfig{TTL: ttl}, granted),
	}
	k.publish()
	r.keeper = k
	k.arm(core.RenewEvery(ttl))
}

// stopKeeper ends the keeper, if any, without waiting for its call in
// flight (Stop waits for it through wg).
func (r *Runtime) stopKeeper() {
	if r.keeper != nil {
		r.keeper.stop()
		r.keeper = nil
	}
}

// armLease arms the lease's local deadline once the runtime serves.
func (r *Runtime) armLease() {
	if r.keeper != nil {
		r.armDeadline(r.keeper.until())
	}
}

func (r *Runtime) armDeadline(at time.Time) {
	gen := r.gen
	r.deadlineTimer = r.cfg.clock.AfterFunc(max(at.Sub(r.cfg.clock.Now()), 0),
		func() { r.root.Send(r.self, &leaseExpiry{rt: r, gen: gen}) })
}

// leaseLive reports whether the runtime may serve on its lease now: it
// holds none (WithLease off), or now is before the keeper's deadline.
func (r *Runtime) leaseLive() bool {
	return r.keeper == nil || r.keeper.live(r.cfg.clock.Now())
}

// onLeaseExpiry handles the lease's serving deadline. Since the deadline
// passed, Recovered has been false (leaseLive): the actor decides nothing,
// and holds or turns away what it is asked. If the keeper renewed the lease
// in time meanwhile, it serves on. Otherwise it renews at once and gives
// that renewal a third of the ttl: granted, the lease is this activation's
// again, but it may have lapsed in between and another activation may have
// served, so the runtime recovers under a new epoch (fencing that other
// one's writes, and reading them) before it serves again; refused, another
// took it and the actor stops; unanswered, the actor stops.
//
// The last chance is for a pause: a process stopped for longer than the
// ttl (a GC pause, SIGSTOP, a starved machine) wakes with its deadline
// passed and its renewal not yet made. It costs it a recovery, not its
// activation.
func (r *Runtime) onLeaseExpiry(c actor.Context) {
	if r.keeper == nil {
		return
	}
	now, until := r.cfg.clock.Now(), r.keeper.until()
	switch act, at := r.keeper.onDeadline(now); act {
	case core.DeadlineRearm:
		r.armDeadline(at) // renewed since the timer was armed
	case core.DeadlineRecover:
		r.log.Warn("took the lease again after its deadline; it may have lapsed meanwhile, so recovering under a new epoch before serving",
			"ttl", r.cfg.leaseTTL, "late_by", now.Sub(until))
		r.recover(c)
	case core.DeadlineLastChance:
		r.log.Warn("the lease's deadline passed without a renewal; not serving, renewing at once", "ttl", r.cfg.leaseTTL, "late_by", now.Sub(until))
		r.keeper.tick()
		r.armDeadline(at)
	default:
		r.log.Error("could not renew the lease for its whole ttl; stopping, since another activation may take it",
			"ttl", r.cfg.leaseTTL, "late_by", now.Sub(until))
		r.halt(c)
	}
}

// cutOff stops the actor because the lease guard reports the node cut off;
// Stop then writes the open batch and releases the lease, so that another
// node's activation takes over at once.
func (r *Runtime) cutOff(c actor.Context) {
	r.log.Warn("the lease guard reports this node cut off; stopping and releasing the lease so that another node's activation takes over")
	c.Stop(c.Self())
}

// releaseLease ends this activation's lease at once, if it holds one. It
// waits at most the ttl: an unreleased lease lapses by then anyway.
func (r *Runtime) releaseLease() {
	if !r.leaseHeld {
		return
	}
	r.leaseHeld = false
	ctx, cancel := context.WithTimeout(context.Background(), min(r.cfg.leaseTTL, r.cfg.journalTimeout))
	defer cancel()
	if err := r.j.ReleaseLease(ctx, r.stream, r.holder); err != nil {
		r.log.Warn("could not release the lease; a successor waits for it to lapse", "error", err, "ttl", r.cfg.leaseTTL)
		return
	}
	r.log.Info("released the lease", "holder", r.holder)
}
