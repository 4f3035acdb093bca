package waiter

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/foreman-actors/foreman/actors/clock"
)

// Defaults for the options.
const (
	// DefaultConcurrency is how many jobs run at once (the seed's
	// concurrentLimit = 5).
	DefaultConcurrency = 5
	// DefaultMaxBacklog bounds the queued jobs; 0 means unbounded.
	DefaultMaxBacklog = 0
	// DefaultOrder serves the backlog oldest first, as the seed does.
	DefaultOrder = FIFO
	// DefaultAskTimeout is how long a Worker waits for the WorkWaiter's
	// answer to AreYouStillInterested before it skips the job (the seed's
	// Worker used 5 seconds).
	DefaultAskTimeout = 5 * time.Second
	// DefaultInterestLinger is how long an Interest keeps answering
	// IAmNoLongerInterested after its caller has gone, before it stops.
	DefaultInterestLinger = 5 * time.Second
)

// Sentinel errors. Every error the package returns wraps one of them, so
// callers match with errors.Is.
var (
	// ErrTimeout is wrapped (together with context.DeadlineExceeded) by Do's
	// error when the caller's deadline passed before the result came.
	ErrTimeout = errors.New("waiter: caller's deadline passed before the work completed")
	// ErrCancelled is wrapped (together with context.Canceled) by Do's error
	// when the caller cancelled its context before the result came.
	ErrCancelled = errors.New("waiter: caller cancelled before the work completed")
	// ErrBacklogFull is returned by Do when every worker is busy and the
	// backlog holds WithMaxBacklog jobs already; retry later or raise the bound.
	ErrBacklogFull = errors.New("waiter: backlog full, job rejected")
	// ErrClosed is returned by Do after Stop was called, and by calls whose
	// queued job was dropped by a Stop whose context expired.
	ErrClosed = errors.New("waiter: API is stopped")
	// ErrWorkPanicked is wrapped by Do's error when the work function panicked.
	ErrWorkPanicked = errors.New("waiter: work function panicked")
	// ErrInvalidOption is wrapped by New's error for a bad option value.
	ErrInvalidOption = errors.New("waiter: invalid option")
	// ErrNotInterested is returned by AskStillInterested when the waiter
	// could not be asked (gone, unreachable, or no answer in time); like the
	// seed's Worker, treat it as "not interested". Do returns it in the rare
	// case that a Worker got no answer from the call's own waiter within
	// WithAskTimeout and skipped the job.
	ErrNotInterested = errors.New("waiter: no answer from the waiter")
)

// Option configures New.
type Option func(*config)

type config struct {
	concurrency   int
	maxBacklog    int
	order         Order
	askTimeout    time.Duration
	clock         clock.Clock
	logger        *slog.Logger
	interestCheck bool // false only in the package's own baseline benchmark
}

func defaultConfig() config {
	return config{
		concurrency:   DefaultConcurrency,
		maxBacklog:    DefaultMaxBacklog,
		order:         DefaultOrder,
		askTimeout:    DefaultAskTimeout,
		clock:         clock.Real,
		logger:        slog.New(slog.DiscardHandler),
		interestCheck: true,
	}
}

func (c *config) validate() error {
	if c.concurrency < 1 {
		return fmt.Errorf("%w: WithConcurrency(%d): at least 1 job must be allowed to run", ErrInvalidOption, c.concurrency)
	}
	if c.maxBacklog < 0 {
		return fmt.Errorf("%w: WithMaxBacklog(%d): use 0 for an unbounded backlog or a positive bound", ErrInvalidOption, c.maxBacklog)
	}
	if c.order != FIFO && c.order != LIFO {
		return fmt.Errorf("%w: WithOrder(%v): use waiter.FIFO or waiter.LIFO", ErrInvalidOption, c.order)
	}
	if c.askTimeout <= 0 {
		return fmt.Errorf("%w: WithAskTimeout(%s): the timeout must be positive", ErrInvalidOption, c.askTimeout)
	}
	if c.clock == nil {
		return fmt.Errorf("%w: WithClock(nil): pass clock.Real or a clock.Manual", ErrInvalidOption)
	}
	if c.logger == nil {
		return fmt.Errorf("%w: WithLogger(nil): pass a *slog.Logger (slog.New(slog.DiscardHandler) for none)", ErrInvalidOption)
	}
	return nil
}

// WithConcurrency sets how many jobs may run at once (default
// DefaultConcurrency). A job holds its slot from the moment its Worker asks
// the waiter until the work function returns.
func WithConcurrency(n int) Option { return func(c *config) { c.concurrency = n } }

// WithMaxBacklog bounds how many jobs may wait for a slot (default
// DefaultMaxBacklog, 0 = unbounded). Beyond it Do fails fast with
// ErrBacklogFull.
func WithMaxBacklog(n int) Option { return func(c *config) { c.maxBacklog = n } }

// WithOrder sets the order in which the backlog is served (default FIFO).
// LIFO serves the freshest callers first, who are the most likely to still
// wait when the system is overloaded.
func WithOrder(o Order) Option { return func(c *config) { c.order = o } }

// WithAskTimeout sets how long a Worker waits for the answer to
// AreYouStillInterested before skipping the job (default DefaultAskTimeout).
// It only matters when the waiter cannot answer, e.g. across a network.
func WithAskTimeout(d time.Duration) Option { return func(c *config) { c.askTimeout = d } }

// WithClock sets the clock used to measure run times and the time left to a
// caller's deadline (default clock.Real).
func WithClock(cl clock.Clock) Option { return func(c *config) { c.clock = cl } }

// WithLogger sets the logger (default: discard). The package logs at Debug
// per job and at Warn for a panicking work function.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }
