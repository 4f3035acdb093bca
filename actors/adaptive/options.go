package adaptive

import (
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
}

// WithPolicy selects a built-in policy (default: PolicyDefault).
func WithPolicy(kind PolicyKind) Option { return func(o *options) { o.kind = kind } }

// WithCustomPolicy uses p instead of a built-in policy. The policy keeps its
// state across actor restarts, and it must not be shared with another
// scheduler or limiter.
func WithCustomPolicy(p Policy) Option { return func(o *options) { o.policy = p } }

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
