// Package health runs a node's liveness and readiness checks and serves
// them as Kubernetes probes: GET /livez and GET /readyz, in the format of
// kube-apiserver's (200 "ok" when every check passes, 503 listing the
// failing checks otherwise, ?verbose listing every check, ?exclude=NAME
// leaving one out).
//
// A node builds its checks (cluster/node's Health methods); the HTTP API
// (cluster/httpapi.WithHealth) and the metrics listener
// (cluster/metrics.WithHealth) serve them with [Checker.Register]. An
// embedding program may call [Checker.Live] and [Checker.Ready] itself.
package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Paths of the probes.
const (
	// PathLivez answers whether the process should be restarted (503) or
	// not (200): Kubernetes' livenessProbe.
	PathLivez = "/livez"
	// PathReadyz answers whether the node should take traffic (200) or not
	// yet or no longer (503): Kubernetes' readinessProbe.
	PathReadyz = "/readyz"
)

// DefaultTimeout bounds each check: below Kubernetes' default probe
// timeout of 1 s would fail checks that cross the network on a loaded
// node, so charts set timeoutSeconds above it (deploy/helm/foreman sets 3).
const DefaultTimeout = 2 * time.Second

// Check is one named check. Run returns nil when the check passes; it must
// honour ctx, which carries the checker's timeout.
type Check struct {
	Name string
	Run  func(ctx context.Context) error
}

// Result is the outcome of one check.
type Result struct {
	Name string
	// Err is nil when the check passed.
	Err error
}

// Report is the outcome of a set of checks, in the order they were given.
type Report struct {
	Results []Result
}

// OK reports whether every check passed.
func (r Report) OK() bool {
	for _, c := range r.Results {
		if c.Err != nil {
			return false
		}
	}
	return true
}

// Failed returns the names of the checks that failed.
func (r Report) Failed() []string {
	var out []string
	for _, c := range r.Results {
		if c.Err != nil {
			out = append(out, c.Name)
		}
	}
	return out
}

// Err returns nil when every check passed, else an error naming each
// failed check and its reason.
func (r Report) Err() error {
	var errs []error
	for _, c := range r.Results {
		if c.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Name, c.Err))
		}
	}
	return errors.Join(errs...)
}

// Checker holds a node's liveness and readiness checks. It is safe for
// concurrent use.
type Checker struct {
	live    []Check
	ready   []Check
	timeout time.Duration
	log     *slog.Logger

	mu     sync.Mutex
	failed map[string]string // check kind/name -> last failure logged
}

// Option configures [New].
type Option func(*Checker)

// WithLive adds liveness checks: a failing one makes Kubernetes restart
// the process, so they test only what a restart cures (a blocked actor
// system), never a dependency.
func WithLive(checks ...Check) Option { return func(c *Checker) { c.live = append(c.live, checks...) } }

// WithReady adds readiness checks: a failing one takes the node out of its
// Service's endpoints (and a StatefulSet's rollout waits for it).
func WithReady(checks ...Check) Option {
	return func(c *Checker) { c.ready = append(c.ready, checks...) }
}

// WithTimeout bounds each check (default DefaultTimeout).
func WithTimeout(d time.Duration) Option { return func(c *Checker) { c.timeout = d } }

// WithLogger logs each check's failure with its reason when it starts
// failing and when it passes again (default slog.Default()); the probes'
// answers withhold the reasons, as kube-apiserver's do, since they are
// public.
func WithLogger(l *slog.Logger) Option { return func(c *Checker) { c.log = l } }

// New returns a Checker with the given checks. Both probes always include
// "ping", which passes while the process answers HTTP.
func New(opts ...Option) (*Checker, error) {
	c := &Checker{timeout: DefaultTimeout, failed: make(map[string]string)}
	for _, o := range opts {
		o(c)
	}
	if c.timeout <= 0 {
		return nil, fmt.Errorf("health: timeout %v must be positive (default %v)", c.timeout, DefaultTimeout)
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	seen := map[string]bool{"ping": true}
	for _, ch := range slices.Concat(c.live, c.ready) {
		if ch.Name == "" || ch.Run == nil || strings.ContainsAny(ch.Name, " \n[]") {
			return nil, fmt.Errorf("health: check %q needs a name without spaces or brackets and a Run function", ch.Name)
		}
	}
	for _, list := range [][]Check{c.live, c.ready} {
		clear(seen)
		seen["ping"] = true
		for _, ch := range list {
			if seen[ch.Name] {
				return nil, fmt.Errorf("health: two checks are named %q (\"ping\" is built in)", ch.Name)
			}
			seen[ch.Name] = true
		}
	}
	return c, nil
}

var ping = Check{Name: "ping", Run: func(context.Context) error { return nil }}

// Live runs the liveness checks concurrently, each bounded by the timeout.
func (c *Checker) Live(ctx context.Context) Report {
	return c.run(ctx, "livez", append([]Check{ping}, c.live...), nil)
}

// Ready runs the readiness checks concurrently, each bounded by the
// timeout.
func (c *Checker) Ready(ctx context.Context) Report {
	return c.run(ctx, "readyz", append([]Check{ping}, c.ready...), nil)
}

// run runs checks but those named in exclude.
func (c *Checker) run(ctx context.Context, kind string, checks []Check, exclude map[string]bool) Report {
	checks = slices.DeleteFunc(slices.Clone(checks), func(ch Check) bool { return exclude[ch.Name] })
	rep := Report{Results: make([]Result, len(checks))}
	var wg sync.WaitGroup
	for i, ch := range checks {
		rep.Results[i].Name = ch.Name
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, c.timeout)
			defer cancel()
			err := runOne(cctx, ch)
			if err == nil && cctx.Err() != nil {
				err = fmt.Errorf("no answer within %v: %w", c.timeout, cctx.Err())
			}
			rep.Results[i].Err = err
		})
	}
	wg.Wait()
	c.logChanges(kind, rep)
	return rep
}

// runOne runs ch, returning when it does or when ctx ends (a check that
// ignores ctx goes on in the background rather than hold the probe).
func runOne(ctx context.Context, ch Check) error {
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no answer in time: %w", ctx.Err())
	}
}

// logChanges logs a check that starts failing (or fails for another
// reason) and one that passes again, once each.
func (c *Checker) logChanges(kind string, rep Report) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range rep.Results {
		key := kind + "/" + r.Name
		prev, wasFailing := c.failed[key]
		switch {
		case r.Err != nil && prev != r.Err.Error():
			c.failed[key] = r.Err.Error()
			c.log.Warn("health check failed", "probe", kind, "check", r.Name, "error", r.Err)
		case r.Err == nil && wasFailing:
			delete(c.failed, key)
			c.log.Info("health check passes again", "probe", kind, "check", r.Name)
		}
	}
}

// Register serves GET /livez and GET /readyz on mux, and answers 405 to
// other methods there.
func (c *Checker) Register(mux *http.ServeMux) {
	mux.Handle("GET "+PathLivez, c.LivezHandler())
	mux.Handle("GET "+PathReadyz, c.ReadyzHandler())
	mux.HandleFunc(PathLivez, notAllowed)
	mux.HandleFunc(PathReadyz, notAllowed)
}

func notAllowed(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed: use GET", http.StatusMethodNotAllowed)
}

// LivezHandler serves the liveness checks (see [Checker.ReadyzHandler]
// for the format).
func (c *Checker) LivezHandler() http.Handler {
	return c.handler("livez", func() []Check { return append([]Check{ping}, c.live...) })
}

// ReadyzHandler serves the readiness checks as kube-apiserver serves its
// own: 200 with the body "ok" when every check passes; 503 with one line
// per check ("[+]NAME ok", "[-]NAME failed: reason withheld") and
// "readyz check failed" otherwise. ?verbose lists the checks on success
// too; ?exclude=NAME (repeatable) leaves a check out. The reasons are
// logged (WithLogger), not served: the probes need no token.
func (c *Checker) ReadyzHandler() http.Handler {
	return c.handler("readyz", func() []Check { return append([]Check{ping}, c.ready...) })
}

func (c *Checker) handler(kind string, checks func() []Check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		exclude := make(map[string]bool)
		for _, name := range q["exclude"] {
			exclude[name] = true
		}
		rep := c.run(r.Context(), kind, checks(), exclude)
		_, verbose := q["verbose"]
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		if rep.OK() && !verbose {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("ok"))
			return
		}
		var b strings.Builder
		for _, res := range rep.Results {
			if res.Err == nil {
				fmt.Fprintf(&b, "[+]%s ok\n", res.Name)
			} else {
				fmt.Fprintf(&b, "[-]%s failed: reason withheld\n", res.Name)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(exclude)) {
			fmt.Fprintf(&b, "[+]%s excluded: ok\n", name)
		}
		code := http.StatusOK
		if rep.OK() {
			fmt.Fprintf(&b, "%s check passed\n", kind)
		} else {
			code = http.StatusServiceUnavailable
			fmt.Fprintf(&b, "%s check failed\n", kind)
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte(b.String()))
	})
}
