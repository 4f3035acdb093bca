package frontend

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/messages"
)

// Defaults (the sample's values where it has one).
const (
	// DefaultAskTimeout bounds one request to the master (the sample: 5 s).
	DefaultAskTimeout = 5 * time.Second
	// DefaultMinRetryBackoff and DefaultMaxRetryBackoff bound the Client's
	// backoff between attempts of Submit: it doubles from min up to max.
	DefaultMinRetryBackoff = 100 * time.Millisecond
	// DefaultMaxRetryBackoff: see DefaultMinRetryBackoff.
	DefaultMaxRetryBackoff = 3 * time.Second
	// DefaultProducerRetryDelay is how long the WorkProducer waits before it
	// re-sends work that was NotOk (the sample: 3 s).
	DefaultProducerRetryDelay = 3 * time.Second
	// DefaultMinInterval and DefaultMaxInterval bound the WorkProducer's
	// random pause between jobs (the sample: 3-10 s).
	DefaultMinInterval = 3 * time.Second
	// DefaultMaxInterval: see DefaultMinInterval.
	DefaultMaxInterval = 10 * time.Second
	// DefaultInitialDelay is the WorkProducer's pause before its first job in
	// interval mode (the sample: 5 s); with WithJobs it starts at once.
	DefaultInitialDelay = 5 * time.Second
	// DefaultJobType is the job type the WorkProducer submits.
	DefaultJobType = "square"
	// DefaultDedupeWindow is how many recent outcomes (a work id and how it
	// ended) the WorkResultConsumer remembers to recognise duplicate results.
	DefaultDedupeWindow = 1 << 16
)

// Option configures the package's constructors. Each constructor reads the
// options that concern it ("for: ..." in each doc) and ignores the rest, so
// one option list can be shared.
type Option func(*config)

type config struct {
	askTimeout         time.Duration
	submitGroups       int // WithSubmitGroups
	retryMin, retryMax time.Duration
	clock              clock.Clock
	logger             *slog.Logger

	// WorkProducer.
	intervalMin, intervalMax time.Duration
	initialDelay             *time.Duration
	jobs                     int
	concurrency              int
	retryDelay               time.Duration
	jobType                  string
	payload                  func(n int) []byte
	workID                   func(n int) string
	onAcked                  func(*messages.Work)
	onAllAcked               func()

	// WorkResultConsumer.
	resultLevel slog.Level
	onResult    func(*messages.WorkResult)
	onDuplicate func(*messages.WorkResult)
	dedupe      int
	noStream    bool
	feedClient  *Client     // WithFeed
	feedStore   CursorStore // WithFeed

	tracerProvider trace.TracerProvider // WithTracerProvider
}

func defaultConfig() config {
	return config{
		askTimeout:   DefaultAskTimeout,
		submitGroups: DefaultSubmitGroups,
		retryMin:     DefaultMinRetryBackoff,
		retryMax:     DefaultMaxRetryBackoff,
		intervalMin:  DefaultMinInterval,
		intervalMax:  DefaultMaxInterval,
		concurrency:  1,
		retryDelay:   DefaultProducerRetryDelay,
		jobType:      DefaultJobType,
		payload:      func(n int) []byte { return strconv.AppendInt(nil, int64(n), 10) },
		dedupe:       DefaultDedupeWindow,
		resultLevel:  slog.LevelInfo,
	}
}

func newConfig(opts []Option) (config, error) {
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	c.clock = clock.OrReal(c.clock)
	switch {
	case c.submitGroups < 0:
		return c, fmt.Errorf("%w: submit groups %d: must not be negative (0 = every Submit asks alone)", ErrInvalidOption, c.submitGroups)
	case c.askTimeout <= 0:
		return c, fmt.Errorf("%w: ask timeout %v: must be positive", ErrInvalidOption, c.askTimeout)
	case c.retryMin <= 0 || c.retryMax < c.retryMin:
		return c, fmt.Errorf("%w: retry backoff [%v, %v]: need 0 < min <= max", ErrInvalidOption, c.retryMin, c.retryMax)
	case c.intervalMin < 0 || c.intervalMax < c.intervalMin:
		return c, fmt.Errorf("%w: interval [%v, %v]: need 0 <= min <= max", ErrInvalidOption, c.intervalMin, c.intervalMax)
	case c.initialDelay != nil && *c.initialDelay < 0:
		return c, fmt.Errorf("%w: initial delay %v: must not be negative", ErrInvalidOption, *c.initialDelay)
	case c.jobs < 0:
		return c, fmt.Errorf("%w: jobs %d: must not be negative (0 = produce forever)", ErrInvalidOption, c.jobs)
	case c.concurrency < 1:
		return c, fmt.Errorf("%w: concurrency %d: must be at least 1", ErrInvalidOption, c.concurrency)
	case c.retryDelay <= 0:
		return c, fmt.Errorf("%w: retry delay %v: must be positive", ErrInvalidOption, c.retryDelay)
	case c.jobType == "":
		return c, fmt.Errorf("%w: empty job type", ErrInvalidOption)
	case c.payload == nil:
		return c, fmt.Errorf("%w: nil payload function", ErrInvalidOption)
	case c.dedupe < 0:
		return c, fmt.Errorf("%w: dedupe window %d: must not be negative (0 = off)", ErrInvalidOption, c.dedupe)
	}
	return c, nil
}

// WithAskTimeout bounds each request to the master (default
// DefaultAskTimeout). For: Client, Frontend.
func WithAskTimeout(d time.Duration) Option { return func(c *config) { c.askTimeout = d } }

// WithSubmitGroups sets how many groups of Submit's works each shard has
// on their way to its master at once (default DefaultSubmitGroups). The
// first Submit to an idle shard travels at once, alone; those made while
// n groups are in flight wait for one to be answered and then travel
// together in one WorkBatch, acknowledged per work as if each had gone
// alone. That saves the master a message, a step and a reply per work
// when many callers submit at once (every POST /work of a busy frontend).
// 0 turns grouping off: every attempt is its own ask, as SubmitOnce is.
// For: Client.
func WithSubmitGroups(n int) Option { return func(c *config) { c.submitGroups = n } }

// WithRetryBackoff sets the Client's pause between Submit attempts: it
// starts at lo and doubles up to hi (default DefaultMinRetryBackoff,
// DefaultMaxRetryBackoff). For: Client.
func WithRetryBackoff(lo, hi time.Duration) Option {
	return func(c *config) { c.retryMin, c.retryMax = lo, hi }
}

// WithClock sets the clock for timers and backoff (default the wall clock).
// For: Client, WorkProducer.
func WithClock(cl clock.Clock) Option { return func(c *config) { c.clock = cl } }

// WithLogger sets the logger (default the actor system's logger). For: all.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithInterval sets the WorkProducer's random pause between jobs, uniform
// in [lo, hi] (default 3-10 s). For: WorkProducer in interval mode.
func WithInterval(lo, hi time.Duration) Option {
	return func(c *config) { c.intervalMin, c.intervalMax = lo, hi }
}

// WithInitialDelay sets the WorkProducer's pause before its first job
// (default DefaultInitialDelay, or 0 with WithJobs). For: WorkProducer.
func WithInitialDelay(d time.Duration) Option { return func(c *config) { c.initialDelay = &d } }

// WithJobs makes the WorkProducer submit exactly n jobs as fast as they are
// acknowledged (up to WithConcurrency at a time), then stop producing; 0
// means produce forever at the interval. For: WorkProducer.
func WithJobs(n int) Option { return func(c *config) { c.jobs = n } }

// WithConcurrency sets how many jobs the WorkProducer keeps unacknowledged
// at once with WithJobs (default 1). For: WorkProducer.
func WithConcurrency(k int) Option { return func(c *config) { c.concurrency = k } }

// WithRetryDelay sets how long the WorkProducer waits before re-sending
// work that was NotOk, with the same id (default 3 s). For: WorkProducer.
func WithRetryDelay(d time.Duration) Option { return func(c *config) { c.retryDelay = d } }

// WithJobType sets the job type the WorkProducer submits (default
// "square"). For: WorkProducer.
func WithJobType(t string) Option { return func(c *config) { c.jobType = t } }

// WithPayload sets how the WorkProducer makes the payload of its n-th job,
// n counting from 1 (default: n as a JSON integer). For: WorkProducer.
func WithPayload(fn func(n int) []byte) Option { return func(c *config) { c.payload = fn } }

// WithWorkID sets how the WorkProducer names its n-th job (default a random
// unique id). For: WorkProducer.
func WithWorkID(fn func(n int) string) Option { return func(c *config) { c.workID = fn } }

// WithOnAcked calls fn, on the producer's goroutine, for every work the
// master acknowledged. For: WorkProducer.
func WithOnAcked(fn func(*messages.Work)) Option { return func(c *config) { c.onAcked = fn } }

// WithOnAllAcked calls fn once all WithJobs jobs are acknowledged. For:
// WorkProducer.
func WithOnAllAcked(fn func()) Option { return func(c *config) { c.onAllAcked = fn } }

// WithResultLogLevel sets the level of the consumer's "Consumed result"
// line (default Info, as in the seed, where a result arrives every few
// seconds). A run of many jobs puts it at Debug so that one line per result
// does not bury what matters (foreman --jobs N). For: WorkResultConsumer.
func WithResultLogLevel(l slog.Level) Option { return func(c *config) { c.resultLevel = l } }

// WithOnResult calls fn, on the consumer's goroutine, for every result (only
// the first of each outcome while deduplication is on: a work id that ended,
// was re-submitted and ended again has two). For: WorkResultConsumer.
func WithOnResult(fn func(*messages.WorkResult)) Option {
	return func(c *config) { c.onResult = fn }
}

// WithOnDuplicate calls fn for every result whose outcome was already
// consumed. For: WorkResultConsumer.
func WithOnDuplicate(fn func(*messages.WorkResult)) Option {
	return func(c *config) { c.onDuplicate = fn }
}

// WithDedupe sets how many recent outcomes the consumer remembers to
// recognise duplicates (default DefaultDedupeWindow); 0 turns deduplication
// off. For: WorkResultConsumer.
func WithDedupe(n int) Option { return func(c *config) { c.dedupe = n } }

// WithoutEventStream stops the consumer from subscribing to the actor
// system's EventStream; it then consumes only results sent to its PID (e.g.
// by cluster pub-sub). For: WorkResultConsumer.
func WithoutEventStream() Option { return func(c *config) { c.noStream = true } }

// WithTracerProvider makes the client start a foreman.submit span per
// submission (Submit, Call, Do, SubmitMany), under the span of the call's
// ctx, and send its trace context with the work (docs/tracing.md). Without
// it the work still carries ctx's span context when there is one, so a
// traced caller's job joins its trace. The provider is used as given: the
// client never reads or sets OpenTelemetry's global one. For: Client.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracerProvider = tp }
}
