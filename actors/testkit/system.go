package testkit

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Default timeouts used by [Timeout].
const (
	// DefaultTimeout is the wait used on a developer machine.
	DefaultTimeout = 3 * time.Second
	// DefaultCITimeout is the wait used when the CI environment variable is set.
	DefaultCITimeout = 10 * time.Second
	// TimeoutEnv names the environment variable that overrides [Timeout]
	// with a Go duration such as "20s".
	TimeoutEnv = "FOREMAN_TEST_TIMEOUT"
	// DefaultLogLevel is the lowest level that [NewSystem]'s logger passes
	// to t.Log.
	DefaultLogLevel = slog.LevelWarn
)

// Timeout is the generous default wait for expectations: 3 s locally, 10 s
// when the environment variable CI is set to anything but "" or "false",
// and the value of FOREMAN_TEST_TIMEOUT when that is set.
//
// It panics with an explanation if FOREMAN_TEST_TIMEOUT is not a positive Go
// duration, because every wait in the test run would be wrong.
func Timeout() time.Duration {
	if v := strings.TrimSpace(os.Getenv(TimeoutEnv)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			panic(fmt.Sprintf("testkit: %s=%q is not a positive Go duration; set it like %s=20s or unset it", TimeoutEnv, v, TimeoutEnv))
		}
		return d
	}
	if ci := strings.TrimSpace(os.Getenv("CI")); ci != "" && !strings.EqualFold(ci, "false") && ci != "0" {
		return DefaultCITimeout
	}
	return DefaultTimeout
}

// TB is the part of testing.TB that testkit needs. *testing.T, *testing.B
// and *testing.F satisfy it, and so does any testing.TB.
type TB interface {
	// Helper marks the caller as a helper, for file:line in failures.
	Helper()
	// Cleanup registers a function to run when the test ends.
	Cleanup(f func())
	// Log records text shown when the test fails or runs with -v.
	Log(args ...any)
	// Fatalf reports a failure and stops the test's goroutine.
	Fatalf(format string, args ...any)
}

// SystemOption configures [NewSystem].
type SystemOption func(*systemConfig)

type systemConfig struct {
	level     slog.Level
	discard   bool
	actorOpts []actor.ConfigOption
}

// WithLogLevel sets the lowest level that the system's logger writes to
// t.Log (default [DefaultLogLevel]).
func WithLogLevel(level slog.Level) SystemOption {
	return func(c *systemConfig) { c.level = level }
}

// WithDiscardLogs drops every log record of the system.
func WithDiscardLogs() SystemOption {
	return func(c *systemConfig) { c.discard = true }
}

// WithActorConfig passes extra protoactor configuration options (dead-letter
// throttling, metrics, ...) to the actor system. A logger factory given here
// replaces the t.Log logger.
func WithActorConfig(opts ...actor.ConfigOption) SystemOption {
	return func(c *systemConfig) { c.actorOpts = append(c.actorOpts, opts...) }
}

// NewSystem returns an actor system for one test. Its logger writes records
// at Warn and above to t.Log (so they show only when the test fails) and
// stops writing once the test has finished. In t.Cleanup, every actor still
// running is stopped ([StopAll]) and the system is shut down, so a test
// need not stop the actors it spawned.
func NewSystem(t TB, opts ...SystemOption) *actor.ActorSystem {
	t.Helper()
	cfg := systemConfig{level: DefaultLogLevel}
	for _, o := range opts {
		o(&cfg)
	}
	var logger *slog.Logger
	if cfg.discard {
		logger = slog.New(slog.DiscardHandler)
	} else {
		h := &tbHandler{state: &tbState{t: t}, level: cfg.level}
		// Registered first, so it runs last: after the system has shut down
		// nothing may call t.Log any more.
		t.Cleanup(h.state.close)
		logger = slog.New(h)
	}
	actorOpts := append([]actor.ConfigOption{
		actor.WithLoggerFactory(func(s *actor.ActorSystem) *slog.Logger {
			return logger.With("system", s.ID)
		}),
	}, cfg.actorOpts...)
	sys := actor.NewActorSystem(actorOpts...)
	t.Cleanup(func() {
		StopAll(sys)
		if !sys.IsStopped() { // a test may shut it down itself, as a node exiting does
			sys.Shutdown()
		}
	})
	return sys
}

// StopAll stops every top-level actor still running in sys and waits for
// each to finish stopping (children stop with their parents). protoactor's
// ActorSystem.Shutdown does not stop actors, so actors that own goroutines
// (tickers, connections) would otherwise outlive the test; [NewSystem] calls
// StopAll in its clean-up.
func StopAll(sys *actor.ActorSystem) {
	var futures []*actor.Future
	for _, bucket := range sys.ProcessRegistry.LocalPIDs.LocalPIDs {
		if bucket.Count() == 0 {
			continue // Keys starts a goroutine per shard: skip empty buckets
		}
		for _, id := range bucket.Keys() {
			if strings.Contains(id, "/") {
				continue // a child: its parent stops it
			}
			p, ok := bucket.Get(id)
			if !ok {
				continue
			}
			if _, isActor := p.(*actor.ActorProcess); !isActor {
				continue // futures and other non-actor processes
			}
			futures = append(futures, sys.Root.StopFuture(actor.NewPID(sys.Address(), id)))
		}
	}
	for _, f := range futures {
		_ = f.Wait()
	}
}

// tbState is shared by a tbHandler and the handlers derived from it.
type tbState struct {
	mu   sync.RWMutex
	t    TB
	done bool
}

func (s *tbState) close() {
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
}

// tbHandler is a slog.Handler that writes one line per record to t.Log.
type tbHandler struct {
	state  *tbState
	level  slog.Level
	prefix string // pre-rendered attributes from WithAttrs
	group  string
}

func (h *tbHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *tbHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String())
	b.WriteByte(' ')
	b.WriteString(r.Message)
	b.WriteString(h.prefix)
	r.Attrs(func(a slog.Attr) bool {
		writeAttr(&b, h.group, a)
		return true
	})
	h.state.mu.RLock()
	defer h.state.mu.RUnlock()
	if !h.state.done {
		h.state.t.Log(b.String())
	}
	return nil
}

func (h *tbHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.prefix)
	for _, a := range attrs {
		writeAttr(&b, h.group, a)
	}
	c := *h
	c.prefix = b.String()
	return &c
}

func (h *tbHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group = h.group + name + "."
	return &c
}

func writeAttr(b *strings.Builder, group string, a slog.Attr) {
	if a.Equal(slog.Attr{}) {
		return
	}
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		g := group
		if a.Key != "" {
			g += a.Key + "."
		}
		for _, sub := range v.Group() {
			writeAttr(b, g, sub)
		}
		return
	}
	fmt.Fprintf(b, " %s%s=%v", group, a.Key, v.Any())
}
