package throttler

import (
	"sync"
	"time"
)

// PermitPool is the caller's side of a throttler (PermitThrottlerProps): it holds the permits granted
// to one caller (for example one master shard) and spends them. Its Reserve
// has the signature of master.DispatchLimiter and never blocks: when the
// pool runs low it calls ask (which must only send a message, never wait)
// and the reply comes back through Add.
//
// The batch a pool asks for adapts to demand: it doubles (up to the throttler's
// cap) each time the pool runs dry while work waits, and halves when
// permits expire unspent, so a shard with little work holds few permits and
// shards that compete share the rate.
//
// A PermitPool is safe for concurrent use: Reserve runs on the master's
// goroutine, Add on whichever delivers the throttler's grants.
type PermitPool struct {
	ask     func(want int)
	report  func(uses []PermitUse) // nil: no reports
	timeout time.Duration

	mu      sync.Mutex // guards the fields below
	permits []Permit   // sorted by NotBefore
	want    int
	asked   bool
	grown   bool // want doubled since the last ask
	askedAt time.Time
	again   time.Time // the throttler's hint: nothing before this
	granted uint64
	denied  uint64
	expired uint64
	uses    []PermitUse // to report (strict permits spent or expired)
}

// DefaultAskTimeout is how long a pool waits for a reply before it asks
// again (the throttler may have moved to another node).
const DefaultAskTimeout = time.Second

// NewPermitPool returns a pool that asks for permits with ask. askTimeout
// <= 0 means DefaultAskTimeout.
func NewPermitPool(ask func(want int), askTimeout time.Duration) *PermitPool {
	if askTimeout <= 0 {
		askTimeout = DefaultAskTimeout
	}
	return &PermitPool{ask: ask, timeout: askTimeout, want: 1}
}

// ReportUses makes the pool report what became of each strict permit (one
// with a Seq) to its throttler through report: spent at the time Reserve
// spent it, or expired unspent. The strict throttler anchors later permits
// on these times (PermitCore.Used). report is called outside the pool's lock,
// on Reserve's goroutine, and must only send a message, never wait. Call it
// before the pool is used.
func (p *PermitPool) ReportUses(report func(uses []PermitUse)) { p.report = report }

// Add stores the permits of one reply; again is the throttler's hint of when to
// ask next if the grant fell short.
func (p *PermitPool) Add(permits []Permit, again time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = false
	p.again = again
	for _, q := range permits {
		k := len(p.permits)
		for k > 0 && p.permits[k-1].NotBefore.After(q.NotBefore) {
			k--
		}
		p.permits = append(p.permits, Permit{})
		copy(p.permits[k+1:], p.permits[k:])
		p.permits[k] = q
	}
}

// Reserve spends a permit valid at now and returns true, or returns false and
// how long until one may be: the master re-plans after that.
func (p *PermitPool) Reserve(now time.Time) (bool, time.Duration) {
	p.mu.Lock()
	ok, wait, ask := p.reserveLocked(now)
	var uses []PermitUse
	if len(p.uses) > 0 && p.report != nil {
		uses = p.uses
		p.uses = nil
	}
	p.mu.Unlock()
	if uses != nil {
		// Sent at once, each spend on its own: the throttler anchors the
		// permit a window later on it, so a report held back costs rate.
		p.report(uses)
	}
	if ask > 0 {
		p.ask(ask) // outside the lock: ask may deliver a reply at once
	}
	return ok, wait
}

// Sweep drops the permits expired at now and reports them (ReportUses), as
// Reserve does; a node calls it every few tens of milliseconds, so that a
// pool whose master has no more work to hand out frees the strict places
// of its permits soon after they expire, rather than leaving the throttler
// to count them as spent for a whole window. It never asks for permits.
func (p *PermitPool) Sweep(now time.Time) {
	p.mu.Lock()
	p.dropExpiredLocked(now)
	var uses []PermitUse
	if len(p.uses) > 0 && p.report != nil {
		uses = p.uses
		p.uses = nil
	}
	p.mu.Unlock()
	if uses != nil {
		p.report(uses)
	}
}

// maxWant bounds the batch a pool asks for; the throttler caps it at Calls.
const maxWant = 1 << 12

func (p *PermitPool) reserveLocked(now time.Time) (ok bool, wait time.Duration, ask int) {
	p.dropExpiredLocked(now)
	// Sorted by NotBefore: only the first permit can be valid first.
	if len(p.permits) > 0 && !p.permits[0].NotBefore.After(now) {
		if q := p.permits[0]; q.Seq != 0 && p.report != nil {
			p.uses = append(p.uses, PermitUse{Seq: q.Seq, Spent: now})
		}
		p.permits = p.permits[1:]
		p.granted++
		if len(p.permits) < max(1, p.want/2) {
			ask = p.askLocked(now)
		}
		return true, 0, ask
	}
	p.denied++
	if !p.grown {
		// Dry while work waits: nothing held, or (strict mode) only
		// permits that start later. What the pool asks for does not
		// cover the time from an ask to its grant (the journal's write
		// and two trips; in strict mode StrictLead too), so ask for more:
		// once per ask, whether or not an ask is in flight (an ask in
		// flight that leaves the pool dry was too small or too late).
		p.want = min(2*p.want, maxWant)
		p.grown = true
	}
	ask = p.askLocked(now)
	wait = p.timeout / 10
	if len(p.permits) > 0 {
		wait = p.permits[0].NotBefore.Sub(now)
	} else if d := p.again.Sub(now); d > 0 {
		wait = min(d, p.timeout)
	}
	return false, max(wait, time.Millisecond), ask
}

// askLocked returns how many permits to ask for now, 0 for none: one ask
// is in flight at a time, a lost one is repeated after the timeout, and the
// throttler's hint is respected.
func (p *PermitPool) askLocked(now time.Time) int {
	if p.asked && now.Sub(p.askedAt) < p.timeout {
		return 0
	}
	if !p.asked && now.Before(p.again) {
		return 0
	}
	p.asked, p.askedAt, p.grown = true, now, false
	return p.want
}

// PoolStats counts what a pool did.
type PoolStats struct {
	// Granted is the number of Reserve calls that spent a permit.
	Granted uint64
	// Denied is the number of Reserve calls that found none.
	Denied uint64
	// Expired is the number of permits dropped unspent.
	Expired uint64
	// Held is the number of permits held now.
	Held int
}

// Stats returns the pool's counters.
func (p *PermitPool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolStats{Granted: p.granted, Denied: p.denied, Expired: p.expired, Held: len(p.permits)}
}

// dropExpiredLocked drops the permits expired at now (reporting strict
// ones); many expiring means the pool asked for too much, so it halves
// what it asks for.
func (p *PermitPool) dropExpiredLocked(now time.Time) {
	drop := 0
	for _, q := range p.permits {
		if q.NotAfter.Before(now) {
			drop++
		}
	}
	if drop > 0 {
		kept := p.permits[:0]
		for _, q := range p.permits {
			if !q.NotAfter.Before(now) {
				kept = append(kept, q)
			} else if q.Seq != 0 && p.report != nil {
				p.uses = append(p.uses, PermitUse{Seq: q.Seq})
			}
		}
		p.permits = kept
		p.expired += uint64(drop)
		p.want = max(1, p.want/2)
	}
}
