package httpapi

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors of the httpapi package; returned errors wrap one of them.
// A Backend wraps these so the server can choose the status code without
// knowing how the master is reached.
var (
	// ErrInvalid: the request is malformed or the master refused the work
	// as invalid (HTTP 400).
	ErrInvalid = errors.New("httpapi: invalid request")
	// ErrTooLarge: the body or the payload is over the limit (HTTP 413).
	ErrTooLarge = errors.New("httpapi: request too large")
	// ErrNotFound: the master does not know the work id (HTTP 404).
	ErrNotFound = errors.New("httpapi: not found")
	// ErrUnavailable: the master did not answer in time or cannot be
	// reached; retrying later with the same work id is safe (HTTP 503).
	ErrUnavailable = errors.New("httpapi: master unavailable")
	// ErrConflict: the work is not in a state that allows the request,
	// such as re-submitting a work that is not dead (HTTP 409).
	ErrConflict = errors.New("httpapi: conflict")
	// ErrNotImplemented: the Backend does not offer this request (HTTP 501).
	ErrNotImplemented = errors.New("httpapi: not implemented")
	// ErrServer: the server failed in a way the client cannot fix (HTTP 500).
	ErrServer = errors.New("httpapi: server error")
	// ErrUnauthorized: the request had no valid bearer token (HTTP 401).
	ErrUnauthorized = errors.New("httpapi: unauthorized")
	// ErrRedirected: the server redirected a Client that has a token to
	// another origin (scheme, host or port), which the Client does not
	// follow: the token is sent only to the origin the Client was made for.
	ErrRedirected = errors.New("httpapi: redirected to another origin")
	// ErrInvalidOption is returned for an option with a value out of range.
	ErrInvalidOption = errors.New("httpapi: invalid option")
	// ErrServerState: Start on a started server, or Addr before Start.
	ErrServerState = errors.New("httpapi: server state")
)

// APIError is a non-2xx answer of the HTTP API as the [Client] sees it. It
// matches the sentinel of its status code with errors.Is (400 ErrInvalid,
// 401 ErrUnauthorized, 404 ErrNotFound, 413 ErrTooLarge, 503 ErrUnavailable, other 5xx
// ErrServer).
type APIError struct {
	// StatusCode is the HTTP status code.
	StatusCode int
	// Message is the server's {"error": ...} text, or the raw body.
	Message string
	// RetryAfter is the server's Retry-After, 0 when absent.
	RetryAfter time.Duration
	// OldestCursor is the oldest result-feed cursor still readable, in a
	// 410 answer to GET /results (the cursor was past the retention).
	OldestCursor string
}

// Error describes the answer.
func (e *APIError) Error() string {
	return fmt.Sprintf("httpapi: server answered %d: %s", e.StatusCode, e.Message)
}

// Is matches the sentinel of the status code.
func (e *APIError) Is(target error) bool {
	return target != nil && target == sentinelFor(e.StatusCode)
}

// sentinelFor maps a status code to its sentinel error, nil for none.
func sentinelFor(code int) error {
	switch {
	case code == 400:
		return ErrInvalid
	case code == 401:
		return ErrUnauthorized
	case code == 404:
		return ErrNotFound
	case code == 409:
		return ErrConflict
	case code == 413:
		return ErrTooLarge
	case code == 501:
		return ErrNotImplemented
	case code == 503:
		return ErrUnavailable
	case code >= 500:
		return ErrServer
	default:
		return nil
	}
}
