package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Sentinel errors of the worker package. Errors returned by the package wrap
// one of them, so callers match with errors.Is.
var (
	// ErrDuplicateJobType is returned by Registry.Register for a job type that
	// is already registered.
	ErrDuplicateJobType = errors.New("worker: job type already registered")
	// ErrInvalidJobType is returned for an empty or malformed job type name.
	ErrInvalidJobType = errors.New("worker: invalid job type")
	// ErrUnknownJobType is reported (as WorkFailed) for Work whose job type
	// has no function in the worker's registry.
	ErrUnknownJobType = errors.New("worker: unknown job type")
	// ErrBadPayload is returned by the built-in jobs for a payload they cannot
	// decode; the message says what is accepted.
	ErrBadPayload = errors.New("worker: bad payload")
	// ErrJobPanicked is wrapped by *PanicError: the job function panicked.
	ErrJobPanicked = errors.New("worker: job panicked")
	// ErrDeadlinePassed is reported for Work whose caller's deadline passed
	// before it could start; the job is not started (seed 003).
	ErrDeadlinePassed = errors.New("worker: caller's deadline passed before the job started")
	// ErrCallerGone is reported for Work whose submitter (the WorkWaiter or
	// Interest in Work.waiter) no longer waits for the result: it answered
	// IAmNoLongerInterested, it is gone (dead letter), or it did not answer
	// within the interest timeout. Work not yet started is not started; work
	// already running has its ctx cancelled (seed 003). The master should
	// not retry it (see the package doc).
	ErrCallerGone = errors.New("worker: caller no longer waits for the result")
	// ErrLimiterClosed is reported for work handed back because the shared
	// adaptive.Limiter (WithLimiter) was closed: the node is shutting down.
	ErrLimiterClosed = errors.New("worker: concurrency limiter closed, work handed back")
	// ErrWorkerStopping is reported for work that was running or queued when
	// the worker stopped; the master re-queues it.
	ErrWorkerStopping = errors.New("worker: worker stopping, work handed back")
	// ErrInvalidOption is returned for an option with a value out of range.
	ErrInvalidOption = errors.New("worker: invalid option")
)

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
	mu   sync.RWMutex       // guards jobs
	jobs map[string]JobFunc // guarded by mu
}

// NewRegistry returns an empty registry. Add the built-in job types with
// RegisterBuiltins.
func NewRegistry() *Registry {
	return &Registry{jobs: make(map[string]JobFunc)}
}

// Register adds fn under jobType. It fails with ErrInvalidJobType for an empty
// name, a name with white space, or a nil fn, and with ErrDuplicateJobType when
// the name is taken.
func (r *Registry) Register(jobType string, fn JobFunc) error {
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
	return nil
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
	types := r.Types()
	if len(types) == 0 {
		return fmt.Errorf("%w: %q: this worker has no job types registered", ErrUnknownJobType, jobType)
	}
	return fmt.Errorf("%w: %q: this worker runs %s", ErrUnknownJobType, jobType, strings.Join(slices.Clone(types), ", "))
}
