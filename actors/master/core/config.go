package core

import (
	"errors"
	"fmt"
	"time"

	routecore "github.com/foreman-actors/foreman/actors/route/core"
	"github.com/foreman-actors/foreman/messages"
)

// Sentinel errors.
var (
	// ErrUnknownEvent means the journal holds an event type WorkState does
	// not know (a newer version wrote it, or the stream is not a master's).
	ErrUnknownEvent = errors.New("master: unknown journal event")
	// ErrBadSnapshot means a stored snapshot is not a valid MasterSnapshot.
	ErrBadSnapshot = errors.New("master: invalid snapshot")
)

// DispatchLimiter rate-limits the hand-out of one job type. Reserve is
// called once per work about to be handed out; it takes a permit and
// returns ok, or returns the time until one may be available. The core
// calls it with the time of the step, never reads a clock: a limiter
// driven by that time alone keeps a simulated run deterministic.
type DispatchLimiter interface {
	Reserve(now time.Time) (ok bool, retryAfter time.Duration)
}

// Config is what the master's options decide for the core. The shell
// validates it (master.Option); the core trusts it.
type Config struct {
	// WorkTimeout: a work held longer is timed out; the cleanup tick runs
	// every half of it.
	WorkTimeout time.Duration
	// WorkerDeadAfter: an idle worker not heard from for so long is
	// forgotten.
	WorkerDeadAfter time.Duration
	// Policy decides retries and deadness.
	Policy Policy
	// DoneRetention and DoneLimit bound how long and how many finished
	// works are kept.
	DoneRetention time.Duration
	DoneLimit     int
	// MaxPayload is the largest accepted payload in bytes.
	MaxPayload int
	// JobTypes, when not nil, are the only job types accepted.
	JobTypes map[string]struct{}
	// Shard of Shards (Shards 0: not sharded): work of another shard is
	// rejected as invalid.
	Shard, Shards int
	// PriorityAging: a due work's priority counts one more per this much
	// waiting (0: no aging, a higher priority always goes first); see
	// WorkState.SetQueueing and docs/scheduling.md.
	PriorityAging time.Duration
	// FairnessWeights: works per turn of a fairness key in the hand-out's
	// rotation (a key not listed: 1).
	FairnessWeights map[string]int
	// Limiters rate-limit the hand-out per job type.
	Limiters map[string]DispatchLimiter
	// AwaitStarted sends a hand-out only once its WorkStarted is durable.
	AwaitStarted bool
	// StartedHold holds hand-out records for up to this long so that a
	// later journal write carries them (0: journal them at once).
	StartedHold time.Duration
	// Concurrency are the limits per concurrency key (keys.go).
	Concurrency ConcurrencyLimits
	// KeyRates are the hand-out rates per concurrency key (keyrate.go).
	KeyRates KeyRates
	// RecoveryStash is how many submissions are held while not serving.
	RecoveryStash int
	// Planted is test-only: it reintroduces a known bug so that the
	// simulator's tests can prove they catch it; never set in production.
	Planted Bug
}

// Check validates submitted work against the configuration; nil means
// acceptable.
func (c *Config) Check(w *messages.Work) *messages.WorkRejected {
	reject := func(code messages.RejectCode, reason string) *messages.WorkRejected {
		return &messages.WorkRejected{WorkId: w.GetWorkId(), Code: code, Reason: reason}
	}
	switch {
	case w.GetWorkId() == "":
		return reject(messages.RejectCode_REJECT_CODE_INVALID, "master: work id is empty; give every job a unique id")
	case w.GetJobType() == "":
		return reject(messages.RejectCode_REJECT_CODE_INVALID, "master: job type is empty; set it to a type the workers run (e.g. \"square\")")
	case len(w.GetPayload()) > c.MaxPayload:
		return reject(messages.RejectCode_REJECT_CODE_TOO_LARGE,
			fmt.Sprintf("master: payload is %d bytes, over the limit of %d; send a reference to the data instead", len(w.GetPayload()), c.MaxPayload))
	}
	if c.Shards > 1 {
		if k := routecore.ShardOf(w.GetWorkId(), c.Shards); k != c.Shard {
			return reject(messages.RejectCode_REJECT_CODE_INVALID,
				fmt.Sprintf("master: work %q belongs to shard %d of %d, not to this master (shard %d): the node that sent it routes with another number of shards; start every node of the cluster with --shards %d",
					w.GetWorkId(), k, c.Shards, c.Shard, c.Shards))
		}
	}
	if reason := c.checkKeys(w); reason != "" {
		return reject(messages.RejectCode_REJECT_CODE_INVALID, reason)
	}
	if c.JobTypes != nil {
		if _, ok := c.JobTypes[w.GetJobType()]; !ok {
			return reject(messages.RejectCode_REJECT_CODE_UNKNOWN_TYPE,
				fmt.Sprintf("master: unknown job type %q; this master accepts only its configured job types", w.GetJobType()))
		}
	}
	return nil
}

// Bug is test-only: it reintroduces a known bug so that the simulator's
// tests can prove they catch it; never set in production. The zero value
// is no bug.
type Bug int

// The bugs a Config.Planted can reintroduce.
const (
	// NoBug is production.
	NoBug Bug = iota
	// HandOutBeforeDurable hands out an accepted work before its
	// WorkAccepted is durable: a crash can then erase work a worker ran.
	HandOutBeforeDurable
	// AckBeforeFsync acks a submission before its event is durable.
	AckBeforeFsync
	// DuplicateKeepsFirstWaiter: a duplicate submission with a new waiter
	// records no WaiterAdded, so only the first caller is waited for and
	// told the outcome (issue 34, item 1).
	DuplicateKeepsFirstWaiter
	// HandOutEarly looks at pending work as if the clock read a second
	// later (earlyBy): a delayed work is handed out up to that long before
	// its run_at (issue 37, item 1).
	HandOutEarly
	// ConcurrencyLimitIgnored starts a work whatever its concurrency key's
	// running count (issue 37, item 5).
	ConcurrencyLimitIgnored
	// UniqueKeyIgnored accepts a submission whose unique key another
	// pending, running or recently finished job holds (issue 37, item 6).
	UniqueKeyIgnored
	// FairnessIgnored hands out the due work of a job type in the lanes'
	// order (priority, ready time, arrival) across fairness keys, as if
	// every key shared one lane: a flood delays every other key's work
	// (issue 37, item 4).
	FairnessIgnored
	// KeyRateForgotten: a recovery forgets the concurrency keys' recent
	// hand-out times, so a new master lets a key's full rate through at
	// once after a failover (issue 37, item 5).
	KeyRateForgotten
	// KeyRateIgnored hands out a key's works whatever its rate.
	KeyRateIgnored
)

// earlyBy is how far ahead HandOutEarly looks.
const earlyBy = int64(time.Second)

// earlyOf is how far ahead a state with bug b planted looks: 0 in production.
func earlyOf(b Bug) int64 {
	if b == HandOutEarly {
		return earlyBy
	}
	return 0
}
