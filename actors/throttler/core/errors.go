package core

import "errors"

// Sentinel errors. Match them with errors.Is; the values returned by this
// package wrap them with details of what was wrong.
var (
	// ErrInvalidRate is returned for a Rate whose Calls or Per is not
	// positive, or whose Calls is too large for a strict mode.
	ErrInvalidRate = errors.New("throttler: invalid rate")
	// ErrInvalidOption is returned by constructors for an option with a
	// value out of its range.
	ErrInvalidOption = errors.New("throttler: invalid option")
	// ErrQueueFull is the reason given to a sender whose message was
	// rejected because the queue was at its bound (OverflowReject).
	ErrQueueFull = errors.New("throttler: queue full")
)
