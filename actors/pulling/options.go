package pulling

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/foreman-actors/foreman/actors/clock"
)

// Defaults of the options that are not part of [StateConfig].
const (
	// DefaultWindow is how many items a worker holds at once: one, as in the
	// seed (one item per GimmeWork).
	DefaultWindow = 1
	// DefaultFetchRetry is the delay before a failed Epic fetch is retried.
	DefaultFetchRetry = time.Second
)

// Option configures a master ([MasterProps]) or a worker ([WorkerProps],
// [AsyncWorkerProps]). Each option's doc says whom it applies to; the others
// ignore it.
type Option func(*config) error

type config struct {
	state      StateConfig
	window     int
	fetchRetry time.Duration
	clock      clock.Clock
	logger     *slog.Logger
	codec      any // Codec[T], checked against T by the constructor
}

func newConfig(opts []Option) (config, error) {
	cfg := config{
		state:      DefaultStateConfig(),
		window:     DefaultWindow,
		fetchRetry: DefaultFetchRetry,
		clock:      clock.Real,
		logger:     slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return config{}, err
		}
	}
	return cfg, cfg.state.validate()
}

func codecFor[T any](cfg config) (Codec[T], error) {
	if cfg.codec == nil {
		return nil, nil
	}
	c, ok := cfg.codec.(Codec[T])
	if !ok {
		var zero T
		return nil, fmt.Errorf("%w: codec %T does not encode %T", ErrInvalidConfig, cfg.codec, zero)
	}
	return c, nil
}

// WithCodec sets the codec for items that cross nodes (master and worker).
// Without it, a master refuses remote workers and a worker rejects remote
// items.
func WithCodec[T any](c Codec[T]) Option {
	return func(cfg *config) error {
		if c == nil {
			return fmt.Errorf("%w: nil codec", ErrInvalidConfig)
		}
		cfg.codec = c
		return nil
	}
}

// WithWindow sets how many items a worker asks to hold at once (worker; at
// least 1, default [DefaultWindow]). Raise it for high-latency links.
func WithWindow(n int) Option {
	return func(cfg *config) error {
		if n < 1 {
			return fmt.Errorf("%w: window %d, want at least 1", ErrInvalidConfig, n)
		}
		cfg.window = n
		return nil
	}
}

// WithMaxWindow caps the window any worker gets (master; default
// [DefaultMaxWindow]).
func WithMaxWindow(n int) Option {
	return func(cfg *config) error { cfg.state.MaxWindow = n; return nil }
}

// WithBatchSize sets how many items the master asks the Epic for at a time
// (master; default [DefaultBatchSize]). The master buffers at most about
// 1.5 batches.
func WithBatchSize(n int) Option {
	return func(cfg *config) error { cfg.state.BatchSize = n; return nil }
}

// WithAckTimeout sets how long a handed-out item may stay unconfirmed before
// the master hands it out again (master; default [DefaultAckTimeout]).
func WithAckTimeout(d time.Duration) Option {
	return func(cfg *config) error { cfg.state.AckTimeout = d; return nil }
}

// WithMaxAttempts sets how many reported errors an item may have before it is
// given up (master; default [DefaultMaxAttempts]).
func WithMaxAttempts(n int) Option {
	return func(cfg *config) error { cfg.state.MaxAttempts = n; return nil }
}

// WithFetchRetry sets the delay before a failed Epic fetch is retried and how
// many consecutive failures abort the Epic (master; defaults
// [DefaultFetchRetry], [DefaultMaxFetchFailures]).
func WithFetchRetry(delay time.Duration, maxFailures int) Option {
	return func(cfg *config) error {
		if delay <= 0 {
			return fmt.Errorf("%w: fetch retry delay %s, want more than 0", ErrInvalidConfig, delay)
		}
		cfg.fetchRetry = delay
		cfg.state.MaxFetchFailures = maxFailures
		return nil
	}
}

// WithClock sets the clock of the master's timers (master; default
// clock.Real).
func WithClock(c clock.Clock) Option {
	return func(cfg *config) error { cfg.clock = clock.OrReal(c); return nil }
}

// WithLogger sets the logger (master and worker; default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(cfg *config) error {
		if l == nil {
			return fmt.Errorf("%w: nil logger", ErrInvalidConfig)
		}
		cfg.logger = l
		return nil
	}
}
