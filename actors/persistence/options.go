package persistence

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/foreman-actors/foreman/actors/clock"
)

// Defaults of a [Runtime]'s options.
const (
	// DefaultSnapshotEvery is the number of events between snapshots.
	DefaultSnapshotEvery = 10000
	// DefaultJournalTimeout bounds one journal call made for recovery, a
	// snapshot or a fence check.
	DefaultJournalTimeout = 10 * time.Second
	// DefaultMaxBatchEvents caps the events of one group commit.
	DefaultMaxBatchEvents = 4096
	// DefaultMaxBatchBytes caps the encoded size of one group commit's
	// events (4 MiB, gRPC's default message limit, keeps a batch movable).
	DefaultMaxBatchBytes = 4 << 20
	// DefaultMinRetryBackoff and DefaultMaxRetryBackoff bound the backoff
	// between recovery attempts while the journal is unavailable.
	DefaultMinRetryBackoff = 100 * time.Millisecond
	// DefaultMaxRetryBackoff is the longest wait between recovery attempts.
	DefaultMaxRetryBackoff = 5 * time.Second
)

// minLeaseTTL is the shortest lease: a renewal is a journal write, and one
// every third of less than this is a busy loop, not a lease.
const minLeaseTTL = time.Millisecond

// Option configures a [Runtime].
type Option func(*config)

type config struct {
	clock          clock.Clock
	logger         *slog.Logger
	snapshotEvery  int // 0: never
	journalTimeout time.Duration
	fenceCheck     time.Duration // 0: off
	maxBatchEvents int
	maxBatchBytes  int
	retryMin       time.Duration
	retryMax       time.Duration
	leaseTTL       time.Duration // 0: off
	leaseGuard     func() bool   // nil: always true
	leaseMaxWait   time.Duration // 0: wait for the lease as long as it takes
	retainEvents   int64         // events kept behind each snapshot
	bigSnapshot    int           // events since the last snapshot from which one holds the lease longer; 0: never
}

func defaultConfig() config {
	return config{
		clock:          clock.Real,
		snapshotEvery:  DefaultSnapshotEvery,
		journalTimeout: DefaultJournalTimeout,
		maxBatchEvents: DefaultMaxBatchEvents,
		maxBatchBytes:  DefaultMaxBatchBytes,
		retryMin:       DefaultMinRetryBackoff,
		retryMax:       DefaultMaxRetryBackoff,
		bigSnapshot:    DefaultBigSnapshot,
	}
}

func (c *config) validate() error {
	switch {
	case c.clock == nil:
		return fmt.Errorf("%w: clock is nil", ErrInvalidOption)
	case c.bigSnapshot < 0:
		return fmt.Errorf("%w: big snapshot %d events must not be negative (0 turns the longer lease off; default %d)", ErrInvalidOption, c.bigSnapshot, DefaultBigSnapshot)
	case c.snapshotEvery < 0:
		return fmt.Errorf("%w: snapshot every %d events must not be negative (0 turns snapshots off; default %d)", ErrInvalidOption, c.snapshotEvery, DefaultSnapshotEvery)
	case c.journalTimeout <= 0:
		return fmt.Errorf("%w: journal timeout %v must be positive (default %v)", ErrInvalidOption, c.journalTimeout, DefaultJournalTimeout)
	case c.fenceCheck < 0:
		return fmt.Errorf("%w: fence check interval %v must not be negative (0 turns it off)", ErrInvalidOption, c.fenceCheck)
	case c.maxBatchEvents < 1:
		return fmt.Errorf("%w: max batch events %d must be at least 1 (default %d)", ErrInvalidOption, c.maxBatchEvents, DefaultMaxBatchEvents)
	case c.maxBatchBytes < 1:
		return fmt.Errorf("%w: max batch bytes %d must be at least 1 (default %d)", ErrInvalidOption, c.maxBatchBytes, DefaultMaxBatchBytes)
	case c.retryMin <= 0 || c.retryMax < c.retryMin:
		return fmt.Errorf("%w: recovery retry backoff %v..%v needs 0 < min <= max (defaults %v, %v)", ErrInvalidOption, c.retryMin, c.retryMax, DefaultMinRetryBackoff, DefaultMaxRetryBackoff)
	case c.leaseMaxWait < 0 || (c.leaseMaxWait > 0 && c.leaseMaxWait <= c.leaseTTL):
		return fmt.Errorf("%w: lease max wait %v must be 0 (no bound) or longer than the lease ttl %v (a dead holder's successor waits up to the ttl)", ErrInvalidOption, c.leaseMaxWait, c.leaseTTL)
	case c.retainEvents < 0:
		return fmt.Errorf("%w: retain events %d must not be negative (0 deletes every event a snapshot covers)", ErrInvalidOption, c.retainEvents)
	case c.leaseTTL < 0 || (c.leaseTTL > 0 && c.leaseTTL < minLeaseTTL):
		return fmt.Errorf("%w: lease ttl %v must be 0 (no lease) or at least %v (it is renewed every third of it)", ErrInvalidOption, c.leaseTTL, minLeaseTTL)
	}
	return nil
}

// WithClock sets the clock the runtime's timers read (default the real
// clock); tests pass a clock.Manual.
func WithClock(c clock.Clock) Option { return func(cfg *config) { cfg.clock = c } }

// WithLogger sets the logger (default the actor system's).
func WithLogger(l *slog.Logger) Option { return func(cfg *config) { cfg.logger = l } }

// WithSnapshotEvery sets the number of events between snapshots (default
// DefaultSnapshotEvery; 0 never snapshots). The Handler may still decline a
// snapshot, e.g. one larger than the events it would replace.
func WithSnapshotEvery(n int) Option { return func(cfg *config) { cfg.snapshotEvery = n } }

// WithJournalTimeout bounds each journal call of recovery, snapshots and
// fence checks (default DefaultJournalTimeout).
func WithJournalTimeout(d time.Duration) Option {
	return func(cfg *config) { cfg.journalTimeout = d }
}

// WithFenceCheck makes the runtime look every d for events it did not write
// (default off). A cluster singleton needs it: protoactor can keep a stale
// activation that recovered once and never writes again; its own appends
// would be fenced, but until it writes it would answer from stale state.
// With a RecoveryMarker every activation writes an event when it recovers,
// so an older one sees it here and stops.
func WithFenceCheck(d time.Duration) Option { return func(cfg *config) { cfg.fenceCheck = d } }

// WithMaxBatch caps one group commit at events events and bytes encoded
// bytes (defaults DefaultMaxBatchEvents, DefaultMaxBatchBytes).
func WithMaxBatch(events, bytes int) Option {
	return func(cfg *config) { cfg.maxBatchEvents, cfg.maxBatchBytes = events, bytes }
}

// WithRecoveryRetry sets the backoff between recovery attempts that fail
// although the journal answers (what it holds cannot be replayed, or it
// refuses writes): min doubling up to max (defaults DefaultMinRetryBackoff,
// DefaultMaxRetryBackoff). While the journal does not answer at all, the
// runtime instead probes it with one cheap read, from min up to 250 ms
// apart (never longer, nor longer than max), and recovers at the first
// probe it answers.
func WithRecoveryRetry(minimum, maximum time.Duration) Option {
	return func(cfg *config) { cfg.retryMin, cfg.retryMax = minimum, maximum }
}

// WithLease makes the runtime hold a lease on its stream in the journal
// (Journal.Lease) while it serves, so that of two activations that cannot
// see each other but both reach the journal, one serves and the other
// waits, instead of each taking a new epoch that fences the other in turn.
// Default 0: no lease, as before.
//
// With a lease, recovery first takes the lease under a holder name unique to
// the activation, and only then a new epoch. While another activation's
// lease is live the runtime takes no epoch: it stays PhaseWaitingForLease
// (Recovered is false, as while recovering) and asks again when that lease
// may have lapsed, or after ttl/3 if that is sooner (the holder may release
// it); the wait is logged once per holder. Once it has the lease, a
// goroutine of the runtime renews it every ttl/3, through the rest of
// recovery and while the actor serves, without a round trip through the
// actor's mailbox (which a busy actor fills).
//
// The lease is exclusive: the runtime serves (Recovered is true) only until
// its local deadline, the start of the last renewal granted in time plus
// ttl, minus a drift margin of 2% of the ttl plus 1 ms; a renewal counts
// only if it was answered before that deadline. The journal keeps the
// lease for ttl from when the call reached it, on its own clock, and
// grants it to a waiting activation only after that: so the holder's last
// decision comes before the successor's first, whenever the journal's
// clock runs less than 2% faster than the holder's (a stepped wall clock
// is not covered; see each backend's clock). Once the deadline has passed
// the runtime renews at once and waits a third of the ttl: granted, it
// recovers under a new epoch before it serves again (another activation
// may have served meanwhile); refused (another holder took the lease) or
// unanswered, it stops the actor as when fenced. A stop (Stop, the actor
// stopping) releases the lease once the open batch is flushed and the
// appends in flight have finished, so a successor starts at once; an
// activation that dies without releasing leaves its successor to wait for
// the lease to lapse, at most ttl.
//
// Clock jumps count: a pause of the process, or a manual clock advanced by
// ttl or more at once, ends the service on the lease.
func WithLease(ttl time.Duration) Option { return func(cfg *config) { cfg.leaseTTL = ttl } }

// WithLeaseGuard sets a check the runtime makes before it takes the lease
// and before each renewal (default nil: always true). While it reports
// false before the lease is taken, the runtime waits, asking again every
// ttl/3, without taking it. When it reports false once the lease is taken,
// the runtime logs that the node is cut off, stops the actor and releases
// the lease so that another node's activation takes over at once. A node
// wires it to its membership ("this node has heard from another node
// lately"), so that the side of a partition that sees no one steps down.
// It is called on the actor's goroutine and on the goroutine that renews
// the lease: it must be quick and safe for concurrent use (an atomic read).
// Without WithLease it is never called.
func WithLeaseGuard(guard func() bool) Option {
	return func(cfg *config) { cfg.leaseGuard = guard }
}

// WithLeaseMaxWait bounds how long an activation waits for the lease
// (default 0: as long as it takes). Once it has waited d while another
// holder kept renewing (or the lease guard kept saying no), the activation
// stops itself instead of waiting on: the holder is alive and serving, so
// this one is a stray (a request routed by a node whose view was briefly
// out of date), and a stray that waits for ever answers the requests that
// reach it with "unavailable". Pick d above the ttl, so that the successor
// of a holder that died without releasing is never the one that gives up.
func WithLeaseMaxWait(d time.Duration) Option {
	return func(cfg *config) { cfg.leaseMaxWait = d }
}

// WithRetainEvents keeps the last n events a snapshot covers instead of
// deleting them all once the snapshot is saved (default 0: delete them).
// Recovery never needs them; readers of the stream itself do, such as the
// master's result feed, which serves finished work from the journal to
// readers that may be behind the latest snapshot.
func WithRetainEvents(n int64) Option { return func(cfg *config) { cfg.retainEvents = n } }

// DefaultBigSnapshot is the number of events since the previous snapshot
// from which a snapshot counts as big (see WithBigSnapshotLease).
const DefaultBigSnapshot = 50_000

// WithBigSnapshotLease sets when a snapshot is big: taken at least events
// events after the previous one (a handler's state grows with its events).
// With a lease (WithLease), the runtime renews its lease for the journal
// timeout, instead of the ttl, just before writing a big snapshot, and
// until the events it covers are deleted: the journal writes each in one
// long transaction, and renewals queued behind them would miss the ttl and
// stop a healthy actor (seen with a million queued works: a 100 MB snapshot
// and a million rows to delete, seconds each, against a 300 ms lease). The
// price: should the process die during those writes, a successor waits up
// to the journal timeout for the lease instead of the ttl. The first
// renewal after them shortens the lease to the ttl again. Default
// DefaultBigSnapshot; 0 never holds the lease longer.
func WithBigSnapshotLease(events int) Option { return func(cfg *config) { cfg.bigSnapshot = events } }
