package worker

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/foreman-actors/foreman/actors/worker/core"
)

// Sentinel errors of the worker package (defined in actors/worker/core,
// which decides when each is reported). Errors returned by the package wrap
// one of them, so callers match with errors.Is.
var (
	// ErrDuplicateJobType is returned by Registry.Register for a job type that
	// is already registered.
	ErrDuplicateJobType = core.ErrDuplicateJobType
	// ErrInvalidJobType is returned for an empty or malformed job type name.
	ErrInvalidJobType = core.ErrInvalidJobType
	// ErrUnknownJobType is reported (as WorkFailed) for Work whose job type
	// has no function in the worker's registry.
	ErrUnknownJobType = core.ErrUnknownJobType
	// ErrBadPayload is returned by the built-in jobs for a payload they cannot
	// decode; the message says what is accepted.
	ErrBadPayload = core.ErrBadPayload
	// ErrJobPanicked is wrapped by *PanicError: the job function panicked.
	ErrJobPanicked = core.ErrJobPanicked
	// ErrDeadlinePassed is reported for Work whose caller's deadline passed
	// before it could start; the job is not started (seed 003).
	ErrDeadlinePassed = core.ErrDeadlinePassed
	// ErrCallerGone is reported for Work whose submitter (the WorkWaiter or
	// Interest in Work.waiter) no longer waits for the result: it answered
	// IAmNoLongerInterested, it is gone (dead letter), or it did not answer
	// within the interest timeout. Work not yet started is not started; work
	// already running has its ctx cancelled (seed 003). The master should
	// not retry it (see the package doc).
	ErrCallerGone = core.ErrCallerGone
	// ErrLimiterClosed is reported for work handed back because the shared
	// adaptive.Limiter (WithLimiter) was closed: the node is shutting down.
	ErrLimiterClosed = core.ErrLimiterClosed
	// ErrWorkerStopping is reported for work that was running or queued when
	// the worker stopped; the master re-queues it.
	ErrWorkerStopping = core.ErrWorkerStopping
	// ErrDrainTimeout is the cause (context.Cause) with which a draining
	// worker cancels the jobs still running when its drain timeout passes;
	// they are handed back to the master, which runs them again elsewhere
	// without counting the attempt.
	ErrDrainTimeout = core.ErrDrainTimeout
	// ErrInvalidOption is returned for an option with a value out of range.
	ErrInvalidOption = core.ErrInvalidOption
)

// Permanent reports whether a job's error will not go away when the job is
// retried: a payload the job cannot parse, a job type the worker does not
// know, a passed deadline or a caller who has gone. The master marks such
// work dead at once instead of spending its attempts.
func Permanent(err error) bool { return core.Permanent(err) }

// JobFunc runs one job: it turns the Work's payload into a result. It is the
// library's extension point: register one per job type in a Registry.
//
// ctx is cancelled when the worker stops (and carries the caller's deadline
// when the Work has one); long jobs should return ctx.Err() promptly then.
// A returned error or a panic becomes WorkFailed, and the master retries the
// work. A JobFunc may be called concurrently from several executors.
type JobFunc func(ctx context.Context, payload []byte) ([]byte, error)

// Registry maps job types to job functions. It is safe for concurrent use;
// register everything before the workers start.
type Registry struct {
	mu    sync.RWMutex             // guards jobs and beats
	jobs  map[string]JobFunc       // guarded by mu
	beats map[string]time.Duration // heartbeat timeouts; guarded by mu
}

// JobOption configures a job type at its registration (Registry.Register).
type JobOption func(*jobConfig)

type jobConfig struct{ beatTimeout time.Duration }

// WithHeartbeatTimeout declares that the job type's jobs heartbeat
// (Heartbeat, Progress) at least once every d: once a job has beat, the
// master times it out and retries it when d passes without a heartbeat,
// instead of applying its work timeout to the whole job, so a job may run
// far longer than the work timeout. d should span several heartbeat
// intervals (WithHeartbeatInterval, default 1 s). See docs/long-jobs.md.
func WithHeartbeatTimeout(d time.Duration) JobOption {
	return func(c *jobConfig) { c.beatTimeout = d }
}

// NewRegistry returns an empty registry. Add the built-in job types with
// RegisterBuiltins.
func NewRegistry() *Registry {
	return &Registry{jobs: make(map[string]JobFunc), beats: make(map[string]time.Duration)}
}

// Register adds fn under jobType. It fails with ErrInvalidJobType for an empty
// name, a name with white space, or a nil fn, and with ErrDuplicateJobType when
// the name is taken.
func (r *Registry) Register(jobType string, fn JobFunc, opts ...JobOption) error {
	var jc jobConfig
	for _, o := range opts {
		o(&jc)
	}
	if jc.beatTimeout < 0 || (jc.beatTimeout > 0 && jc.beatTimeout < time.Millisecond) {
		return fmt.Errorf("%w: %q: heartbeat timeout %v: must be at least 1ms (0 = none)", ErrInvalidOption, jobType, jc.beatTimeout)
	}
	if jobType == "" || strings.ContainsFunc(jobType, func(c rune) bool { return c <= ' ' }) {
		return fmt.Errorf("%w: %q: use a non-empty name without spaces, e.g. \"square\"", ErrInvalidJobType, jobType)
	}
	if fn == nil {
		return fmt.Errorf("%w: %q: the job function is nil", ErrInvalidJobType, jobType)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.jobs[jobType]; ok {
		return fmt.Errorf("%w: %q (register each job type once)", ErrDuplicateJobType, jobType)
	}
	r.jobs[jobType] = fn
	if jc.beatTimeout > 0 {
		r.beats[jobType] = jc.beatTimeout
	}
	return nil
}

// HeartbeatTimeout returns the heartbeat timeout jobType was registered
// with (WithHeartbeatTimeout); 0 when none.
func (r *Registry) HeartbeatTimeout(jobType string) time.Duration {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.beats[jobType]
}

// Lookup returns the function registered for jobType.
func (r *Registry) Lookup(jobType string) (JobFunc, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	fn, ok := r.jobs[jobType]
	return fn, ok
}

// Types returns the registered job types, sorted.
func (r *Registry) Types() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.jobs))
	for k := range r.jobs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// unknownTypeError explains which job types the registry knows.
func (r *Registry) unknownTypeError(jobType string) error {
	return core.UnknownTypeError(jobType, r.Types())
}
