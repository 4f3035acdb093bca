package throttler

import (
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/throttler/core"
)

// config holds every setting of the actor; options fill it over the
// defaults. The decision settings (mode, burst, slices, queue bound,
// overflow) are the core's: coreOptions hands them on, and the core
// validates them.
type config struct {
	mode     Mode
	burst    int
	slices   int
	maxQueue int
	overflow Overflow
	clock    clock.Clock
	logger   *slog.Logger
	target   *actor.PID
}

func defaultConfig() config {
	return config{
		mode:     DefaultMode,
		burst:    DefaultBurst,
		maxQueue: DefaultMaxQueue,
		overflow: DefaultOverflow,
		clock:    clock.Real,
		logger:   slog.New(slog.DiscardHandler),
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
	return cfg, nil
}

// coreOptions are cfg's decision settings as the core's options.
func (cfg config) coreOptions() []core.Option {
	return []core.Option{
		core.WithMode(cfg.mode), core.WithBurst(cfg.burst), core.WithSlices(cfg.slices),
		core.WithMaxQueue(cfg.maxQueue), core.WithOverflow(cfg.overflow),
	}
}

// Option configures a throttler (Props, NewFSM) or a Limiter (NewLimiter).
// Options that do not apply to what is being built are ignored.
type Option func(*config) error

// WithMode selects the delivery mode (default DefaultMode for throttlers,
// ModeSlidingWindow for a Limiter); see core.WithMode.
func WithMode(m Mode) Option { return func(c *config) error { c.mode = m; return nil } }

// WithBurst sets how many deliveries ModeTokenBucket may make at once
// (default DefaultBurst); see core.WithBurst.
func WithBurst(n int) Option { return func(c *config) error { c.burst = n; return nil } }

// WithSlices paces ModeSlidingWindow a slice of the window at a time; see
// core.WithSlices.
func WithSlices(n int) Option { return func(c *config) error { c.slices = n; return nil } }

// WithMaxQueue bounds the number of messages waiting for delivery (default
// DefaultMaxQueue); see core.WithMaxQueue.
func WithMaxQueue(n int) Option { return func(c *config) error { c.maxQueue = n; return nil } }

// WithOverflow sets what happens to a message that arrives at a full queue
// (default DefaultOverflow); see core.WithOverflow.
func WithOverflow(p Overflow) Option { return func(c *config) error { c.overflow = p; return nil } }

// NewFSM returns the core's FSM (core.NewFSM) with these options; the
// actor-only options (WithClock, WithLogger, WithTarget) are checked and
// otherwise ignored.
func NewFSM[T comparable, M any](rate Rate, opts ...Option) (*FSM[T, M], error) {
	cfg, err := newConfig(defaultConfig(), opts)
	if err != nil {
		return nil, err
	}
	f, err := core.NewFSM[T, M](rate, cfg.coreOptions()...)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// NewLimiter returns the core's strict limiter (core.NewLimiter) with these
// options: WithMode, WithBurst and WithSlices; others are ignored.
func NewLimiter(rate Rate, opts ...Option) (*Limiter, error) {
	base := defaultConfig()
	base.mode = ModeSlidingWindow
	cfg, err := newConfig(base, opts)
	if err != nil {
		return nil, err
	}
	l, err := core.NewLimiter(rate, core.WithMode(cfg.mode), core.WithBurst(cfg.burst), core.WithSlices(cfg.slices))
	if err != nil {
		return nil, err
	}
	return l, nil
}

// WithClock sets the clock the actor's timers use (default clock.Real).
func WithClock(c clock.Clock) Option {
	return func(cfg *config) error {
		cfg.clock = clock.OrReal(c)
		return nil
	}
}

// WithLogger sets the actor's logger (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("%w: WithLogger(nil), want a logger (slog.New(slog.DiscardHandler) for none)", ErrInvalidOption)
		}
		c.logger = l
		return nil
	}
}

// WithTarget sets the actor's initial target, as if SetTarget had been its
// first message.
func WithTarget(pid *actor.PID) Option {
	return func(c *config) error {
		c.target = pid
		return nil
	}
}
