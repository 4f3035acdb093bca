package adaptive

import (
	"context"
	"fmt"
	"sync"
)

// Limiter is the plain-Go face of the tuner, for code that is not an actor:
// a worker node sizing its executor pool, an HTTP client bounding its calls.
// Acquire waits for a slot (at most Limit() are held at once), and Release
// reports the completion to the policy, which may change the limit.
//
//	lim, _ := adaptive.NewLimiter()
//	for work := range incoming {
//		permit, err := lim.Acquire(ctx)
//		if err != nil {
//			return err
//		}
//		go func() { defer permit.Release(); execute(work) }()
//	}
//
// Time spent waiting in Acquire counts as queueing, and the number of callers
// waiting tells the policy whether the limit is what holds work back (the
// default policy never raises the limit when nobody waits). A Limiter is
// safe for concurrent use.
type Limiter struct {
	opts   options
	mu     sync.Mutex     // guards core and closed
	core   *Core[*waiter] // guarded by mu
	closed bool           // guarded by mu
}

type waiter struct {
	ready chan Ticket // buffered 1; closed by Close when never granted
}

// Permit is a held slot. Call exactly one of Release or Abandon.
type Permit struct {
	lim    *Limiter
	ticket Ticket
	once   sync.Once
}

// NewLimiter returns a limiter driven by the configured policy.
func NewLimiter(opts ...Option) (*Limiter, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("adaptive: new limiter: %w", err)
	}
	return &Limiter{opts: o, core: NewCore[*waiter](o.newPolicy())}, nil
}

// Acquire waits until a slot is free, ctx is done (its error is returned) or
// the limiter is closed (ErrClosed).
func (l *Limiter) Acquire(ctx context.Context) (*Permit, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("adaptive: acquire: %w", err)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, ErrClosed
	}
	if st := l.core.Stats(); st.Queue == 0 && st.InFlight < st.Limit {
		// Fast path: a slot is free and nobody is ahead, so the push starts
		// this caller at once; no waiter or channel is needed.
		_, started := l.core.Push(l.opts.clock.Now(), nil)
		t := started[0].Ticket
		l.mu.Unlock()
		return &Permit{lim: l, ticket: t}, nil
	}
	w := &waiter{ready: make(chan Ticket, 1)}
	seq, started := l.core.Push(l.opts.clock.Now(), w)
	grant(started)
	l.mu.Unlock()
	select {
	case t, ok := <-w.ready:
		if !ok {
			return nil, ErrClosed
		}
		return &Permit{lim: l, ticket: t}, nil
	case <-ctx.Done():
		l.mu.Lock()
		cancelled := l.core.Cancel(seq)
		l.mu.Unlock()
		if !cancelled { // granted meanwhile: give the slot back
			if t, ok := <-w.ready; ok {
				l.abandon(t)
			}
		}
		return nil, fmt.Errorf("adaptive: acquire: %w", ctx.Err())
	}
}

// Limit returns the current limit: the size a worker pool should have now.
func (l *Limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.core.Stats().Limit
}

// Stats returns the number waiting, in flight, the limit and completions.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.core.Stats()
}

// Close makes every waiting and future Acquire return ErrClosed. Held
// permits may still be released.
func (l *Limiter) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	for _, w := range l.core.Drain() {
		close(w.ready)
	}
}

// Release frees the slot and teaches the policy from this completion. Extra
// calls do nothing.
func (p *Permit) Release() {
	p.once.Do(func() {
		cpu := p.lim.opts.readCPU()
		p.lim.mu.Lock()
		defer p.lim.mu.Unlock()
		grant(p.lim.core.Done(p.lim.opts.clock.Now(), p.ticket, cpu))
	})
}

// Abandon frees the slot without teaching the policy (the work did not
// run, so its timing says nothing). Extra calls do nothing.
func (p *Permit) Abandon() { p.once.Do(func() { p.lim.abandon(p.ticket) }) }

func (l *Limiter) abandon(t Ticket) {
	l.mu.Lock()
	defer l.mu.Unlock()
	grant(l.core.Abort(l.opts.clock.Now(), t))
}

// grant hands each started waiter its ticket. Only waiters that queued are
// started here (the fast path never leaves a nil waiter in the queue).
func grant(started []Start[*waiter]) {
	for _, s := range started {
		s.Job.ready <- s.Ticket
	}
}
