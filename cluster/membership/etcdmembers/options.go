package etcdmembers

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"
)

// Defaults of the options.
const (
	// DefaultTTL is the lease of a registration: a member that stops
	// renewing it (crashed, frozen, cut off from etcd) is dropped by the
	// others this long after its last renewal. etcd grants at least its own
	// minimum (1.5 election timeouts rounded up to a second: 2 s with
	// etcd's defaults), so asking for less changes nothing there.
	DefaultTTL = 2 * time.Second
	// DefaultStartTimeout bounds the first registration (and first read of
	// the members) when the provider starts.
	DefaultStartTimeout = 5 * time.Second
	// DefaultPrefix is the etcd key prefix of every Foreman cluster.
	DefaultPrefix = "/foreman"
	// DefaultPort is the etcd client port used when an endpoint has none.
	DefaultPort = 2379
)

// Sentinel errors. Errors returned by this package wrap one of them.
var (
	// ErrInvalidOption reports an option or endpoint that cannot work.
	ErrInvalidOption = errors.New("etcdmembers: invalid option")
	// ErrStart reports that the provider could not start (etcd not
	// reachable in time, node address unknown, started twice).
	ErrStart = errors.New("etcdmembers: cannot start")
)

// Option configures a [Provider].
type Option func(*config)

type config struct {
	ttl          time.Duration
	startTimeout time.Duration
	prefix       string
	logger       *slog.Logger
	tls          *tls.Config // nil: plain connections
	errs         []error
}

func defaultConfig() config {
	return config{ttl: DefaultTTL, startTimeout: DefaultStartTimeout, prefix: DefaultPrefix}
}

func (c *config) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...))
}

func (c *config) validate() error { return errors.Join(c.errs...) }

// WithTTL sets the lease of this node's registration (default
// [DefaultTTL]), in whole seconds (etcd's unit): at least 1 s. It is also
// how long a crashed node stays in the others' views. Renewals go every
// third of it.
func WithTTL(d time.Duration) Option {
	return func(c *config) {
		if d < time.Second || d%time.Second != 0 {
			c.fail("WithTTL(%v): must be a whole number of seconds, at least 1s (etcd leases count seconds)", d)
			return
		}
		c.ttl = d
	}
}

// WithStartTimeout bounds the first registration (default
// [DefaultStartTimeout]); it must be positive.
func WithStartTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.fail("WithStartTimeout(%v): must be positive", d)
			return
		}
		c.startTimeout = d
	}
}

// WithPrefix sets the etcd key prefix (default [DefaultPrefix]); the
// cluster's keys live under PREFIX/<cluster name>/. It must start with
// "/" and not end with one.
func WithPrefix(p string) Option {
	return func(c *config) {
		if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
			c.fail("WithPrefix(%q): must start with \"/\" and not end with one (example: /foreman)", p)
			return
		}
		c.prefix = p
	}
}

// WithTLS makes every connection to etcd use TLS with cfg (a clone of it:
// later changes to cfg do not count): the CA that signed etcd's server
// certificate in RootCAs, and this node's client certificate when etcd
// asks for one (--client-cert-auth). There is no fallback to plain
// connections. When the first registration fails, the provider tries a
// TLS handshake of its own with the first endpoint, so that the start
// error says what went wrong (an unknown CA, a name the certificate does
// not cover, a client certificate etcd refused).
func WithTLS(cfg *tls.Config) Option {
	return func(c *config) {
		if cfg == nil {
			c.fail("WithTLS(nil): give a *tls.Config; for plain connections leave the option out")
			return
		}
		c.tls = cfg.Clone()
	}
}

// WithLogger sets the logger (default: the cluster's).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// checkEndpoints checks etcd client endpoints, host:port or host (port
// [DefaultPort]), and returns them as host:port.
func checkEndpoints(eps []string) ([]string, error) {
	if len(eps) == 0 {
		return nil, fmt.Errorf("%w: no etcd endpoint; give at least one host:port", ErrInvalidOption)
	}
	out := make([]string, 0, len(eps))
	for _, ep := range eps {
		ep = strings.TrimSpace(ep)
		host, port, err := net.SplitHostPort(ep)
		if err != nil {
			if strings.Contains(err.Error(), "missing port") {
				host, port = ep, strconv.Itoa(DefaultPort)
			} else {
				return nil, fmt.Errorf("%w: etcd endpoint %q is not host:port: %w", ErrInvalidOption, ep, err)
			}
		}
		if host == "" || strings.ContainsAny(host, "/@?#") {
			return nil, fmt.Errorf("%w: etcd endpoint %q: want host:port (example: 10.0.0.5:2379)", ErrInvalidOption, ep)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%w: etcd endpoint %q: port %q is not 1-65535", ErrInvalidOption, ep, port)
		}
		out = append(out, net.JoinHostPort(host, port))
	}
	return out, nil
}
