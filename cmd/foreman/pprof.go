package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/foreman-actors/foreman/cluster/metrics"
)

// profileMux serves Go's runtime profiles under /debug/pprof/ (CPU,
// heap, allocs, goroutines, mutex, block, execution trace). It is built by
// hand, not through net/http/pprof's init, which registers on the default
// mux: the node's other servers never serve profiles by accident.
func profileMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// pprofAddr is the listen address of --pprof ADDR ("" when off): a bare
// port binds loopback, as --metrics does.
func pprofAddr(a nodeArgs) (string, error) {
	if a.pprof == "" {
		return "", nil
	}
	addr, err := metrics.ListenAddr(a.pprof)
	if err != nil {
		return "", fmt.Errorf("%w: --pprof: %w", errUsage, err)
	}
	return addr, nil
}

// startProfileServer serves the runtime profiles on --pprof ADDR, on a
// listener of its own (profiles show the program's internals, so they are
// never on the HTTP API's port), and returns the function that stops it (a
// no-op without the flag) and the address it listens on.
func startProfileServer(ctx context.Context, a nodeArgs, log *slog.Logger) (stop func(), listening string, err error) {
	addr, err := pprofAddr(a)
	if err != nil || addr == "" {
		return func() {}, "", err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("--pprof: cannot listen on %s: %w (choose another address)", addr, err)
	}
	// No write timeout: a CPU profile or trace answers after its ?seconds=.
	srv := &http.Server{Handler: profileMux(), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln) // ErrServerClosed after Shutdown
	}()
	log.Info("profiles listening", "addr", "http://"+ln.Addr().String()+"/debug/pprof/")
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			log.Warn("stopping the profile server", "error", err)
		}
		<-done
	}, ln.Addr().String(), nil
}
