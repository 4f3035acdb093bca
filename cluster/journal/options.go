package journal

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/persistence"
)

// Defaults of the disk backends' options.
const (
	// DefaultBusyTimeout is how long a SQLite writer waits for another
	// process that holds the database's write lock before failing.
	DefaultBusyTimeout = 5 * time.Second
	// DefaultMaxBatch is the most events one group-commit transaction
	// takes. It bounds the size of a transaction, not a wait: the writer
	// never delays a commit to collect more.
	DefaultMaxBatch = 8192
	// DefaultReadConns is the size of the connection pool that serves Load
	// and LoadSnapshot.
	DefaultReadConns = 4
)

// Option configures NewMemory, OpenSQLite and OpenPostgres. Each option
// says which backends read it; the others ignore it.
type Option func(*config)

type config struct {
	logger      *slog.Logger
	busyTimeout time.Duration
	maxBatch    int
	readConns   int
	clock       clock.Clock
	// commitObserver is told every group commit (observe.go); nil: none.
	commitObserver func(CommitStats)
}

func newConfig(opts []Option) (config, error) {
	c := config{
		logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		busyTimeout: DefaultBusyTimeout,
		maxBatch:    DefaultMaxBatch,
		readConns:   DefaultReadConns,
		clock:       clock.Real,
	}
	for _, o := range opts {
		o(&c)
	}
	if c.logger == nil {
		return c, fmt.Errorf("%w: WithLogger(nil) (pass a *slog.Logger or omit the option)", persistence.ErrInvalid)
	}
	if c.busyTimeout < 0 {
		return c, fmt.Errorf("%w: busy timeout %v is negative (use 0 to fail at once on a locked database)", persistence.ErrInvalid, c.busyTimeout)
	}
	if c.maxBatch < 1 {
		return c, fmt.Errorf("%w: max batch %d must be at least 1 event per transaction", persistence.ErrInvalid, c.maxBatch)
	}
	if c.readConns < 1 {
		return c, fmt.Errorf("%w: read connections %d must be at least 1", persistence.ErrInvalid, c.readConns)
	}
	if c.clock == nil {
		return c, fmt.Errorf("%w: WithClock(nil) (pass a clock or omit the option for the real one)", persistence.ErrInvalid)
	}
	return c, nil
}

// WithLogger sets the logger for the journal's own events (open, close,
// failed commits). The default discards them.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithBusyTimeout sets how long a write waits for another process holding
// the SQLite write lock (default DefaultBusyTimeout). PostgreSQL ignores it.
func WithBusyTimeout(d time.Duration) Option { return func(c *config) { c.busyTimeout = d } }

// WithMaxBatch caps the events one group-commit transaction takes (default
// DefaultMaxBatch). A single append larger than the cap still goes in one
// transaction of its own. WithMaxBatch(1) commits every call in its own
// transaction, which disables group commit (for comparison only).
func WithMaxBatch(n int) Option { return func(c *config) { c.maxBatch = n } }

// WithReadConns sets the size of the pool that serves Load and LoadSnapshot
// (default DefaultReadConns).
func WithReadConns(n int) Option { return func(c *config) { c.readConns = n } }

// WithClock sets the clock that leases are measured on (default the real
// clock); tests pass a clock.Manual. Memory and SQLite read it. PostgreSQL
// ignores it: its leases run on the database server's clock, so that the
// clocks of the hosts sharing it need not agree.
func WithClock(c clock.Clock) Option { return func(cfg *config) { cfg.clock = c } }
