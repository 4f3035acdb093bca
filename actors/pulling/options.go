package pulling

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/persistence"
)

// Defaults of the options that are not part of [StateConfig].
const (
	// DefaultWindow is how many items a worker holds at once: one, as in the
	// seed (one item per GimmeWork).
	DefaultWindow = 1
	// DefaultFetchRetry is the delay before a failed Epic fetch is retried.
	DefaultFetchRetry = time.Second
	// DefaultRegisterInterval is how often a route worker resolves its
	// master again and registers with it.
	DefaultRegisterInterval = time.Second
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

	// Durable masters (DurableMasterProps).
	epicName    string
	epicNameOf  func(c actor.Context) string
	persistence func(epic string) []persistence.Option

	// Route workers (RouteWorkerProps).
	registerInterval time.Duration
}

func newConfig(opts []Option) (config, error) {
	cfg := config{
		state:      DefaultStateConfig(),
		window:     DefaultWindow,
		fetchRetry: DefaultFetchRetry,
		clock:      clock.Real,

		registerInterval: DefaultRegisterInterval,
		logger:           slog.New(slog.DiscardHandler),
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

// WithEpicName names the Epic a durable master owns (durable master; it or
// WithEpicNameFrom is required). The master journals the Epic's position
// in the stream "pulling/<name>".
func WithEpicName(name string) Option {
	return func(cfg *config) error {
		if name == "" {
			return fmt.Errorf("%w: empty epic name", ErrInvalidConfig)
		}
		cfg.epicName = name
		return nil
	}
}

// WithEpicNameFrom makes a durable master read its Epic's name from its
// context when it starts (durable master), e.g. a cluster kind's identity:
// one props for every Epic. An empty name stops the master.
func WithEpicNameFrom(f func(c actor.Context) string) Option {
	return func(cfg *config) error {
		if f == nil {
			return fmt.Errorf("%w: nil epic name function", ErrInvalidConfig)
		}
		cfg.epicNameOf = f
		return nil
	}
}

// WithPersistence gives a durable master's runtime its options (durable
// master; default none): f is called with the Epic's name when the master
// starts, so a lease guard can ask about that Epic's placement.
func WithPersistence(f func(epic string) []persistence.Option) Option {
	return func(cfg *config) error {
		if f == nil {
			return fmt.Errorf("%w: nil persistence options function", ErrInvalidConfig)
		}
		cfg.persistence = f
		return nil
	}
}

// WithRegisterInterval sets how often a route worker resolves its master
// again and registers with it (route worker; more than 0, default
// [DefaultRegisterInterval]). It bounds how long a worker misses a master
// that moved without the old one terminating in its sight.
func WithRegisterInterval(d time.Duration) Option {
	return func(cfg *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: register interval %s, want more than 0", ErrInvalidConfig, d)
		}
		cfg.registerInterval = d
		return nil
	}
}
