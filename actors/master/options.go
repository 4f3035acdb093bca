package master

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/master/core"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/messages"
)

// Sentinel errors.
var (
	// ErrInvalidOption means an Option was given a value out of range.
	ErrInvalidOption = errors.New("master: invalid option")
	// ErrUnknownEvent means the journal holds an event type WorkState does
	// not know (a newer version wrote it, or the stream is not a master's).
	ErrUnknownEvent = core.ErrUnknownEvent
	// ErrBadSnapshot means a stored snapshot is not a valid MasterSnapshot.
	ErrBadSnapshot = core.ErrBadSnapshot
)

// Defaults for the options (the work timeout, register interval and
// dead-after values are those of the classic Akka sample).
const (
	DefaultStream          = "master"
	DefaultWorkTimeout     = 10 * time.Second
	DefaultWorkerDeadAfter = 60 * time.Second
	DefaultMaxAttempts     = 5
	DefaultBackoffBase     = 500 * time.Millisecond
	DefaultBackoffMax      = 30 * time.Second
	// DefaultDoneRetention is how long done and dead work ids are kept. It
	// must exceed the time a frontend may keep re-submitting an id; about
	// 250 bytes plus the result are kept per done work (see also
	// DefaultDoneLimit).
	DefaultDoneRetention = 10 * time.Minute
	// DefaultDoneLimit is how many finished works (done, dead, cancelled)
	// are kept at most: at a sustained 40,000 jobs/s, ten minutes' worth
	// would be 24 million, several GB of memory and snapshots of GBs.
	DefaultDoneLimit = 1_000_000
	// DefaultSnapshotEvery is the number of events between snapshots (see
	// WithSnapshotEvery for the amortisation rule).
	DefaultSnapshotEvery = 1000
	// DefaultMaxPayload is the largest accepted Work payload: 1 MiB.
	DefaultMaxPayload = 1 << 20
	// DefaultFenceCheck is how often an idle master looks in the journal
	// for a newer activation (see WithFenceCheck).
	DefaultFenceCheck = 250 * time.Millisecond
	// DefaultJournalTimeout bounds each blocking journal call of recovery.
	DefaultJournalTimeout = 30 * time.Second
	// DefaultLeaseTTL is the master's lease in the journal (see
	// WithLeaseTTL): about the time failure detection takes anyway, so a
	// killed master's successor seldom waits longer for the lease than for
	// the membership to notice, and one renewal every 100 ms.
	DefaultLeaseTTL = 300 * time.Millisecond
	// DefaultRecoveryStash is how many submissions a master holds while it
	// recovers or waits for its lease (see WithRecoveryStash).
	DefaultRecoveryStash = 4096
)

// Publisher receives a WorkResult once the WorkCompleted event of the work
// is durable. It is called from the master's goroutine and must not block.
type Publisher interface {
	Publish(result *messages.WorkResult)
}

// PublisherFunc adapts a function to Publisher.
type PublisherFunc func(*messages.WorkResult)

// Publish calls f(result).
func (f PublisherFunc) Publish(result *messages.WorkResult) { f(result) }

// Option configures the Master.
type Option func(*config)

type config struct {
	stream          string
	workTimeout     time.Duration
	workerDeadAfter time.Duration
	maxAttempts     int
	backoffBase     time.Duration
	backoffMax      time.Duration
	doneRetention   time.Duration
	doneLimit       int
	snapshotEvery   int
	maxPayload      int
	jobTypes        map[string]struct{} // nil: any
	clock           clock.Clock
	logger          *slog.Logger // nil: the actor system's
	publisher       Publisher    // nil: the actor system's EventStream
	limiters        map[string]DispatchLimiter
	journalTimeout  time.Duration
	awaitStarted    bool
	startedHold     time.Duration // 0: journal hand-outs at once
	priorityAging   time.Duration // 0: strict priorities
	fairWeights     map[string]int
	fenceCheck      time.Duration          // 0: off
	recoveryStash   int                    // submissions held while recovering
	concurrency     core.ConcurrencyLimits // per concurrency key (keys.go)
	keyRates        core.KeyRates          // per concurrency key (keyrate.go)
	leaseTTL        time.Duration          // 0: off
	leaseGuard      func() bool            // nil: always true
	observer        Observer               // nil: none (observer.go)
	feedRetention   int64                  // journal events kept behind a snapshot for the result feed
	shard, shards   int                    // this master is shard `shard` of `shards` (WithShard); shards 0: not sharded
	tracer          trace.Tracer           // WithTracerProvider; nil: none (trace.go)
}

func defaultConfig() config {
	return config{
		stream:          DefaultStream,
		workTimeout:     DefaultWorkTimeout,
		workerDeadAfter: DefaultWorkerDeadAfter,
		maxAttempts:     DefaultMaxAttempts,
		backoffBase:     DefaultBackoffBase,
		backoffMax:      DefaultBackoffMax,
		doneRetention:   DefaultDoneRetention,
		doneLimit:       DefaultDoneLimit,
		snapshotEvery:   DefaultSnapshotEvery,
		feedRetention:   DefaultFeedRetention,
		maxPayload:      DefaultMaxPayload,
		clock:           clock.Real,
		journalTimeout:  DefaultJournalTimeout,
		fenceCheck:      DefaultFenceCheck,
		leaseTTL:        DefaultLeaseTTL,
		recoveryStash:   DefaultRecoveryStash,
		startedHold:     DefaultStartedHold,
	}
}

func (c *config) validate() error {
	if c.shards != 0 && (c.shards < 2 || c.shard < 0 || c.shard >= c.shards) {
		return fmt.Errorf("%w: shard %d of %d: need 2 or more shards and 0 <= shard < shards", ErrInvalidOption, c.shard, c.shards)
	}
	if c.startedHold < 0 {
		return fmt.Errorf("%w: started hold %v must not be negative (0 journals each hand-out at once; default %v)", ErrInvalidOption, c.startedHold, DefaultStartedHold)
	}
	switch {
	case c.stream == "":
		return fmt.Errorf("%w: stream name is empty (default %q)", ErrInvalidOption, DefaultStream)
	case c.workTimeout <= 0:
		return fmt.Errorf("%w: work timeout %v must be positive (default %v)", ErrInvalidOption, c.workTimeout, DefaultWorkTimeout)
	case c.workerDeadAfter <= 0:
		return fmt.Errorf("%w: worker dead-after %v must be positive (default %v)", ErrInvalidOption, c.workerDeadAfter, DefaultWorkerDeadAfter)
	case c.maxAttempts < 1 || c.maxAttempts > 1<<20:
		return fmt.Errorf("%w: max attempts %d must be between 1 and 1048576 (default %d)", ErrInvalidOption, c.maxAttempts, DefaultMaxAttempts)
	case c.backoffBase < 0 || c.backoffMax < c.backoffBase:
		return fmt.Errorf("%w: backoff base %v and max %v need 0 <= base <= max (defaults %v, %v)", ErrInvalidOption, c.backoffBase, c.backoffMax, DefaultBackoffBase, DefaultBackoffMax)
	case c.doneRetention <= 0:
		return fmt.Errorf("%w: done retention %v must be positive (default %v)", ErrInvalidOption, c.doneRetention, DefaultDoneRetention)
	case c.doneLimit < 1:
		return fmt.Errorf("%w: done limit %d must be at least 1 (default %d)", ErrInvalidOption, c.doneLimit, DefaultDoneLimit)
	case c.feedRetention < 0:
		return fmt.Errorf("%w: feed retention %d events must not be negative (0 keeps none behind a snapshot; default %d)", ErrInvalidOption, c.feedRetention, DefaultFeedRetention)
	case c.snapshotEvery < 1:
		return fmt.Errorf("%w: snapshot every %d events must be at least 1 (default %d)", ErrInvalidOption, c.snapshotEvery, DefaultSnapshotEvery)
	case c.maxPayload < 1:
		return fmt.Errorf("%w: max payload %d bytes must be positive (default %d)", ErrInvalidOption, c.maxPayload, DefaultMaxPayload)
	case c.clock == nil:
		return fmt.Errorf("%w: clock is nil", ErrInvalidOption)
	case c.fenceCheck < 0:
		return fmt.Errorf("%w: fence check interval %v must not be negative (0 turns it off; default %v)", ErrInvalidOption, c.fenceCheck, DefaultFenceCheck)
	case c.journalTimeout <= 0:
		return fmt.Errorf("%w: journal timeout %v must be positive (default %v)", ErrInvalidOption, c.journalTimeout, DefaultJournalTimeout)
	case c.recoveryStash < 0:
		return fmt.Errorf("%w: recovery stash %d must not be negative (0 turns it off; default %d)", ErrInvalidOption, c.recoveryStash, DefaultRecoveryStash)
	case c.leaseTTL < 0:
		return fmt.Errorf("%w: lease ttl %v must not be negative (0 turns the lease off; default %v)", ErrInvalidOption, c.leaseTTL, DefaultLeaseTTL)
	}
	for jt, l := range c.limiters {
		if jt == "" || l == nil {
			return fmt.Errorf("%w: dispatch limiter needs a job type and a limiter (got %q, %v)", ErrInvalidOption, jt, l)
		}
	}
	return nil
}

func (c *config) policy() Policy {
	return Policy{MaxAttempts: int32(c.maxAttempts), BackoffBase: c.backoffBase, BackoffMax: c.backoffMax}
}

// core is what the options decide for the master's core.
func (c *config) core() core.Config {
	return core.Config{
		WorkTimeout: c.workTimeout, WorkerDeadAfter: c.workerDeadAfter, Policy: c.policy(),
		DoneRetention: c.doneRetention, DoneLimit: c.doneLimit, MaxPayload: c.maxPayload,
		JobTypes: c.jobTypes, Shard: c.shard, Shards: c.shards, Limiters: c.limiters,
		AwaitStarted: c.awaitStarted, StartedHold: c.startedHold, RecoveryStash: c.recoveryStash,
		Concurrency: c.concurrency, KeyRates: c.keyRates,
		PriorityAging: c.priorityAging, FairnessWeights: c.fairWeights,
	}
}

// WithStream sets the journal stream (persistence id) of the master
// (default DefaultStream). Shards use one stream each.
func WithStream(name string) Option { return func(c *config) { c.stream = name } }

// WithShard makes the master shard k of n (n >= 2; route.ShardOf maps a
// work id to its shard): it rejects, as invalid, work whose id belongs to
// another shard. Such work comes from a node that routes with another
// number of shards than the cluster's; accepting it would put a job in a
// stream where every correctly configured node looks for it in vain, and
// let the same id be accepted twice, once per shard. It does not set the
// stream (see WithStream).
func WithShard(k, n int) Option { return func(c *config) { c.shard, c.shards = k, n } }

// WithWorkTimeout sets how long a worker may hold a work before it is
// re-queued (default DefaultWorkTimeout). The cleanup tick runs every half
// of it.
func WithWorkTimeout(d time.Duration) Option { return func(c *config) { c.workTimeout = d } }

// WithWorkerDeadAfter sets how long an idle worker that stopped registering
// is remembered (default DefaultWorkerDeadAfter).
func WithWorkerDeadAfter(d time.Duration) Option {
	return func(c *config) { c.workerDeadAfter = d }
}

// WithMaxAttempts sets how many hand-outs a work gets before it is dead
// (default DefaultMaxAttempts).
func WithMaxAttempts(n int) Option { return func(c *config) { c.maxAttempts = n } }

// WithBackoff sets the wait before a failed work's next attempt: base,
// doubling per attempt, at most ceiling (defaults DefaultBackoffBase,
// DefaultBackoffMax). A zero base retries at once.
func WithBackoff(base, ceiling time.Duration) Option {
	return func(c *config) { c.backoffBase, c.backoffMax = base, ceiling }
}

// WithDoneRetention sets how long done and dead work ids (and results) are
// kept (default DefaultDoneRetention). After that they are forgotten: a Work
// re-submitted with a forgotten id is accepted and runs again.
func WithDoneRetention(d time.Duration) Option { return func(c *config) { c.doneRetention = d } }

// WithDoneLimit sets how many finished works (done, dead or cancelled) are
// kept at most (default DefaultDoneLimit). Past it the oldest are forgotten
// before their retention ends (WithDoneRetention), at the next cleanup
// (every half work timeout): the window in which a re-submitted id is
// recognised then shrinks to the last n finished works, and the master logs
// that it does. Memory stays bounded at any throughput: about 250 bytes plus
// the result per finished work.
func WithDoneLimit(n int) Option { return func(c *config) { c.doneLimit = n } }

// WithSnapshotEvery sets the number of events between snapshots (default
// DefaultSnapshotEvery). To keep the cost amortised, a busy master also
// delays a snapshot until the events written since the previous one reach
// the works the state holds; an idle one takes it at a sixteenth (see
// persist.go).
func WithSnapshotEvery(n int) Option { return func(c *config) { c.snapshotEvery = n } }

// WithMaxPayload sets the largest accepted payload in bytes (default
// DefaultMaxPayload); larger Work is rejected with REJECT_CODE_TOO_LARGE.
func WithMaxPayload(n int) Option { return func(c *config) { c.maxPayload = n } }

// WithJobTypes makes the master reject Work of any other job type with
// REJECT_CODE_UNKNOWN_TYPE (default: any job type is accepted).
func WithJobTypes(types ...string) Option {
	return func(c *config) {
		c.jobTypes = make(map[string]struct{}, len(types))
		for _, t := range types {
			c.jobTypes[t] = struct{}{}
		}
	}
}

// WithClock sets the time source (default clock.Real).
func WithClock(cl clock.Clock) Option { return func(c *config) { c.clock = cl } }

// WithLogger sets the logger (default: the actor system's logger).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithPublisher sets where results go once durable (default: the actor
// system's EventStream).
func WithPublisher(p Publisher) Option { return func(c *config) { c.publisher = p } }

// WithDispatchLimiter rate-limits the hand-out of jobType: work of that type
// waits in the queue while the limiter refuses, and other types go first.
func WithDispatchLimiter(jobType string, l DispatchLimiter) Option {
	return func(c *config) {
		if c.limiters == nil {
			c.limiters = make(map[string]DispatchLimiter)
		}
		c.limiters[jobType] = l
	}
}

// WithJournalTimeout bounds each blocking journal call made during recovery
// and snapshots (default DefaultJournalTimeout).
func WithJournalTimeout(d time.Duration) Option { return func(c *config) { c.journalTimeout = d } }

// WithAwaitStarted makes the master send a Work to its worker only once the
// WorkStarted event is durable, as the classic sample does (default false:
// hand out at once, since recovery returns in-progress work to pending and a
// lost WorkStarted only means the work runs again; see BENCH.md).
func WithAwaitStarted(await bool) Option { return func(c *config) { c.awaitStarted = await } }

// DefaultStartedHold is how long the master holds the journal records of
// its hand-outs for a later write to carry them (WithStartedHold).
const DefaultStartedHold = time.Millisecond

// WithStartedHold lets the master hold the WorkStarted records of its
// hand-outs for up to d (wall-clock time) so that they go to the journal
// with its next write, typically the completion of the same short job:
// one commit, one fsync, where there were two, one after the other, on a
// lightly loaded master. Held records are written before any answer that
// shows the state (status, lists) and before anything else the master
// journals, in order. Not with WithAwaitStarted, which waits for them.
// A crash loses what was held, which, like any WorkStarted that was not
// durable yet, means only that the work runs again. Default
// DefaultStartedHold; 0 journals each hand-out at once.
func WithStartedHold(d time.Duration) Option { return func(c *config) { c.startedHold = d } }

// WithPriorityAging makes a waiting job's priority count one more per d
// (0, the default: no aging, a higher priority always goes first). A job
// of priority p then waits behind later jobs of its type for at most
// (9-p)·d (docs/scheduling.md).
func WithPriorityAging(d time.Duration) Option {
	return func(c *config) { c.priorityAging = max(d, 0) }
}

// WithFairnessWeight gives fairness key key weight n (n >= 1; default 1):
// it gets n hand-outs per turn of the rotation over its job type's keys.
func WithFairnessWeight(key string, n int) Option {
	return func(c *config) {
		if c.fairWeights == nil {
			c.fairWeights = make(map[string]int)
		}
		c.fairWeights[key] = max(n, 1)
	}
}

// WithFenceCheck sets how often the master reads the journal for an event
// it did not write, which means a newer activation took over: it then stops
// at once instead of waiting for its next write to be fenced. protoactor can
// leave a stray activation of the singleton alive on a member; this bounds
// how long it can hold the master's place after a failover. Default
// DefaultFenceCheck; 0 turns the check off.
func WithFenceCheck(d time.Duration) Option { return func(c *config) { c.fenceCheck = d } }

// WithLeaseTTL sets the lease the master holds on its stream in the journal
// while it serves (default DefaultLeaseTTL; 0 turns it off). With it, of two
// masters that cannot see each other but both reach the journal (two
// backends on either side of a network partition, each sure it hosts the
// singleton), one serves and the other waits, instead of each new
// activation fencing the other in turn. The journal arbitrates; the epoch
// still fences writes.
//
// What the ttl costs: when a master's node is killed without releasing the
// lease, its successor waits for the time left on it, at most ttl. That
// wait overlaps failure detection (the successor is only activated once
// the membership has noticed), so failover takes about max(detection, ttl)
// plus recovery; a graceful stop or handoff releases the lease and costs
// nothing. The master renews every ttl/3: one small journal write (see
// cluster/journal's BenchmarkSQLiteLease). A renewal that fails for a whole
// ttl stops the master (it can no longer prove it holds the lease), so a
// short ttl also makes it step down on a shorter journal hiccup; a process
// paused for a ttl loses the lease too. A master that waits three ttls
// while another keeps the lease stops itself (persistence.WithLeaseMaxWait):
// it was activated where a node's out-of-date view sent a request. See
// persistence.WithLease.
func WithLeaseTTL(d time.Duration) Option { return func(c *config) { c.leaseTTL = d } }

// WithRecoveryStash sets how many submissions (Work) the master holds while
// it recovers from the journal or waits for its lease (default
// DefaultRecoveryStash; 0: none): they are answered as soon as it serves,
// so a submission that reaches a master taking over is acked then rather
// than after the caller's retry backoff. Beyond n, and while a recovery
// attempt has failed (the journal is unavailable), submissions are
// rejected with REJECT_CODE_UNAVAILABLE at once; a master that stops before
// it serves rejects what it holds.
func WithRecoveryStash(n int) Option { return func(c *config) { c.recoveryStash = n } }

// WithLeaseGuard sets the check made before the master takes its lease and
// before each renewal (default nil: always true): while it reports false
// the master does not take the lease, and a serving master that sees it
// false logs that its node is cut off, stops and releases the lease so
// another node's master takes over at once. The node wires it to its
// membership. It runs on the master's goroutine and must be quick. See
// persistence.WithLeaseGuard.
func WithLeaseGuard(guard func() bool) Option { return func(c *config) { c.leaseGuard = guard } }

// runtimeOptions are the options of the master's persistence runtime.
func (c *config) runtimeOptions() []persistence.Option {
	opts := []persistence.Option{
		persistence.WithClock(c.clock),
		persistence.WithSnapshotEvery(c.snapshotEvery),
		persistence.WithRetainEvents(c.feedRetention),
		persistence.WithJournalTimeout(c.journalTimeout),
		persistence.WithFenceCheck(c.fenceCheck),
		persistence.WithLease(c.leaseTTL),
		persistence.WithLeaseGuard(c.leaseGuard),
		// A master that waited three ttls while another kept the lease is a
		// stray activation (routed by a view briefly out of date): it yields
		// rather than answering "unavailable" for as long as the holder
		// lives. A dead holder's successor never waits that long.
		persistence.WithLeaseMaxWait(3 * c.leaseTTL),
	}
	if c.logger != nil {
		opts = append(opts, persistence.WithLogger(c.logger))
	}
	return opts
}

// DefaultFeedRetention is how many journal events the master keeps behind
// each snapshot for the result feed (about a third of them finish work):
// a feed reader further behind gets ErrFeedGone with the oldest cursor.
const DefaultFeedRetention = 100_000

// WithFeedRetention sets how many journal events are kept behind each
// snapshot so that result-feed readers behind it can still read them
// (default DefaultFeedRetention; 0 deletes every event a snapshot covers, as
// before the feed).
func WithFeedRetention(events int64) Option { return func(c *config) { c.feedRetention = events } }
