package frontend

import (
	"errors"
	"fmt"

	"github.com/foreman-actors/foreman/actors/frontend/core"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/messages"
)

// Sentinel errors of the frontend package; returned errors wrap one of them
// or route.ErrNoMaster (the master could not be found or its PID is gone).
var (
	// ErrRejected: the master refused the work (see *RejectedError for the
	// code and reason). Nothing was stored.
	ErrRejected = errors.New("frontend: work rejected by master")
	// ErrTimeout: the master did not answer within the ask timeout.
	ErrTimeout = errors.New("frontend: master did not answer in time")
	// ErrInvalidWork: the Work is nil or has no work id.
	ErrInvalidWork = errors.New("frontend: invalid work")
	// ErrUnexpectedReply: the master answered with a message of the wrong type.
	ErrUnexpectedReply = errors.New("frontend: unexpected reply from master")
	// ErrWorkDead: the waited-for work is dead (out of attempts, a
	// permanent error, its deadline passed); re-submit the id to run it again.
	ErrWorkDead = errors.New("frontend: work is dead")
	// ErrWorkCancelled: the waited-for work was cancelled because its
	// caller stopped waiting; re-submit the id to run it again.
	ErrWorkCancelled = errors.New("frontend: work was cancelled")
	// ErrFeedGone: the result feed's cursor is older than the master's
	// retention (see *FeedGoneError for the oldest cursor still readable).
	ErrFeedGone = errors.New("frontend: result feed cursor is past the retention")
	// ErrFeedAhead: the cursor is ahead of the master's journal (it was
	// replaced); read from the start again.
	ErrFeedAhead = errors.New("frontend: result feed cursor is ahead of the journal")
	// ErrInvalidCursor: a cursor token that cannot be parsed.
	ErrInvalidCursor = core.ErrInvalidCursor
	// ErrInvalidOption is returned for an option with a value out of range.
	ErrInvalidOption = errors.New("frontend: invalid option")
	// ErrDuplicate: the work's unique key matched another job, which the
	// master answered with instead of queueing this one (see
	// *DuplicateError; docs/scheduling.md). Nothing new was stored.
	ErrDuplicate = errors.New("frontend: duplicate of another job by unique key")
)

// DuplicateError says which job holds the unique key of a submitted work:
// the work was not queued. As asynq's ErrDuplicateTask, it is an error so
// that a caller who ignores keys cannot take it for a new job; errors.Is
// matches ErrDuplicate.
type DuplicateError struct {
	// WorkID is the submitted work's id.
	WorkID string
	// Of is the id of the job that holds the key.
	Of string
	// Status is that job's status when the master answered.
	Status messages.WorkStatus
}

// Error describes the duplicate.
func (e *DuplicateError) Error() string {
	return fmt.Sprintf("%v: work %q: the key is held by %q (%s)", ErrDuplicate, e.WorkID, e.Of, e.Status)
}

// Is reports whether target is ErrDuplicate.
func (e *DuplicateError) Is(target error) bool { return target == ErrDuplicate }

// RejectedError is a WorkRejected from the master. It matches ErrRejected
// with errors.Is.
type RejectedError struct {
	// WorkID is the rejected work's id.
	WorkID string
	// Code says why; REJECT_CODE_UNAVAILABLE is temporary (Submit retries it).
	Code messages.RejectCode
	// Reason is the master's explanation.
	Reason string
}

// Error describes the rejection.
func (e *RejectedError) Error() string {
	return fmt.Sprintf("%v: work %q: %s: %s", ErrRejected, e.WorkID, e.Code, e.Reason)
}

// Is reports whether target is ErrRejected.
func (e *RejectedError) Is(target error) bool { return target == ErrRejected }

// Temporary reports whether retrying the same work later may succeed.
func (e *RejectedError) Temporary() bool {
	return e.Code == messages.RejectCode_REJECT_CODE_UNAVAILABLE
}

// errMasterGone marks an ask answered by the route's news that the
// master's node left (it also wraps route.ErrNoMaster): Submit sends again
// at once.
var errMasterGone = errors.New("the master's node left the cluster")

// classify turns an attempt's error into what the retry policy decides
// on (core.Result).
func classify(err error) core.Result {
	if err == nil {
		return core.Acked
	}
	if errors.Is(err, ErrDuplicate) {
		return core.Rejected // answered for good: not retried
	}
	var rej *RejectedError
	if errors.As(err, &rej) {
		if rej.Temporary() {
			return core.Unavailable
		}
		return core.Rejected
	}
	switch {
	case errors.Is(err, errMasterGone):
		return core.MasterGone
	case errors.Is(err, ErrTimeout):
		return core.TimedOut
	case errors.Is(err, route.ErrNoMaster):
		return core.NoMaster
	}
	return core.Failed
}

func wrapOpt(msg string) error { return fmt.Errorf("%w: %s", ErrInvalidOption, msg) }
