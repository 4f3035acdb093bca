package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// The runtime's lease (WithLease): taken before the epoch, kept while the
// runtime recovers and serves, released when it stops. Journal calls of the
// recovery run on the actor's goroutine like the rest of recovery; the
// renewals of a serving runtime run off it (offActor) and come back as
// messages.

// guardOK reports what the lease guard says (true without one).
func (r *Runtime) guardOK() bool { return r.cfg.leaseGuard == nil || r.cfg.leaseGuard() }

// takeLease asks the journal for the lease. It returns how long to wait
// before asking again, or 0 when the lease is this activation's.
func (r *Runtime) takeLease() (time.Duration, error) {
	ttl := r.cfg.leaseTTL
	if !r.guardOK() {
		if r.waitingFor != guardWait {
			r.waitingFor = guardWait
			r.log.Info("the lease guard reports this node cut off; waiting before taking the lease", "poll_every", ttl/3)
		}
		return ttl / 3, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.journalTimeout)
	defer cancel()
	start := r.cfg.clock.Now()
	st, err := r.j.Lease(ctx, r.stream, r.holder, ttl)
	switch {
	case err == nil:
		r.leaseHeld, r.leaseDeadline = true, start.Add(ttl)
		if r.waitingFor != "" {
			r.log.Info("took the lease", "holder", r.holder, "ttl", ttl)
		}
		r.waitingFor = ""
		return 0, nil
	case errors.Is(err, ErrLeaseHeld):
		r.leaseHeld = false
		if st.Holder != r.waitingFor {
			// Once per holder: the wait is re-read every time the holder's
			// lease may have lapsed, and a holder that renews is the normal
			// case, not news.
			r.waitingFor = st.Holder
			r.log.Info("another activation holds the lease; waiting for it to lapse or be released",
				"lease_holder", st.Holder, "remaining", st.Remaining)
		} else {
			r.log.Debug("the lease is still held", "lease_holder", st.Holder, "remaining", st.Remaining)
		}
		// Re-read when the lease may have lapsed, and at least every ttl/3:
		// a holder that stops releases its lease, and the successor should
		// not wait out the time that was left.
		return min(st.Remaining+leaseRetrySlack, ttl/3), nil
	default:
		return 0, err
	}
}

// loadKeepingLease runs load. With a lease, a goroutine renews it every
// ttl/3 meanwhile: the actor is blocked in load, and a replay longer than
// the ttl would otherwise hand the lease to a waiting activation, which
// would fence this one and replay in turn. It returns an error wrapping
// ErrLeaseHeld if another holder took the lease all the same.
func (r *Runtime) loadKeepingLease() error {
	if r.cfg.leaseTTL <= 0 {
		return r.load()
	}
	stop := r.keepLease()
	err := r.load()
	renewed, lost := stop()
	if lost != nil {
		return fmt.Errorf("persistence: renew the lease of %q during recovery: %w", r.stream, lost)
	}
	if !renewed.IsZero() {
		r.leaseDeadline = renewed.Add(r.cfg.leaseTTL)
	}
	return err
}

// keepLease renews the lease every ttl/3, on a goroutine of its own, until
// stop is called; stop returns the start of the last renewal that was
// granted (zero if none) and the refusal if another holder took the lease.
// The goroutine touches no actor state: stop hands its results over.
func (r *Runtime) keepLease() (stop func() (renewed time.Time, lost error)) {
	j, stream, holder, clk := r.j, r.stream, r.holder, r.cfg.clock
	ttl, timeout := r.cfg.leaseTTL, min(r.cfg.leaseTTL, r.cfg.journalTimeout)
	done, finished := make(chan struct{}), make(chan struct{})
	var renewed time.Time // written by the goroutine, read after finished
	var lost error        // likewise
	go func() {
		defer close(finished)
		tick := clk.NewTimer(ttl / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C():
			}
			start := clk.Now()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			_, err := j.Lease(ctx, stream, holder, ttl)
			cancel()
			switch {
			case err == nil:
				renewed = start
			case errors.Is(err, ErrLeaseHeld):
				lost = err
				return
			}
			tick.Reset(ttl / 3)
		}
	}()
	return func() (time.Time, error) {
		close(done)
		<-finished
		return renewed, lost
	}
}

// armLease starts the renewals of a runtime that has just recovered.
func (r *Runtime) armLease() {
	if r.cfg.leaseTTL <= 0 {
		return
	}
	r.armRenewal()
	r.armDeadline()
}

func (r *Runtime) armRenewal() {
	gen := r.gen
	r.renewTimer = r.cfg.clock.AfterFunc(r.cfg.leaseTTL/3, func() { r.root.Send(r.self, &renewTick{rt: r, gen: gen}) })
}

// armDeadline (re)arms the timer of the lease's local deadline.
func (r *Runtime) armDeadline() {
	if r.deadlineTimer != nil {
		r.deadlineTimer.Stop()
	}
	gen := r.gen
	r.deadlineTimer = r.cfg.clock.AfterFunc(max(r.leaseDeadline.Sub(r.cfg.clock.Now()), 0),
		func() { r.root.Send(r.self, &leaseExpiry{rt: r, gen: gen}) })
}

// renewLease renews the lease off the actor's goroutine, unless the guard
// reports the node cut off: then the actor stops, and Stop releases the
// lease once the open batch is written.
func (r *Runtime) renewLease(c actor.Context) {
	if !r.guardOK() {
		r.log.Warn("the lease guard reports this node cut off; stopping and releasing the lease so that another node's activation takes over")
		c.Stop(c.Self())
		return
	}
	j, stream, holder, ttl, gen := r.j, r.stream, r.holder, r.cfg.leaseTTL, r.gen
	start := r.cfg.clock.Now()
	// A renewal that takes longer than the ttl proves nothing anymore.
	r.offActor(min(ttl, r.cfg.journalTimeout), func(ctx context.Context) any {
		_, err := j.Lease(ctx, stream, holder, ttl)
		return &renewResult{rt: r, gen: gen, start: start, err: err}
	})
}

func (r *Runtime) onRenewResult(c actor.Context, m *renewResult) {
	switch {
	case m.err == nil:
		if d := m.start.Add(r.cfg.leaseTTL); d.After(r.leaseDeadline) {
			r.leaseDeadline = d
			r.armDeadline()
		}
	case errors.Is(m.err, ErrLeaseHeld):
		// The lease lapsed (this node paused, or its renewals failed for a
		// ttl) and another activation took it, and with it an epoch.
		r.fenced(c, fmt.Errorf("persistence: renew the lease of %q: %w", r.stream, m.err))
		return
	default:
		r.log.Warn("lease renewal failed; serving until the lease's deadline", "error", m.err,
			"deadline_in", r.leaseDeadline.Sub(r.cfg.clock.Now()))
	}
	r.armRenewal()
}

// onLeaseExpiry stops the actor once no renewal has succeeded for a ttl: the
// journal may have let the lease lapse, and another activation may take it.
func (r *Runtime) onLeaseExpiry(c actor.Context) {
	now := r.cfg.clock.Now()
	if now.Before(r.leaseDeadline) {
		return // a renewal moved the deadline; its timer is armed
	}
	r.log.Error("could not renew the lease for its whole ttl; stopping, since another activation may take it",
		"ttl", r.cfg.leaseTTL, "late_by", now.Sub(r.leaseDeadline))
	r.halt(c)
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
