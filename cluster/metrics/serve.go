package metrics

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/foreman-actors/foreman/cluster/health"
)

// ListenAddr turns a --metrics value into a listen address: "9100" and
// ":9100" bind the loopback interface (metrics are not exposed beyond the
// host unless a host is given: "0.0.0.0:9100").
func ListenAddr(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("address is empty; give a port (9100) or host:port")
	}
	if !strings.Contains(s, ":") {
		s = ":" + s
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", fmt.Errorf("address %q: %w (want a port, :port or host:port)", s, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return "", fmt.Errorf("address %q: port %q is not a number in 0..65535", s, port)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// Server serves GET /metrics (and, WithHealth, the probes) on its own listener (the --metrics flag of
// nodes without an HTTP API).
type Server struct {
	srv  *http.Server
	ln   net.Listener
	cfg  serveConfig
	done chan struct{}
}

// ServeOption configures [Serve].
type ServeOption func(*serveConfig)

type serveConfig struct {
	tls    *tls.Config
	valid  func(token string) bool
	health *health.Checker
}

// WithTLS serves HTTPS with cfg (e.g. tlsconf.APIServerConfig, the HTTP
// API's). nil: plain HTTP.
func WithTLS(cfg *tls.Config) ServeOption { return func(c *serveConfig) { c.tls = cfg } }

// WithBearer makes a scrape need "Authorization: Bearer TOKEN" with a
// token valid accepts (e.g. httpapi.Tokens.Valid, the HTTP API's tokens);
// any other request is answered 401 with a JSON error. nil: no token.
func WithBearer(valid func(token string) bool) ServeOption {
	return func(c *serveConfig) { c.valid = valid }
}

// WithHealth also serves c's checks at GET /livez and GET /readyz, without
// a token (Kubernetes' probes send none; they name checks and carry no
// data): the probes of nodes whose only listener is --metrics (backends,
// workers). cluster/node's Health methods build a node's checks.
func WithHealth(c *health.Checker) ServeOption { return func(cfg *serveConfig) { cfg.health = c } }

// Serve listens on addr (see ListenAddr) and serves m at /metrics until
// Shutdown.
func Serve(ctx context.Context, addr string, m *Metrics, opts ...ServeOption) (*Server, error) {
	la, err := ListenAddr(addr)
	if err != nil {
		return nil, err
	}
	var cfg serveConfig
	for _, o := range opts {
		o(&cfg)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", la)
	if err != nil {
		return nil, fmt.Errorf("metrics: cannot listen on %s: %w (choose another --metrics address)", la, err)
	}
	if cfg.tls != nil {
		ln = tls.NewListener(ln, cfg.tls)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", requireBearer(cfg.valid, m.Handler()))
	if cfg.health != nil {
		cfg.health.Register(mux)
	}
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln, cfg: cfg, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // ErrServerClosed after Shutdown
	}()
	return s, nil
}

// requireBearer answers 401 to a request without a token valid accepts;
// nil valid: next itself.
func requireBearer(valid func(string) bool, next http.Handler) http.Handler {
	if valid == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const prefix = "bearer "
		h := r.Header.Get("Authorization")
		tok := ""
		if len(h) > len(prefix) && strings.EqualFold(h[:len(prefix)], prefix) {
			tok = strings.TrimSpace(h[len(prefix):])
		}
		if tok != "" && valid(tok) {
			next.ServeHTTP(w, r)
			return
		}
		challenge := `Bearer realm="foreman"`
		msg := "these metrics need a token: send the header Authorization: Bearer TOKEN with a token from the node's --api-token-file (Prometheus: authorization.credentials_file)"
		if tok != "" {
			challenge += `, error="invalid_token"`
			msg = "the bearer token is not valid: use a token from the node's --api-token-file"
		}
		body, _ := json.Marshal(map[string]string{"error": msg}) // cannot fail for strings
		w.Header().Set("WWW-Authenticate", challenge)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write(append(body, '\n'))
	})
}

// TLS reports whether the server serves HTTPS.
func (s *Server) TLS() bool { return s.cfg.tls != nil }

// Tokens reports whether a scrape needs a bearer token.
func (s *Server) Tokens() bool { return s.cfg.valid != nil }

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Shutdown stops the server, waiting for scrapes in flight until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
