package httpapi

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"github.com/foreman-actors/foreman/cluster/health"
	"go.opentelemetry.io/otel/trace"

	"github.com/foreman-actors/foreman/cluster/metrics"
)

// Defaults of the server.
const (
	// DefaultAddr is the listen address when WithAddr is not given: the
	// frontend node 3000's port + 5000, on loopback.
	DefaultAddr = "127.0.0.1:8000"
	// DefaultMaxBodyBytes limits the body of POST /work (1 MiB); larger
	// bodies get 413.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultSubmitTimeout bounds how long POST /work waits for the
	// master's acknowledgement (retries included) before answering 503.
	DefaultSubmitTimeout = 5 * time.Second
	// DefaultQueryTimeout bounds GET /work/{id} and GET /status.
	DefaultQueryTimeout = 5 * time.Second
	// DefaultRetryAfter is the Retry-After of a 503: about one master
	// failover.
	DefaultRetryAfter = time.Second
	// DefaultReadHeaderTimeout bounds reading a request's headers.
	DefaultReadHeaderTimeout = 5 * time.Second
	// DefaultReadTimeout bounds reading a whole request.
	DefaultReadTimeout = 30 * time.Second
	// DefaultIdleTimeout closes idle keep-alive connections.
	DefaultIdleTimeout = 60 * time.Second
	// DefaultMaxHeaderBytes limits request headers.
	DefaultMaxHeaderBytes = 64 << 10
	// MaxIDLength is the longest accepted work id, in bytes.
	MaxIDLength = 256
	// MaxTypeLength is the longest accepted job type, in bytes.
	MaxTypeLength = 128
	// writeSlack is added to the longest handler wait to get the server's
	// write timeout, so a 503 can still be written.
	writeSlack = 5 * time.Second
)

// Option configures [New].
type Option func(*config)

type config struct {
	addr              string
	maxBody           int64
	submitTimeout     time.Duration
	queryTimeout      time.Duration
	retryAfter        time.Duration
	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	idleTimeout       time.Duration
	newID             func() string
	logger            *slog.Logger
	tokens            *Tokens          // nil: no token needed (WithTokens)
	tls               *tls.Config      // nil: plain HTTP (WithTLS)
	metrics           *metrics.Metrics // nil: no /metrics (obsroutes.go)
	health            *health.Checker  // nil: /livez and /readyz check only that the server runs
	feedPerClient     int              // open feed reads per client (feedshare.go)
	tracer            trace.Tracer     // nil: no spans of its own (trace.go)
	schedules         SchedulesAdmin   // nil: /schedules answers 501 (schedules.go)
	rates             RateAdmin        // nil: the rate endpoints answer 501 (rates.go)
}

func defaultConfig() config {
	return config{
		addr:              DefaultAddr,
		maxBody:           DefaultMaxBodyBytes,
		submitTimeout:     DefaultSubmitTimeout,
		queryTimeout:      DefaultQueryTimeout,
		retryAfter:        DefaultRetryAfter,
		readHeaderTimeout: DefaultReadHeaderTimeout,
		readTimeout:       DefaultReadTimeout,
		idleTimeout:       DefaultIdleTimeout,
		newID:             NewID,
		feedPerClient:     DefaultFeedReadsPerClient,
	}
}

func (c *config) validate() error {
	switch {
	case c.addr == "":
		return fmt.Errorf("%w: empty listen address; use host:port such as %s (port 0 picks a free port)", ErrInvalidOption, DefaultAddr)
	case c.maxBody <= 0:
		return fmt.Errorf("%w: max body %d bytes must be positive (default %d)", ErrInvalidOption, c.maxBody, DefaultMaxBodyBytes)
	case c.submitTimeout <= 0:
		return fmt.Errorf("%w: submit timeout %v must be positive (default %v)", ErrInvalidOption, c.submitTimeout, DefaultSubmitTimeout)
	case c.queryTimeout <= 0:
		return fmt.Errorf("%w: query timeout %v must be positive (default %v)", ErrInvalidOption, c.queryTimeout, DefaultQueryTimeout)
	case c.retryAfter < time.Second:
		return fmt.Errorf("%w: retry after %v must be at least 1s (Retry-After counts whole seconds)", ErrInvalidOption, c.retryAfter)
	case c.readHeaderTimeout <= 0 || c.readTimeout <= 0 || c.idleTimeout <= 0:
		return fmt.Errorf("%w: timeouts read header %v, read %v, idle %v must be positive", ErrInvalidOption, c.readHeaderTimeout, c.readTimeout, c.idleTimeout)
	case c.newID == nil:
		return fmt.Errorf("%w: nil id generator", ErrInvalidOption)
	case c.feedPerClient < 1:
		return fmt.Errorf("%w: feed reads per client %d must be at least 1 (default %d)", ErrInvalidOption, c.feedPerClient, DefaultFeedReadsPerClient)
	}
	return nil
}

// writeTimeout is the server's write timeout: the longest handler wait
// plus slack.
func (c *config) writeTimeout() time.Duration {
	return max(c.submitTimeout, c.queryTimeout) + writeSlack
}

// WithAddr sets the listen address, host:port (default DefaultAddr; port 0
// picks a free port, see [Server.Addr]).
func WithAddr(addr string) Option { return func(c *config) { c.addr = addr } }

// WithMaxBodyBytes limits the body of POST /work (default
// DefaultMaxBodyBytes); larger bodies are answered 413.
func WithMaxBodyBytes(n int64) Option { return func(c *config) { c.maxBody = n } }

// WithSubmitTimeout bounds the wait for the master's acknowledgement of
// POST /work, retries included (default DefaultSubmitTimeout); past it the
// answer is 503 with Retry-After.
func WithSubmitTimeout(d time.Duration) Option { return func(c *config) { c.submitTimeout = d } }

// WithQueryTimeout bounds GET /work/{id} and GET /status (default
// DefaultQueryTimeout).
func WithQueryTimeout(d time.Duration) Option { return func(c *config) { c.queryTimeout = d } }

// WithRetryAfter sets the Retry-After of 503 answers, rounded up to whole
// seconds (default DefaultRetryAfter).
func WithRetryAfter(d time.Duration) Option { return func(c *config) { c.retryAfter = d } }

// WithTimeouts sets the server's read-header, read and idle timeouts
// (defaults DefaultReadHeaderTimeout, DefaultReadTimeout,
// DefaultIdleTimeout). The write timeout follows the submit and query
// timeouts.
func WithTimeouts(readHeader, read, idle time.Duration) Option {
	return func(c *config) { c.readHeaderTimeout, c.readTimeout, c.idleTimeout = readHeader, read, idle }
}

// WithIDGenerator sets how ids are made for work submitted without one
// (default NewID).
func WithIDGenerator(fn func() string) Option { return func(c *config) { c.newID = fn } }

// WithHealth serves c's checks at GET /livez and GET /readyz (public, as
// Kubernetes' probes send no token); cluster/node's Health methods build a
// node's. Without it both answer 200 while the server runs.
func WithHealth(c *health.Checker) Option { return func(cfg *config) { cfg.health = c } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// NewID returns a random 128-bit work id as 32 hex digits.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}
