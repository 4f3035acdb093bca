package membership

import (
	"crypto/tls"
	"net"
	"net/http"

	"github.com/foreman-actors/foreman/cluster/tlsconf"
)

// WithTLS serves GET /members over mutual TLS with the node's material and
// probes peers over it: a process without a certificate from the cluster CA
// can neither probe this node nor answer its probes, so it never enters
// this node's view (and, not being able to probe, is never learned from its
// own probes either). Every node of a cluster must use it or none: a plain
// node and a TLS node see each other as unreachable. nil is refused.
func WithTLS(m *tlsconf.Material) Option {
	return func(c *config) {
		if m == nil {
			c.fail("WithTLS: the TLS material is nil (load it with tlsconf.Load, or leave the option out)")
			return
		}
		c.tls = m
	}
}

// scheme is the URL scheme of probes.
func (c *config) scheme() string {
	if c.tls != nil {
		return "https"
	}
	return "http"
}

// secureTransport makes the probes' https:// requests speak mutual TLS.
func (c *config) secureTransport(tr *http.Transport, d *net.Dialer) {
	if c.tls != nil {
		tr.DialTLSContext = c.tls.DialTLSContext(d)
	}
}

// secureListener serves the endpoint over mutual TLS.
func (c *config) secureListener(ln net.Listener) net.Listener {
	if c.tls == nil {
		return ln
	}
	return tls.NewListener(ln, c.tls.ServerConfig())
}
