package httpapi

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
)

// WithToken makes the Client send "Authorization: Bearer token" on every
// request (see the server's WithTokens). A request the server refuses
// fails with an *APIError matching [ErrUnauthorized].
func WithToken(token string) ClientOption {
	return func(c *Client) { c.token = strings.TrimSpace(token) }
}

// WithTLSConfig sets the TLS configuration of the Client's own transport,
// e.g. RootCAs holding the cluster CA for an https:// API with the node
// certificate. It cannot be combined with WithHTTPClient.
func WithTLSConfig(cfg *tls.Config) ClientOption {
	return func(c *Client) { c.tlsCfg = cfg }
}

// withBearer wraps the Client's transport so that every request carries
// the token; a caller's http.Client is copied, not changed.
func (c *Client) withBearer() error {
	if c.token == "" {
		return nil
	}
	if err := checkToken(c.token); err != nil {
		return fmt.Errorf("%w: WithToken: %w", ErrInvalidOption, err)
	}
	next := c.hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc := *c.hc
	hc.Transport = &bearerTransport{next: next, header: "Bearer " + c.token}
	c.hc = &hc
	return nil
}

// bearerTransport adds the Authorization header to each request.
type bearerTransport struct {
	next   http.RoundTripper
	header string
}

func (t *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", t.header)
	return t.next.RoundTrip(r)
}

// CloseIdleConnections passes on to the wrapped transport.
func (t *bearerTransport) CloseIdleConnections() {
	if ci, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}
