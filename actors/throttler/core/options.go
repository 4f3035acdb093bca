package core

import "fmt"

// Mode selects how a throttler decides that a delivery may happen now.
type Mode uint8

const (
	// ModeTimer is seed 002's timer-based throttler: a timer restores Calls
	// vouchers every Per while the throttler is Active. Only the timer's own
	// intervals are guaranteed to hold at most Calls deliveries.
	ModeTimer Mode = iota + 1
	// ModeSlidingWindow is strict: it keeps the times of the last Calls
	// deliveries and delivers only when no window of length Per, wherever it
	// starts, would hold more than Calls deliveries. Bursts of up to Calls
	// go out at once.
	ModeSlidingWindow
	// ModeTokenBucket is strict and paced: a token bucket refilled at
	// Calls/Per with room for Burst tokens spreads deliveries evenly, and the
	// sliding-window guarantee of ModeSlidingWindow still holds on top.
	ModeTokenBucket
)

// String returns the mode's name.
func (m Mode) String() string {
	switch m {
	case ModeTimer:
		return "timer"
	case ModeSlidingWindow:
		return "sliding_window"
	case ModeTokenBucket:
		return "token_bucket"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// strict reports whether m is one of the strict modes.
func (m Mode) strict() bool { return m == ModeSlidingWindow || m == ModeTokenBucket }

// ParseMode turns "timer", "sliding_window" (or "window") and "token_bucket"
// (or "bucket") into a Mode.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "timer":
		return ModeTimer, nil
	case "sliding_window", "window":
		return ModeSlidingWindow, nil
	case "token_bucket", "bucket":
		return ModeTokenBucket, nil
	}
	return 0, fmt.Errorf("%w: mode %q, want timer, sliding_window or token_bucket", ErrInvalidOption, s)
}

// Overflow is what happens to a message that arrives while the queue holds
// MaxQueue messages.
type Overflow uint8

const (
	// OverflowReject refuses the arriving message: its sender gets a
	// *Rejected reply carrying ErrQueueFull.
	OverflowReject Overflow = iota + 1
	// OverflowDropOldest drops the message at the head of the queue (the
	// oldest) to make room for the arriving one.
	OverflowDropOldest
	// OverflowDropNewest silently drops the arriving message.
	OverflowDropNewest
)

// String returns the policy's name.
func (o Overflow) String() string {
	switch o {
	case OverflowReject:
		return "reject"
	case OverflowDropOldest:
		return "drop_oldest"
	case OverflowDropNewest:
		return "drop_newest"
	}
	return fmt.Sprintf("Overflow(%d)", uint8(o))
}

// Defaults used for options that are not given.
const (
	// DefaultMode is the seed's timer-based mode.
	DefaultMode = ModeTimer
	// DefaultBurst is the token bucket's burst: deliveries are evenly spaced.
	DefaultBurst = 1
	// DefaultMaxQueue bounds the queue of messages waiting for delivery.
	DefaultMaxQueue = 10_000
	// DefaultOverflow rejects messages that arrive at a full queue.
	DefaultOverflow = OverflowReject
	// MaxStrictCalls is the largest Rate.Calls a strict mode accepts: a
	// strict mode remembers the time of each of the last Calls deliveries.
	MaxStrictCalls = 1 << 20
)

// config holds every setting; options fill it over the defaults.
type config struct {
	mode     Mode
	burst    int
	slices   int
	maxQueue int
	overflow Overflow
}

func defaultConfig() config {
	return config{
		mode:     DefaultMode,
		burst:    DefaultBurst,
		maxQueue: DefaultMaxQueue,
		overflow: DefaultOverflow,
	}
}

func newConfig(cfg config, opts []Option) (config, error) {
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return config{}, err
		}
	}
	if cfg.slices > 1 && cfg.mode != ModeSlidingWindow {
		return config{}, fmt.Errorf("%w: WithSlices(%d) needs ModeSlidingWindow, mode is %s", ErrInvalidOption, cfg.slices, cfg.mode)
	}
	if cfg.burst > 1 && cfg.mode != ModeTokenBucket {
		return config{}, fmt.Errorf("%w: WithBurst(%d) needs ModeTokenBucket, mode is %s", ErrInvalidOption, cfg.burst, cfg.mode)
	}
	return cfg, nil
}

// Option configures an FSM (NewFSM) or a Limiter (NewLimiter). Options
// that do not apply to what is being built are ignored. The throttler
// actor (actors/throttler) has options of its own that wrap these.
type Option func(*config) error

// WithMode selects the delivery mode (default DefaultMode for throttlers,
// ModeSlidingWindow for a Limiter).
func WithMode(m Mode) Option {
	return func(c *config) error {
		if m != ModeTimer && !m.strict() {
			return fmt.Errorf("%w: WithMode(%s), want ModeTimer, ModeSlidingWindow or ModeTokenBucket", ErrInvalidOption, m)
		}
		c.mode = m
		return nil
	}
}

// WithBurst sets how many deliveries ModeTokenBucket may make at once
// (default DefaultBurst); 1 <= n, and n is capped at Rate.Calls.
//
// With burst 1 every delivery waits a full Rate.Interval after the previous
// actual delivery, so timer latency adds up under a backlog: the achieved
// rate falls short by about latency/Interval (measured -20% at 500/s on a
// loaded 2-core machine, negligible at 10/min). A burst of n absorbs
// latency up to (n-1)*Interval and keeps the long-run rate (BENCH.md).
func WithBurst(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("%w: WithBurst(%d), want at least 1", ErrInvalidOption, n)
		}
		c.burst = n
		return nil
	}
}

// WithSlices paces ModeSlidingWindow: besides at most Calls deliveries in
// any window of Per, at most ceil(Calls/n) in any window of the matching
// share of Per (Per*ceil(Calls/n)/Calls), so a backlog is delivered a slice
// at a time, n slices a window, rather than as one burst of Calls. The
// bound is unchanged; what changes is the shape: at 100/s with 10 slices,
// 10 every 100 ms instead of 100 at once and nothing for the rest of the
// second, so a downstream sees no burst above a tenth of the rate and a
// throttler that moves (a failover) leaves a gap of a slice, not of a
// window. It also limits a burst after an idle spell to a slice. n <= 1
// (the default) does not slice.
func WithSlices(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("%w: WithSlices(%d), want 0 (no slices) or more", ErrInvalidOption, n)
		}
		c.slices = n
		return nil
	}
}

// WithMaxQueue bounds the number of messages waiting for delivery (default
// DefaultMaxQueue); n must be at least 1.
func WithMaxQueue(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("%w: WithMaxQueue(%d), want at least 1", ErrInvalidOption, n)
		}
		c.maxQueue = n
		return nil
	}
}

// WithOverflow sets what happens to a message that arrives at a full queue
// (default DefaultOverflow).
func WithOverflow(p Overflow) Option {
	return func(c *config) error {
		switch p {
		case OverflowReject, OverflowDropOldest, OverflowDropNewest:
			c.overflow = p
			return nil
		}
		return fmt.Errorf("%w: WithOverflow(%s), want OverflowReject, OverflowDropOldest or OverflowDropNewest", ErrInvalidOption, p)
	}
}
