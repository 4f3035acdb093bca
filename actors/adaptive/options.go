package adaptive

import (
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/clock"
)

// Option configures a Scheduler (Props) or a Limiter.
type Option func(*options)

type options struct {
	kind     PolicyKind
	policy   Policy
	cfg      Config
	clock    clock.Clock
	logger   *slog.Logger
	cpu      func() float64
	listener *actor.PID
	err      error // the first invalid option
}

// WithPolicy selects a built-in policy (default: PolicyDefault).
func WithPolicy(kind PolicyKind) Option { return func(o *options) { o.kind = kind } }

// WithCustomPolicy uses p instead of a built-in policy. The policy keeps its
// state across actor restarts, and it must not be shared with another
// scheduler or limiter.
func WithCustomPolicy(p Policy) Option { return func(o *options) { o.policy = p } }

// WithFixed runs at most n jobs at once, always: the seed's Queued mailbox
// (Fixed). Props and NewLimiter reject n below 1 with ErrInvalidConfig. It
// replaces the policy chosen by WithPolicy or WithCustomPolicy.
func WithFixed(n int) Option {
	return func(o *options) {
		f, err := NewFixed(n)
		if err != nil {
			o.err = fmt.Errorf("WithFixed: %w", err)
			return
		}
		o.policy = f
	}
}

// WithUnbounded starts every job as soon as it arrives: the seed's naive
// Parallel mailbox (Unbounded), for comparison with the tuned policies. It
// replaces the policy chosen by WithPolicy or WithCustomPolicy.
func WithUnbounded() Option { return func(o *options) { o.policy = Unbounded() } }

// WithConfig sets the policy's configuration (zero fields take defaults).
func WithConfig(cfg Config) Option { return func(o *options) { o.cfg = cfg } }

// WithClock sets the time source (default: clock.Real).
func WithClock(c clock.Clock) Option { return func(o *options) { o.clock = c } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithCPU sets a function returning the CPU utilisation in [0, 1] (or a
// negative number when unknown), read at every completion and passed to the
// policy; the default policy does not raise the level while it is at or
// above Config.CPUSaturation.
func WithCPU(f func() float64) Option { return func(o *options) { o.cpu = f } }

// WithListener makes the scheduler send *BatchQueued and *JobCompleted to
// pid (Scheduler only).
func WithListener(pid *actor.PID) Option { return func(o *options) { o.listener = pid } }

func buildOptions(opts []Option) (options, error) {
	o := options{kind: PolicyDefault}
	for _, opt := range opts {
		opt(&o)
	}
	if o.err != nil {
		return o, o.err
	}
	o.clock = clock.OrReal(o.clock)
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.policy == nil {
		if _, err := NewPolicy(o.kind, o.cfg); err != nil {
			return o, err
		}
	}
	return o, nil
}

// newPolicy returns the custom policy or a fresh built-in one.
func (o options) newPolicy() Policy {
	if o.policy != nil {
		return o.policy
	}
	p, err := NewPolicy(o.kind, o.cfg)
	if err != nil {
		panic(err) // validated by buildOptions
	}
	return p
}

func (o options) readCPU() float64 {
	if o.cpu == nil {
		return -1
	}
	return o.cpu()
}
