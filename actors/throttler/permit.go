package throttler

import (
	"fmt"
	"log/slog"
	"time"
)

// Permit is the right to hand out one unit of rate-limited work at any time t
// with NotBefore <= t <= NotAfter. An Issuer grants permits in batches to
// remote callers (for example the master shards of a cluster), which spend
// them locally; a permit not spent by NotAfter is lost, never carried over.
//
// Times are absolute and read from the Issuer's clock: the guarantee holds
// across processes only as far as their clocks agree (skew adds to the
// bound, see Issuer).
type Permit struct {
	// NotBefore is the earliest time the permit may be spent.
	NotBefore time.Time
	// NotAfter is the latest time the permit may be spent.
	NotAfter time.Time
}

// Default permit settings for NewIssuer.
const (
	// DefaultLeaseDiv sets how long a ModeSlidingWindow permit stays valid
	// after its NotBefore by default: Per/DefaultLeaseDiv.
	DefaultLeaseDiv = 100
	// DefaultHorizonDiv sets how far ahead of now a ModeSlidingWindow
	// permit may start: Per/DefaultHorizonDiv.
	DefaultHorizonDiv = 4
	// DefaultMaxBatchDiv caps one grant at max(1, Calls/DefaultMaxBatchDiv)
	// permits so that several callers share the rate fairly.
	DefaultMaxBatchDiv = 10
)

// IssuerOption configures NewIssuer.
type IssuerOption func(*issuerConfig) error

type issuerConfig struct {
	mode     Mode
	lease    time.Duration // 0: Per/DefaultLeaseDiv
	horizon  time.Duration // 0: Per/DefaultHorizonDiv
	maxBatch int           // 0: Calls/DefaultMaxBatchDiv
	log      *slog.Logger  // IssuerProps' actor only; nil: the actor system's
}

// WithIssuerLogger sets the logger of the actor IssuerProps makes (default:
// its actor system's). The Issuer itself logs nothing.
func WithIssuerLogger(l *slog.Logger) IssuerOption {
	return func(c *issuerConfig) error {
		c.log = l
		return nil
	}
}

// WithIssuerMode selects ModeTimer (default: Calls permits per period, each
// valid until its period ends) or ModeSlidingWindow (strict: no window of
// Per holds more than Calls spends). ModeTokenBucket is refused.
func WithIssuerMode(m Mode) IssuerOption {
	return func(c *issuerConfig) error {
		if m != ModeTimer && m != ModeSlidingWindow {
			return fmt.Errorf("%w: WithIssuerMode(%s), want ModeTimer or ModeSlidingWindow", ErrInvalidOption, m)
		}
		c.mode = m
		return nil
	}
}

// WithLease sets how long a ModeSlidingWindow permit is valid (default
// Per/100). The strict mode grants at most Calls permits per Per+lease, so
// a shorter lease gives more throughput and asks callers to spend promptly.
func WithLease(d time.Duration) IssuerOption {
	return func(c *issuerConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithLease(%s), want a positive duration", ErrInvalidOption, d)
		}
		c.lease = d
		return nil
	}
}

// WithHorizon sets how far ahead of now a ModeSlidingWindow permit may start
// (default Per/4): callers hold future permits so that a round trip to the
// issuer does not stall them.
func WithHorizon(d time.Duration) IssuerOption {
	return func(c *issuerConfig) error {
		if d < 0 {
			return fmt.Errorf("%w: WithHorizon(%s), want zero or more", ErrInvalidOption, d)
		}
		c.horizon = d
		return nil
	}
}

// WithMaxBatch caps the permits of one grant (default max(1, Calls/10)).
func WithMaxBatch(n int) IssuerOption {
	return func(c *issuerConfig) error {
		if n < 1 {
			return fmt.Errorf("%w: WithMaxBatch(%d), want at least 1", ErrInvalidOption, n)
		}
		c.maxBatch = n
		return nil
	}
}

// Issuer is the pure permit-granting state of a cluster-wide rate limit: one
// Issuer per limited job type, owned by one actor. It reads no clock; callers
// pass now.
//
// Guarantees, with P = Rate.Per, C = Rate.Calls, L the lease, H the horizon:
//
//   - ModeTimer (the seed's timer throttler): time from Open() is cut into
//     periods of P; each period grants at most C permits, each valid only
//     until its period ends. Every aligned period holds at most C spends;
//     a sliding window of P at most 2C.
//   - ModeSlidingWindow (strict): permits start at most H ahead of now and
//     are valid for L; no two permits whose NotBefore lie within P+L of each
//     other exceed C, so no window [s, s+P) holds more than C spends.
//
// Activation: an Issuer grants nothing before Open() = start + P (ModeTimer)
// or start + P + H + L (ModeSlidingWindow). A predecessor that died before
// start granted nothing valid after its death + P (+ H + L), so the spends
// of the two activations never share a window of P: the bound above holds
// across failover, and the price is a dispatch gap of that hold-off plus the
// time the cluster takes to notice the death. Unspent permits of a caller
// that dies are lost: the rate is under-used, never exceeded.
type Issuer struct {
	rate     Rate
	mode     Mode
	lease    time.Duration
	horizon  time.Duration
	maxBatch int
	fixBatch bool // maxBatch came from WithMaxBatch
	open     time.Time

	// ModeTimer: the current period's start and grants in it.
	period time.Time
	used   int

	// ModeSlidingWindow: a strict limiter over NotBefore times at
	// Rate{C, P+L}, and the latest NotBefore granted.
	lim  *Limiter
	next time.Time
}

// NewIssuer returns an Issuer for rate, activated at start.
func NewIssuer(rate Rate, start time.Time, opts ...IssuerOption) (*Issuer, error) {
	cfg := issuerConfig{mode: ModeTimer}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	i := &Issuer{mode: cfg.mode, lease: cfg.lease, horizon: cfg.horizon, maxBatch: cfg.maxBatch, fixBatch: cfg.maxBatch > 0}
	if err := i.setRate(rate); err != nil {
		return nil, err
	}
	i.open = start.Add(i.holdOff())
	i.period = i.open
	return i, nil
}

func (i *Issuer) holdOff() time.Duration {
	if i.mode == ModeTimer {
		return i.rate.Per
	}
	return i.rate.Per + i.horizon + i.lease
}

func (i *Issuer) setRate(rate Rate) error {
	if err := rate.validateStrict(); err != nil {
		return err
	}
	i.rate = rate
	if !i.fixBatch {
		i.maxBatch = max(1, rate.Calls/DefaultMaxBatchDiv)
	}
	if i.mode != ModeSlidingWindow {
		return nil
	}
	if i.lease == 0 {
		i.lease = max(time.Nanosecond, rate.Per/DefaultLeaseDiv)
	}
	if i.horizon == 0 {
		i.horizon = rate.Per / DefaultHorizonDiv
	}
	wide := Rate{Calls: rate.Calls, Per: rate.Per + i.lease}
	if i.lim == nil {
		lim, err := NewLimiter(wide, WithMode(ModeSlidingWindow))
		if err != nil {
			return err
		}
		i.lim = lim
		return nil
	}
	return i.lim.SetRate(wide)
}

// Rate returns the current rate.
func (i *Issuer) Rate() Rate { return i.rate }

// Mode returns ModeTimer or ModeSlidingWindow.
func (i *Issuer) Mode() Mode { return i.mode }

// Open returns the time before which the Issuer grants nothing.
func (i *Issuer) Open() time.Time { return i.open }

// MaxBatch returns the most permits one Grant returns.
func (i *Issuer) MaxBatch() int { return i.maxBatch }

// SetRate changes the rate at now. ModeTimer: the current period keeps the
// grants it made and allows the new Calls in all (none more if it already
// granted that many). ModeSlidingWindow: as Limiter.SetRate, a window that
// straddles the change holds at most the larger of the two Calls. An invalid
// rate is refused and the old one kept.
func (i *Issuer) SetRate(rate Rate, now time.Time) error {
	i.roll(now)
	return i.setRate(rate)
}

// roll moves the ModeTimer period forward to the one holding now.
func (i *Issuer) roll(now time.Time) {
	if i.mode != ModeTimer || now.Before(i.open) {
		return
	}
	if k := now.Sub(i.period) / i.rate.Per; k > 0 {
		i.period = i.period.Add(k * i.rate.Per)
		i.used = 0
	}
}

// Grant returns up to want permits (at most MaxBatch) at now, and when the
// caller should ask again if it got fewer than it wanted.
func (i *Issuer) Grant(now time.Time, want int) (permits []Permit, again time.Time) {
	want = min(want, i.maxBatch)
	if want <= 0 {
		return nil, now
	}
	if now.Before(i.open) {
		return nil, i.open
	}
	if i.mode == ModeTimer {
		i.roll(now)
		end := i.period.Add(i.rate.Per)
		n := min(want, i.rate.Calls-i.used)
		if n <= 0 {
			return nil, end
		}
		i.used += n
		permits = make([]Permit, n)
		for k := range permits {
			permits[k] = Permit{NotBefore: now, NotAfter: end.Add(-1)}
		}
		return permits, now
	}
	t := now
	if t.Before(i.next) {
		t = i.next
	}
	limit := now.Add(i.horizon)
	for len(permits) < want {
		ok, wait := i.lim.Reserve(t)
		if !ok {
			t = t.Add(wait)
			if t.After(limit) {
				return permits, t.Add(-i.horizon)
			}
			continue
		}
		i.next = t
		permits = append(permits, Permit{NotBefore: t, NotAfter: t.Add(i.lease)})
	}
	return permits, now
}
