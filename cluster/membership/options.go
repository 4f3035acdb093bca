package membership

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/cluster/tlsconf"
)

// Defaults of the options.
const (
	// DefaultBindHost is the interface the membership HTTP server listens on.
	// Loopback by default: listen on another interface only when told to.
	DefaultBindHost = "127.0.0.1"
	// DefaultPortOffset is added to a node's remote port to get the port of
	// its membership HTTP endpoint (2551 -> 6551).
	DefaultPortOffset = 4000
	// DefaultRefresh is the interval between two probes of a peer.
	DefaultRefresh = 100 * time.Millisecond
	// DefaultTimeout bounds one probe (connect, request and answer). A probe
	// without an answer in time counts only towards the silence.
	DefaultTimeout = 300 * time.Millisecond
	// DefaultFailures is the number of consecutive fast failures (connection
	// refused or reset, a broken answer) after which this node declares a
	// member down. The second probe follows the first after a quarter of the
	// refresh, so a crashed member is dropped 25-125 ms after it died.
	DefaultFailures = 2
	// DefaultSilence is how long a member may go without a good answer to
	// this node's probes before this node declares it down: a paused,
	// overloaded or cut-off member gives no answer rather than a fast
	// failure. One second rides out stop-the-world pauses and a loaded
	// machine (see BENCH.md) and still finds a partition within a second.
	DefaultSilence = time.Second
	// DefaultForget is how long a learned member endpoint that went down is
	// still probed, so that the member joins again when a partition heals.
	// Seeds are probed for ever.
	DefaultForget = 30 * time.Second
	// DefaultClientTTL is, in probe rounds, how long a member keeps
	// reporting a cluster client after that client last polled it.
	DefaultClientTTL = 10
	// MaxResponseBytes bounds a /members answer that a probe reads.
	MaxResponseBytes = 1 << 20
)

// Sentinel errors. Errors returned by this package wrap one of them.
var (
	// ErrInvalidOption reports an option value that cannot work.
	ErrInvalidOption = errors.New("membership: invalid option")
	// ErrStart reports that the provider could not start (HTTP port in use,
	// node address unknown, started twice).
	ErrStart = errors.New("membership: cannot start")
	// ErrProbe reports a failed probe of a peer (unreachable, timeout, bad
	// answer, another cluster).
	ErrProbe = errors.New("membership: probe failed")
)

// Option configures a [Provider].
type Option func(*config)

type config struct {
	seeds      []string // node addresses host:port (remote port)
	seedHTTP   []string // membership endpoints given directly
	bindHost   string
	httpAddr   string
	portOffset int
	refresh    time.Duration
	timeout    time.Duration
	failures   int
	silence    time.Duration
	forget     time.Duration
	clientTTL  int
	logger     *slog.Logger
	clock      clock.Clock
	tls        *tlsconf.Material // nil: plain HTTP (WithTLS)
	errs       []error
}

func defaultConfig() config {
	return config{
		bindHost:   DefaultBindHost,
		portOffset: DefaultPortOffset,
		refresh:    DefaultRefresh,
		timeout:    DefaultTimeout,
		failures:   DefaultFailures,
		silence:    DefaultSilence,
		forget:     DefaultForget,
		clientTTL:  DefaultClientTTL,
	}
}

func (c *config) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...))
}

// WithSeeds sets the seed nodes by their remote address host:port (as
// given to remote.Configure, e.g. "127.0.0.1:2551"). Their membership
// endpoint is host:(port + port offset). A new node needs only the seeds:
// it learns every other member from their answers. A seed may be down, and
// a node may list itself.
func WithSeeds(addrs ...string) Option {
	return func(c *config) {
		for _, a := range addrs {
			if _, _, err := splitHostPort(a); err != nil {
				c.fail("seed %q: %v; give seeds as host:port of the node's remote port, e.g. 127.0.0.1:2551", a, err)
				continue
			}
			c.seeds = append(c.seeds, a)
		}
	}
}

// WithSeedHTTP adds seeds by the address of their membership HTTP endpoint
// (host:port), for nodes whose endpoint does not follow the port offset
// (see [WithHTTPAddr]), such as test nodes on free ports.
func WithSeedHTTP(addrs ...string) Option {
	return func(c *config) {
		for _, a := range addrs {
			if _, _, err := splitHostPort(a); err != nil {
				c.fail("seed endpoint %q: %v; want host:port", a, err)
				continue
			}
			c.seedHTTP = append(c.seedHTTP, a)
		}
	}
}

// WithBindHost sets the interface the membership HTTP server listens on
// (default [DefaultBindHost], loopback). The endpoint's port is the remote
// port plus the port offset.
func WithBindHost(host string) Option {
	return func(c *config) {
		if host == "" {
			c.fail("bind host is empty; want an IP or host name such as 127.0.0.1")
			return
		}
		c.bindHost = host
	}
}

// WithHTTPAddr sets the full listen address of the membership endpoint
// (host:port; port 0 picks a free port), replacing bind host and port
// offset. Others learn the actual address from this node's answers.
func WithHTTPAddr(addr string) Option {
	return func(c *config) {
		if _, _, err := splitHostPort(addr); err != nil {
			c.fail("HTTP address %q: %v; want host:port such as 127.0.0.1:6551", addr, err)
			return
		}
		c.httpAddr = addr
	}
}

// WithPortOffset sets what is added to a remote port to get the membership
// endpoint's port (default [DefaultPortOffset]). All nodes must agree.
func WithPortOffset(n int) Option {
	return func(c *config) {
		if n <= 0 || n > 65535 {
			c.fail("port offset %d: want 1..65535", n)
			return
		}
		c.portOffset = n
	}
}

// WithRefresh sets the interval between probe rounds (default
// [DefaultRefresh]). A crashed member is detected within about a refresh;
// a silent one after the silence period.
func WithRefresh(d time.Duration) Option {
	return durationOption("refresh", d, func(c *config) *time.Duration { return &c.refresh })
}

// WithTimeout sets how long one probe may take (default [DefaultTimeout]).
func WithTimeout(d time.Duration) Option {
	return durationOption("probe timeout", d, func(c *config) *time.Duration { return &c.timeout })
}

// WithFailures sets how many consecutive probes of a member by this node
// must fail before this node declares it down (default [DefaultFailures]).
func WithFailures(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.fail("failures %d: want at least 1", n)
			return
		}
		c.failures = n
	}
}

// WithSilence sets how long a member may give no good answer to this
// node's probes before this node declares it down (default
// [DefaultSilence]). It bounds how fast a partition or a hung machine is
// noticed, and must be longer than the pauses a healthy node can have.
// Once it has passed without this node hearing from any other,
// [Provider.CutOff] reports true.
func WithSilence(d time.Duration) Option {
	return durationOption("silence", d, func(c *config) *time.Duration { return &c.silence })
}

// WithForget sets how long a learned member endpoint is still probed after
// its member went down (default [DefaultForget]): a member that comes back
// within it joins again by itself. Seeds are probed for ever.
func WithForget(d time.Duration) Option {
	return durationOption("forget", d, func(c *config) *time.Duration { return &c.forget })
}

// durationOption sets the duration field picks out to d, or records that
// d is below the 1 ms every interval of the provider needs.
func durationOption(name string, d time.Duration, field func(*config) *time.Duration) Option {
	return func(c *config) {
		if d < time.Millisecond {
			c.fail("%s %v: want at least 1ms", name, d)
			return
		}
		*field(c) = d
	}
}

// WithClientTTL sets, in probe rounds, how long a member keeps reporting a
// cluster client (a node started with StartClient) after its last poll
// (default [DefaultClientTTL]).
func WithClientTTL(rounds int) Option {
	return func(c *config) {
		if rounds < 1 {
			c.fail("client TTL %d rounds: want at least 1", rounds)
			return
		}
		c.clientTTL = rounds
	}
}

// WithLogger sets the logger (default: the actor system's logger).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithClock sets the clock that paces probe rounds and ages clients
// (default the real clock).
func WithClock(cl clock.Clock) Option {
	return func(c *config) { c.clock = cl }
}

func (c *config) validate() error {
	if c.silence <= c.refresh {
		c.fail("silence %v is not longer than the refresh %v: members would be dropped between two probes", c.silence, c.refresh)
	}
	if len(c.errs) > 0 {
		return errors.Join(c.errs...)
	}
	return nil
}

// splitHostPort parses host:port with a numeric port in 0..65535.
func splitHostPort(addr string) (string, int, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	if host == "" {
		return "", 0, errors.New("missing host")
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("port %q is not a number in 0..65535", ps)
	}
	return host, port, nil
}

// offsetAddr returns host:(port+offset) for a node address.
func offsetAddr(node string, offset int) (string, error) {
	host, port, err := splitHostPort(node)
	if err != nil {
		return "", err
	}
	if port == 0 {
		return "", errors.New("port 0 has no membership endpoint")
	}
	if port+offset > 65535 {
		return "", fmt.Errorf("port %d + offset %d exceeds 65535; use WithHTTPAddr or a smaller offset", port, offset)
	}
	return net.JoinHostPort(host, strconv.Itoa(port+offset)), nil
}
