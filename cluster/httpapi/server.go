package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"

	"github.com/foreman-actors/foreman/cluster/health"
)

// Server is the HTTP front of a frontend node: it turns POST /work, GET
// /work/{id}, GET /status and GET /healthz into calls of a [Backend]. Start
// it with [Server.Start] and stop it with [Server.Shutdown]; or mount
// [Server.Handler] in a server of your own.
type Server struct {
	cfg     config
	backend Backend
	log     *slog.Logger
	handler http.Handler
	feeds   feedShares // open result-feed reads per client

	mu      sync.Mutex
	srv     *http.Server
	ln      net.Listener
	done    chan struct{} // closed once Serve returned
	serve   error         // Serve's error other than ErrServerClosed
	stopped bool
}

// New returns a server of backend, not yet listening. It fails with
// ErrInvalidOption for a nil backend or an option out of range.
func New(backend Backend, opts ...Option) (*Server, error) {
	if backend == nil {
		return nil, fmt.Errorf("%w: nil backend", ErrInvalidOption)
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := cfg.logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.health == nil {
		var err error
		if cfg.health, err = health.New(health.WithLogger(log)); err != nil {
			return nil, err
		}
	}
	s := &Server{cfg: cfg, backend: backend, log: log.With("component", "http")}
	s.handler = s.routes()
	return s, nil
}

// Handler returns the API's handler, for use in another http.Server or in
// tests. It does not need Start.
func (s *Server) Handler() http.Handler { return s.handler }

// Start listens on the configured address and serves in the background. It
// returns once the listener is open (ctx bounds only that), so a client may
// connect as soon as Start returns. Starting twice fails with ErrServerState.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil || s.stopped {
		return fmt.Errorf("%w: Start called twice; make a new Server with New", ErrServerState)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.addr)
	if err != nil {
		return fmt.Errorf("httpapi: cannot listen on %s: %w (is another node using it? choose another address, e.g. --http 127.0.0.1:0)", s.cfg.addr, err)
	}
	if s.cfg.tls != nil {
		ln = tls.NewListener(ln, s.cfg.tls)
	}
	s.ln = ln
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.readHeaderTimeout,
		ReadTimeout:       s.cfg.readTimeout,
		WriteTimeout:      s.cfg.writeTimeout(),
		IdleTimeout:       s.cfg.idleTimeout,
		MaxHeaderBytes:    DefaultMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.done = make(chan struct{})
	go s.run(s.srv, ln, s.done)
	s.log.Info("http api listening", "addr", ln.Addr().String(), "tls", s.cfg.tls != nil, "tokens", s.cfg.tokens != nil)
	return nil
}

func (s *Server) run(srv *http.Server, ln net.Listener, done chan struct{}) {
	defer close(done)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.log.Error("http api stopped serving", "error", err)
		s.mu.Lock()
		s.serve = err
		s.mu.Unlock()
	}
}

// Addr returns the address the server listens on (with the port chosen
// when the configured port was 0), or "" before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Shutdown stops accepting connections and waits for requests in flight
// until ctx ends; then it closes the remaining connections. It returns once
// the server's goroutine has exited. Shutdown without Start, or twice, is a
// no-op.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv, done := s.srv, s.done
	already := s.stopped
	s.stopped = true
	s.mu.Unlock()
	if srv == nil || already {
		return nil
	}
	err := srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(fmt.Errorf("httpapi: shutdown: requests still running: %w", err), srv.Close())
	}
	<-done
	s.mu.Lock()
	serveErr := s.serve
	s.mu.Unlock()
	s.log.Info("http api stopped")
	return errors.Join(err, serveErr)
}
