package schedule

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/persistence"
)

// Defaults of the scheduler's options.
const (
	// DefaultStream is the scheduler's journal stream.
	DefaultStream = "schedules"
	// DefaultSubmitTimeout bounds one submission of a tick's job; a
	// submission that times out is retried (same work id) after
	// core.RetryAfter.
	DefaultSubmitTimeout = 5 * time.Second
	// DefaultSnapshotEvery is the number of events between snapshots: a
	// schedule firing every second writes 86,400 events a day.
	DefaultSnapshotEvery = 1000
)

// Option configures Props.
type Option func(*config)

type config struct {
	clock         clock.Clock
	logger        *slog.Logger
	stream        string
	submitTimeout time.Duration
	snapshotEvery int
	leaseTTL      time.Duration
	leaseGuard    func() bool
	fenceCheck    time.Duration
	observer      Observer
}

func defaultConfig() config {
	return config{clock: clock.Real, stream: DefaultStream, submitTimeout: DefaultSubmitTimeout, snapshotEvery: DefaultSnapshotEvery}
}

func (c *config) validate() error {
	switch {
	case c.clock == nil:
		return fmt.Errorf("%w: clock is nil", ErrInvalidOption)
	case c.stream == "":
		return fmt.Errorf("%w: stream is empty (default %q)", ErrInvalidOption, DefaultStream)
	case c.submitTimeout <= 0:
		return fmt.Errorf("%w: submit timeout %v must be positive (default %v)", ErrInvalidOption, c.submitTimeout, DefaultSubmitTimeout)
	}
	return nil
}

func (c *config) runtimeOptions() []persistence.Option {
	opts := []persistence.Option{
		persistence.WithClock(c.clock),
		persistence.WithSnapshotEvery(c.snapshotEvery),
		persistence.WithFenceCheck(c.fenceCheck),
		persistence.WithLease(c.leaseTTL),
		persistence.WithLeaseGuard(c.leaseGuard),
	}
	if c.leaseTTL > 0 {
		// A stray activation (placed by a view briefly out of date) yields
		// to the holder instead of answering "unavailable" for ever.
		opts = append(opts, persistence.WithLeaseMaxWait(3*c.leaseTTL))
	}
	if c.logger != nil {
		opts = append(opts, persistence.WithLogger(c.logger))
	}
	return opts
}

// WithClock sets the clock of the scheduler's timer and of its lease
// (default the real clock).
func WithClock(c clock.Clock) Option { return func(cfg *config) { cfg.clock = c } }

// WithLogger sets the logger (default the actor system's).
func WithLogger(l *slog.Logger) Option { return func(cfg *config) { cfg.logger = l } }

// WithStream sets the journal stream (default DefaultStream).
func WithStream(s string) Option { return func(cfg *config) { cfg.stream = s } }

// WithSubmitTimeout bounds each submission (default DefaultSubmitTimeout).
func WithSubmitTimeout(d time.Duration) Option { return func(cfg *config) { cfg.submitTimeout = d } }

// WithSnapshotEvery sets the events between snapshots (default
// DefaultSnapshotEvery; 0 never).
func WithSnapshotEvery(n int) Option { return func(cfg *config) { cfg.snapshotEvery = n } }

// WithLease makes the scheduler hold a lease on its stream while it serves
// (persistence.WithLease): a cluster singleton needs it, so that two
// activations never fire at once. Default 0: none (the all-in-one node).
func WithLease(ttl time.Duration) Option { return func(cfg *config) { cfg.leaseTTL = ttl } }

// WithLeaseGuard sets the check made before taking and renewing the lease
// (persistence.WithLeaseGuard).
func WithLeaseGuard(guard func() bool) Option { return func(cfg *config) { cfg.leaseGuard = guard } }

// WithFenceCheck makes an activation look every d for a newer one's
// recovery event and stop (persistence.WithFenceCheck; default off).
func WithFenceCheck(d time.Duration) Option { return func(cfg *config) { cfg.fenceCheck = d } }

// WithObserver sets who hears about fired and skipped ticks (metrics).
func WithObserver(o Observer) Option { return func(cfg *config) { cfg.observer = o } }
