package core

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors of the worker. The worker package re-exports them under
// the same names (worker.ErrCallerGone is this ErrCallerGone), so callers
// match with errors.Is either way.
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
	// ErrJobPanicked is wrapped by the worker's PanicError: the job function
	// panicked.
	ErrJobPanicked = errors.New("worker: job panicked")
	// ErrDeadlinePassed is reported for Work whose caller's deadline passed
	// before it could start; the job is not started (seed 003).
	ErrDeadlinePassed = errors.New("worker: caller's deadline passed before the job started")
	// ErrCallerGone is reported for Work whose submitter (the WorkWaiter or
	// Interest in Work.waiter) no longer waits for the result: it answered
	// IAmNoLongerInterested, it is gone (dead letter), or it did not answer
	// within the interest timeout. Work not yet started is not started; work
	// already running has its ctx cancelled (seed 003). The master should
	// not retry it.
	ErrCallerGone = errors.New("worker: caller no longer waits for the result")
	// ErrLimiterClosed is reported for work handed back because the shared
	// adaptive.Limiter (WithLimiter) was closed: the node is shutting down.
	ErrLimiterClosed = errors.New("worker: concurrency limiter closed, work handed back")
	// ErrWorkerStopping is reported for work that was running or queued when
	// the worker stopped; the master re-queues it.
	ErrWorkerStopping = errors.New("worker: worker stopping, work handed back")
	// ErrDrainTimeout is the cause with which a draining worker cancels the
	// jobs still running when its drain timeout passes (context.Cause of
	// the job's ctx), and is reported for them: the master re-queues them
	// at once without counting the attempt.
	ErrDrainTimeout = errors.New("worker: drain timeout passed: job cancelled, work handed back")
	// ErrInvalidOption is returned for an option with a value out of range.
	ErrInvalidOption = errors.New("worker: invalid option")
)

// Permanent reports whether a job's error will not go away when the job is
// retried: a payload the job cannot parse, a job type the worker does not
// know, a passed deadline or a caller who has gone. The master marks such
// work dead at once instead of spending its attempts.
func Permanent(err error) bool {
	return errors.Is(err, ErrBadPayload) || errors.Is(err, ErrUnknownJobType) ||
		errors.Is(err, ErrDeadlinePassed) || errors.Is(err, ErrCallerGone)
}

// HandedBack reports whether err gives the work back unfinished, with no
// verdict on the job: the worker stopped or its drain timed out. The
// master re-queues such work at once and does not count the attempt.
func HandedBack(err error) bool {
	return errors.Is(err, ErrWorkerStopping) || errors.Is(err, ErrDrainTimeout)
}

// UnknownTypeError explains which job types (sorted) a worker knows.
func UnknownTypeError(jobType string, types []string) error {
	if len(types) == 0 {
		return fmt.Errorf("%w: %q: this worker has no job types registered", ErrUnknownJobType, jobType)
	}
	return fmt.Errorf("%w: %q: this worker runs %s", ErrUnknownJobType, jobType, strings.Join(types, ", "))
}
