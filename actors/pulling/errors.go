package pulling

import "errors"

// Sentinel errors of the package; match them with errors.Is.
var (
	// ErrInvalidConfig reports a bad option or StateConfig field.
	ErrInvalidConfig = errors.New("pulling: invalid configuration")
	// ErrBusy refuses a second Epic while one is running (CurrentlyBusy):
	// wait for EpicDone, then start the next one.
	ErrBusy = errors.New("pulling: currently busy with another epic")
	// ErrEpicFailed reports an Epic aborted because fetching from it kept
	// failing.
	ErrEpicFailed = errors.New("pulling: epic failed")
	// ErrNoCodec reports a remote worker or item that needs a Codec the
	// master or worker was not given (option WithCodec).
	ErrNoCodec = errors.New("pulling: no codec for a remote worker")
	// ErrStopped reports an Epic cut short because the master stopped.
	ErrStopped = errors.New("pulling: master stopped")
)
