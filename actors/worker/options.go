package worker

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/foreman-actors/foreman/actors/adaptive"
	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/messages"
)

// Defaults of the worker's options (the sample's values where it has one).
const (
	// DefaultRegisterInterval is how often a worker re-registers with the master.
	DefaultRegisterInterval = 10 * time.Second
	// DefaultResendInterval is how long a worker waits for the Ack of a
	// WorkIsDone before sending it again.
	DefaultResendInterval = 5 * time.Second
	// DefaultWindow is how many jobs a worker runs at once (the sample: 1).
	DefaultWindow = 1
	// DefaultMaxUnacked bounds the completed results a worker keeps while it
	// waits for their Acks (together with its running and queued work); while
	// the bound is reached it asks for no work. The default is the larger of
	// this and four times the window plus the prefetch.
	DefaultMaxUnacked = 32
	// DefaultResultHold is how long a finished job's result may wait for
	// others to leave with it while the worker still runs other jobs
	// (see WithResultHold).
	DefaultResultHold = 500 * time.Microsecond
	// MaxResultHold is the longest hold WithResultHold accepts: a result
	// that could wait longer would hold its caller up for no gain.
	MaxResultHold = time.Second
	// DefaultResolveTimeout bounds one call of a route.Resolver.
	DefaultResolveTimeout = 5 * time.Second
	// DefaultInterestTimeout bounds the wait for the answer of a Work's
	// waiter to AreYouStillInterested; no answer in time counts as "not
	// interested", as in seed 003 (the same bound as waiter.DefaultAskTimeout).
	DefaultInterestTimeout = 5 * time.Second
	// DefaultInterestRetry is how often an unanswered AreYouStillInterested
	// is asked again within the interest timeout: one lost question (a
	// remote connection being re-made, a slow node) does not give the job up.
	DefaultInterestRetry = time.Second
	// DefaultPermitIdle is how long a worker using WithLimiter keeps a permit
	// for which it asked the master for work and got none; then it gives the
	// permit back unused (so idle time never counts as service time) and
	// asks again on the master's next WorkIsReady.
	DefaultPermitIdle = time.Second
	// DefaultHeartbeatInterval is the least time between two heartbeat
	// messages of a worker to one master: beats of its jobs in between are
	// gathered into the next (see Heartbeat). Keep heartbeat timeouts at
	// several intervals.
	DefaultHeartbeatInterval = time.Second
)

// Option configures a worker (see Props).
type Option func(*config)

type config struct {
	workerID         string
	registerInterval time.Duration
	resendInterval   time.Duration
	resolveTimeout   time.Duration
	window           int
	prefetch         int // -1: the window (see WithPrefetch)
	resultHold       time.Duration
	maxUnacked       int
	interestTimeout  time.Duration
	interestRetry    time.Duration
	waiterGone       func(addr string) bool // nil: never
	permitIdle       time.Duration
	limiter          *adaptive.Limiter
	clock            clock.Clock
	logger           *slog.Logger
	onWork           func(seq int, w *messages.Work)
	tracer           trace.Tracer // WithTracerProvider; nil: none
	beatInterval     time.Duration
}

func defaultConfig() config {
	return config{
		registerInterval: DefaultRegisterInterval,
		resendInterval:   DefaultResendInterval,
		resolveTimeout:   DefaultResolveTimeout,
		interestTimeout:  DefaultInterestTimeout,
		interestRetry:    DefaultInterestRetry,
		permitIdle:       DefaultPermitIdle,
		window:           DefaultWindow,
		prefetch:         -1,
		resultHold:       DefaultResultHold,
		beatInterval:     DefaultHeartbeatInterval,
	}
}

// settle checks the options and fills in what follows from them.
func (c *config) settle() error {
	if err := c.validate(); err != nil {
		return err
	}
	if c.prefetch < 0 {
		c.prefetch = c.window
	}
	if c.limiter != nil {
		c.prefetch = 0 // the permits decide (see WithPrefetch)
	}
	if c.maxUnacked == 0 {
		c.maxUnacked = max(DefaultMaxUnacked, unackedPerSlot*(c.window+c.prefetch))
	}
	c.clock = clock.OrReal(c.clock)
	return nil
}

func (c *config) validate() error {
	switch {
	case c.registerInterval <= 0:
		return fmt.Errorf("%w: register interval %v: must be positive", ErrInvalidOption, c.registerInterval)
	case c.resendInterval <= 0:
		return fmt.Errorf("%w: resend interval %v: must be positive", ErrInvalidOption, c.resendInterval)
	case c.resolveTimeout <= 0:
		return fmt.Errorf("%w: resolve timeout %v: must be positive", ErrInvalidOption, c.resolveTimeout)
	case c.interestTimeout <= 0:
		return fmt.Errorf("%w: interest timeout %v: must be positive (default %v)", ErrInvalidOption, c.interestTimeout, DefaultInterestTimeout)
	case c.interestRetry <= 0:
		return fmt.Errorf("%w: interest retry %v: must be positive (default %v)", ErrInvalidOption, c.interestRetry, DefaultInterestRetry)
	case c.permitIdle <= 0:
		return fmt.Errorf("%w: permit idle %v: must be positive (default %v)", ErrInvalidOption, c.permitIdle, DefaultPermitIdle)
	case c.window < 1 || c.window > 4096:
		return fmt.Errorf("%w: window %d: must be 1..4096", ErrInvalidOption, c.window)
	case c.prefetch < -1 || c.prefetch > 4096:
		return fmt.Errorf("%w: prefetch %d: must be 0..4096 (0 = never read ahead)", ErrInvalidOption, c.prefetch)
	case c.resultHold < 0 || c.resultHold > MaxResultHold:
		return fmt.Errorf("%w: result hold %v: must be 0..%v (0 = every result leaves at once)", ErrInvalidOption, c.resultHold, MaxResultHold)
	case c.beatInterval <= 0:
		return fmt.Errorf("%w: heartbeat interval %v: must be positive (default %v)", ErrInvalidOption, c.beatInterval, DefaultHeartbeatInterval)
	case c.maxUnacked < 0:
		return fmt.Errorf("%w: max unacked %d: must be positive (0 = default)", ErrInvalidOption, c.maxUnacked)
	}
	return nil
}

// WithHeartbeatInterval sets the least time between two heartbeat messages
// to one master (default DefaultHeartbeatInterval): a job's beats in
// between are gathered into the next.
func WithHeartbeatInterval(d time.Duration) Option { return func(c *config) { c.beatInterval = d } }

// WithWorkerID sets the worker's id (default a random 16-hex-digit id per
// worker instance). Workers spawned from one Props with a fixed id share it:
// give each its own.
func WithWorkerID(id string) Option { return func(c *config) { c.workerID = id } }

// WithRegisterInterval sets how often the worker registers (default
// DefaultRegisterInterval).
func WithRegisterInterval(d time.Duration) Option {
	return func(c *config) { c.registerInterval = d }
}

// WithResendInterval sets how long the worker waits for the Ack of a
// WorkIsDone before re-sending it (default DefaultResendInterval).
func WithResendInterval(d time.Duration) Option {
	return func(c *config) { c.resendInterval = d }
}

// WithResolveTimeout bounds each call of a route.Resolver (default
// DefaultResolveTimeout).
func WithResolveTimeout(d time.Duration) Option {
	return func(c *config) { c.resolveTimeout = d }
}

// WithInterestTimeout bounds the wait for the answer of a Work's waiter
// (Work.waiter) to AreYouStillInterested before the job starts (default
// DefaultInterestTimeout). No answer in time counts as "the caller has gone":
// the job is not started and is reported as WorkFailed with ErrCallerGone.
func WithInterestTimeout(d time.Duration) Option {
	return func(c *config) { c.interestTimeout = d }
}

// WithInterestRetry sets how often a waiter that has not answered
// AreYouStillInterested, or whose question came back as a dead letter from
// another node (the connection may be being re-made), is asked again until
// the interest timeout (default DefaultInterestRetry). While the job runs,
// the same tick checks WithWaiterGone.
func WithInterestRetry(d time.Duration) Option {
	return func(c *config) { c.interestRetry = d }
}

// WithWaiterGone gives the worker a way to tell that the node of a waiter
// has gone for good (it left the cluster, or the connection to it was lost
// and not re-made): gone(addr) reporting true for the waiter's address, and
// still 3 s later while the worker asks that node again every interest
// retry without an answer (asking re-makes a connection a blip cut), ends
// the wait as "the caller has gone", and cancels a running job of that
// waiter. The worker confirms a node once, not per job: while it stays
// reported gone, later jobs whose waiters are on it are skipped at once;
// any answer from it clears the suspicion. Default: no node is known gone; an unreachable waiter is
// given up after the interest timeout. It is called on the worker's
// goroutines and must be safe for concurrent use and quick.
func WithWaiterGone(gone func(addr string) bool) Option {
	return func(c *config) { c.waiterGone = gone }
}

// WithLimiter makes the worker take a permit of l for every job it runs, so
// that the workers of a node that share l run at most l.Limit() jobs
// together and the adaptive policy (seed 004) sizes the node's pool from the
// measured throughput. The worker asks the master for work only while it
// holds a permit for it (one job per permit), so work is not pulled to a
// node that cannot run it yet; WithWindow is then the most one worker can
// run. A permit is released with the job's timing when the job function
// returns, and abandoned (teaching the policy nothing) when the job never
// ran: caller gone, handed back, or no work came within the permit idle time
// (WithPermitIdle). Closing l hands back work waiting for a permit with
// ErrLimiterClosed. Default nil: no limiter, the window alone bounds the work.
func WithLimiter(l *adaptive.Limiter) Option { return func(c *config) { c.limiter = l } }

// WithPermitIdle sets how long a worker with WithLimiter keeps an unused
// permit after asking the master for work (default DefaultPermitIdle).
func WithPermitIdle(d time.Duration) Option { return func(c *config) { c.permitIdle = d } }

// WithWindow lets the worker hold and run up to n jobs at once, in n
// WorkExecutor children; it asks the master for as many jobs as it has free
// slots. Default DefaultWindow (1, as in the sample).
func WithWindow(n int) Option { return func(c *config) { c.window = n } }

// WithPrefetch lets the worker hold up to n works beyond its window, queued
// locally, while its jobs are short against the round trip of a request to
// the master (default: as many as the window; 0 turns read-ahead off).
//
// The worker times how long a slot is taken per job and how long a request
// takes to bring work, and holds window*roundTrip/jobTime works ahead, at
// most n: enough that its executors do not idle while the next request is
// answered. Jobs that take longer than window round trips get none (the
// window alone keeps the executors busy), so work never waits behind a busy
// worker while another is free, as in the sample; with no-op jobs a worker
// reads a full n ahead. Works held ahead
// count as started at the master (their work timeout runs), pass the
// caller's interest gate only when they start, and are handed back at once
// when the worker stops or drains. With WithLimiter the permits decide how
// much the worker asks for and n has no effect.
func WithPrefetch(n int) Option { return func(c *config) { c.prefetch = n } }

// WithResultHold sets how long a finished job's result may wait for the
// results of other jobs, so that they reach the master in one
// WorkIsDoneBatch and one journal write instead of a message and an Ack
// each (default DefaultResultHold; 0: every result leaves at once). A
// result waits only while the worker still runs other jobs (a queued one
// it started in the freed slot counts), and no
// longer than d; the results leave together as soon as there are as many
// as the window. The wait adds at most d to the time from submission to
// result; requests for work are not held. Under batch load on 2 cores the
// default carried about 17% more jobs end to end (BENCHMARKS.md).
func WithResultHold(d time.Duration) Option { return func(c *config) { c.resultHold = d } }

// unackedPerSlot sizes the default bound on unacknowledged results: per
// work the worker may hold (window plus prefetch), this many running,
// queued or awaiting their Ack. Under a batch load a result's Ack takes
// several journal commits to come back, and with two per slot the bound,
// not the executors, limited how much a worker asked for: four gave 5%
// more end-to-end throughput (BENCHMARKS.md, 2026-11-27, fifth session).
// Results are small next to the memory this allows; WithMaxUnacked bounds
// large ones.
const unackedPerSlot = 4

// WithMaxUnacked bounds the completed results awaiting the master's Ack
// together with its running and queued work (0 = default: the larger of
// DefaultMaxUnacked and four times the window plus the prefetch). The
// worker keeps pulling work while earlier completions are being made
// durable, up to this bound.
func WithMaxUnacked(n int) Option { return func(c *config) { c.maxUnacked = n } }

// WithClock sets the clock for the register and re-send timers and for
// deadline checks (default the wall clock). Tests pass a clock.Manual.
func WithClock(c clock.Clock) Option { return func(cfg *config) { cfg.clock = c } }

// WithLogger sets the logger (default the actor system's logger).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithOnWork installs a hook that the worker calls on its own goroutine for
// every Work it accepts, before the job starts; seq counts accepted Work from
// 1. A panic in the hook crashes the worker actor (its parent's supervisor
// decides what happens next): tests use it to make a worker die on its n-th
// job, as the Akka DistributedWorkerSpec's flaky worker does.
func WithOnWork(fn func(seq int, w *messages.Work)) Option {
	return func(c *config) { c.onWork = fn }
}

func newWorkerID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
