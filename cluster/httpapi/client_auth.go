package httpapi

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
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

// withBearer wraps the Client's transport so that every request to the
// Client's origin carries the token, and makes the Client refuse a
// redirect to any other origin; a caller's http.Client is copied, not
// changed. The token is added by the transport, below http.Client's
// redirect handling (which drops an Authorization header of the caller's
// own only for another host, not for https to http): without the origin
// check a redirect would carry it to wherever the server pointed.
func (c *Client) withBearer() error {
	if c.token == "" {
		return nil
	}
	if err := checkToken(c.token); err != nil {
		return fmt.Errorf("%w: WithToken: %w", ErrInvalidOption, err)
	}
	base, err := url.Parse(c.base)
	if err != nil { // cannot happen: NewClient checked it
		return fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	home := origin(base)
	next := c.hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc := *c.hc
	hc.Transport = &bearerTransport{next: next, header: "Bearer " + c.token, origin: home}
	theirs := hc.CheckRedirect
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if origin(req.URL) != home {
			from := via[len(via)-1]
			return fmt.Errorf("%w: the server at %s redirected %s %s to %s; the token is sent only to %s, so the Client does not follow: "+
				"give the Client the address the API is served at (--to), or fix the server or proxy that redirects",
				ErrRedirected, c.base, from.Method, from.URL.Path, req.URL.Redacted(), c.base)
		}
		if theirs != nil {
			return theirs(req, via)
		}
		if len(via) >= 10 { // http.Client's own rule
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	c.hc = &hc
	return nil
}

// origin is a URL's scheme, host and port, with the scheme's default port
// spelled out: where a token may be sent.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// redirectErr returns the ErrRedirected inside a transport error, so that
// it is not reported as an unreachable server; nil for other errors.
func redirectErr(err error) error {
	if !errors.Is(err, ErrRedirected) {
		return nil
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// bearerTransport adds the Authorization header to each request to origin,
// and to no other.
type bearerTransport struct {
	next   http.RoundTripper
	header string
	origin string
}

func (t *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if origin(r.URL) != t.origin {
		return t.next.RoundTrip(r)
	}
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
