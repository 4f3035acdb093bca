package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/trace"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/metrics"
	"github.com/foreman-actors/foreman/cluster/protolog"
	"github.com/foreman-actors/foreman/messages"
)

// JournalFile is the name of the SQLite journal inside a node's data
// directory.
const JournalFile = "journal.db"

// DefaultDataDir is the journal directory of a node unless told otherwise.
const DefaultDataDir = "foreman-data"

// DefaultWorkers is the number of workers a node runs unless told otherwise.
const DefaultWorkers = 2

// ErrInvalidConfig means a node option was given an unusable value.
var ErrInvalidConfig = errors.New("node: invalid configuration")

// LocalOption configures StartLocal.
type LocalOption func(*localConfig)

type localConfig struct {
	dataDir       string
	journalURL    string
	journal       persistence.Journal
	workers       int
	registry      *worker.Registry
	logger        *slog.Logger
	masterOpts    []master.Option
	workerOpts    []worker.Option
	system        *actor.ActorSystem
	stopTimeout   time.Duration
	squareDelayLo time.Duration
	squareDelayHi time.Duration
	squareDelay   bool
	metrics       *metrics.Metrics // metrics.go
	actorMetrics  bool
	tracer        trace.TracerProvider // tracing.go
	drainTimeout  time.Duration
	rateLimits    []RateLimit // local_rate.go
}

// WithDrainTimeout makes Stop drain the node's workers first, as a worker
// node's does (ClusterConfig.DrainTimeout): they ask for no more work,
// running jobs may finish for up to d, then they are cancelled (cause
// worker.ErrDrainTimeout) and handed back, which the master journals as
// not done, so the next start of the node runs them. 0 (the default):
// Stop hands running jobs back at once.
func WithDrainTimeout(d time.Duration) LocalOption {
	return func(c *localConfig) { c.drainTimeout = max(d, 0) }
}

// WithDataDir sets the directory of the SQLite journal (created if missing).
func WithDataDir(dir string) LocalOption { return func(c *localConfig) { c.dataDir = dir } }

// WithJournalURL opens the journal at rawURL, sqlite:PATH or postgres://...
// (see journal.ParseURL), instead of the SQLite file in the data directory.
func WithJournalURL(rawURL string) LocalOption { return func(c *localConfig) { c.journalURL = rawURL } }

// WithJournal uses j instead of opening a journal (WithJournalURL,
// WithDataDir); the node does not close it.
func WithJournal(j persistence.Journal) LocalOption { return func(c *localConfig) { c.journal = j } }

// WithWorkers sets how many workers the node runs (default DefaultWorkers;
// 0 runs none).
func WithWorkers(k int) LocalOption { return func(c *localConfig) { c.workers = k } }

// WithRegistry sets the job functions the workers run (default: the built-in
// square, factorize, sleep and long jobs).
func WithRegistry(r *worker.Registry) LocalOption { return func(c *localConfig) { c.registry = r } }

// WithSquareDelay sets the built-in square job's simulated work time, uniform
// in [lo, hi] (default 1-2 s as in the Akka sample). Ignored with
// WithRegistry.
func WithSquareDelay(lo, hi time.Duration) LocalOption {
	return func(c *localConfig) { c.squareDelayLo, c.squareDelayHi, c.squareDelay = lo, hi, true }
}

// WithLogger sets the logger of the node and of its actor system.
func WithLogger(l *slog.Logger) LocalOption { return func(c *localConfig) { c.logger = l } }

// WithMasterOptions passes options to the master (timeouts, attempts, ...).
func WithMasterOptions(opts ...master.Option) LocalOption {
	return func(c *localConfig) { c.masterOpts = append(c.masterOpts, opts...) }
}

// WithWorkerOptions passes options to every worker.
func WithWorkerOptions(opts ...worker.Option) LocalOption {
	return func(c *localConfig) { c.workerOpts = append(c.workerOpts, opts...) }
}

// WithActorSystem runs the node's actors in sys instead of a new actor
// system; the node then does not shut sys down.
func WithActorSystem(sys *actor.ActorSystem) LocalOption {
	return func(c *localConfig) { c.system = sys }
}

// Local is a backend, a frontend and workers in one process on one actor
// system: `foreman` with no port, and the way to embed Foreman in a Go
// program without a cluster.
type Local struct {
	sys       *actor.ActorSystem
	ownSystem bool
	jrnl      persistence.Journal
	ownJrnl   bool
	master    *actor.PID
	scheduler *actor.PID            // schedules.go
	throttles map[string]*actor.PID // the throttler of each limited job type (local_rate.go)
	workers   []*actor.PID
	client    *frontend.Client
	log       *slog.Logger
	drain     time.Duration // WithDrainTimeout
}

// StartLocal opens the journal, starts the master (which recovers from the
// journal before it answers) and the workers, and returns once they are
// spawned.
func StartLocal(ctx context.Context, opts ...LocalOption) (*Local, error) {
	cfg := localConfig{dataDir: DefaultDataDir, workers: DefaultWorkers, stopTimeout: 30 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.workers < 0 {
		return nil, fmt.Errorf("%w: workers %d must be 0 or more", ErrInvalidConfig, cfg.workers)
	}
	log := cfg.logger
	if log == nil {
		log = slog.Default()
	}
	n := &Local{log: log.With("component", "node"), drain: cfg.drainTimeout}

	loc, err := journalLocation(cfg.journalURL, cfg.dataDir)
	if err != nil {
		return nil, err
	}
	if cfg.journal != nil {
		n.jrnl = cfg.journal
	} else {
		j, err := openJournal(ctx, loc, log, metricsJournal(cfg.metrics)...)
		if err != nil {
			return nil, err
		}
		n.jrnl, n.ownJrnl = j, true
	}

	reg := cfg.registry
	if reg == nil {
		reg = worker.NewRegistry()
		var bopts []worker.BuiltinOption
		if cfg.squareDelay {
			bopts = append(bopts, worker.WithSquareDelay(cfg.squareDelayLo, cfg.squareDelayHi))
		}
		if err := worker.RegisterBuiltins(reg, bopts...); err != nil {
			n.closeJournal()
			return nil, err
		}
	}

	if cfg.system != nil {
		n.sys = cfg.system
	} else {
		_, factory := libraryLogger(log)
		sysOpts, err := metricsSystem(cfg.metrics, cfg.actorMetrics)
		if err != nil {
			n.closeJournal()
			return nil, err
		}
		n.sys = actor.NewActorSystem(append(sysOpts, actor.WithLoggerFactory(factory))...)
		n.ownSystem = true
	}

	// The workers of a local node are all known, so the master can refuse
	// a job type none of them runs instead of queueing it forever. Its
	// master takes no lease (unless masterOpts ask for one): the lease
	// arbitrates between a cluster singleton's activations, and this
	// master is a plain actor that nothing re-activates, so a lease lost
	// to a stall of the process would stop the node's master for good.
	mopts := append([]master.Option{master.WithLogger(log), master.WithJobTypes(reg.Types()...), master.WithLeaseTTL(0)}, append(append(metricsMaster(cfg.metrics), master.WithTracerProvider(cfg.tracer)), cfg.masterOpts...)...)
	rateOpts, err := n.startThrottlers(cfg, log)
	if err != nil {
		n.shutdown()
		return nil, err
	}
	mopts = append(mopts, rateOpts...)
	mprops, err := master.Props(n.jrnl, mopts...)
	if err != nil {
		n.shutdown()
		return nil, err
	}
	n.master, err = n.sys.Root.SpawnNamed(metricsMailbox(mprops, cfg.metrics, metrics.ActorMaster), "master")
	if err != nil {
		n.shutdown()
		return nil, fmt.Errorf("node: spawn master: %w", err)
	}
	for i := 0; i < cfg.workers; i++ {
		wprops, err := worker.Props(route.Fixed(n.master), reg, append([]worker.Option{worker.WithLogger(log), worker.WithTracerProvider(cfg.tracer)}, cfg.workerOpts...)...)
		if err != nil {
			n.shutdown()
			return nil, err
		}
		n.workers = append(n.workers, n.sys.Root.Spawn(metricsMailbox(wprops, cfg.metrics, metrics.ActorWorker)))
	}
	n.client, err = frontend.NewClient(n.sys, route.Fixed(n.master), frontend.WithLogger(log), frontend.WithTracerProvider(cfg.tracer))
	if err != nil {
		n.shutdown()
		return nil, err
	}
	if err := n.startLocalScheduler(log, cfg.metrics); err != nil {
		n.shutdown()
		return nil, err
	}
	n.log.Info("node started", "role", RoleAll.String(), "workers", cfg.workers, "journal", journalDesc(cfg.journal, loc))
	return n, nil
}

// System returns the node's actor system.
func (n *Local) System() *actor.ActorSystem { return n.sys }

// Master returns the PID of the master.
func (n *Local) Master() *actor.PID { return n.master }

// Client returns the frontend client that submits work and reads status.
func (n *Local) Client() *frontend.Client { return n.client }

// Journal returns the node's journal.
func (n *Local) Journal() persistence.Journal { return n.jrnl }

// Stop shuts the node down in order: workers first (drained for up to
// WithDrainTimeout, then running work is handed back to the master), then the master (its pending journal
// writes complete), then the journal and the actor system. It honours ctx's
// deadline for each step.
func (n *Local) Stop(ctx context.Context) error {
	var errs []error
	if err := n.stopScheduler(); err != nil {
		errs = append(errs, err)
	}
	if len(n.workers) > 0 && n.drain > 0 {
		drainAll(ctx, n.sys.Root, n.workers, n.drain, n.log)
	}
	for _, w := range n.workers {
		if _, alive := n.sys.ProcessRegistry.Get(w); !alive {
			continue // it drained and stopped itself
		}
		if err := n.sys.Root.StopFuture(w).Wait(); err != nil {
			errs = append(errs, fmt.Errorf("node: stop worker: %w", err))
		}
	}
	n.stopThrottlers()
	if n.master != nil {
		if err := drainMaster(n.sys.Root, n.master, DefaultHandBackTimeout); err != nil {
			n.log.Warn("the master did not confirm its last journal writes before stopping", "error", err)
		}
		if err := n.sys.Root.PoisonFuture(n.master).Wait(); err != nil {
			errs = append(errs, fmt.Errorf("node: stop master: %w", err))
		}
	}
	n.shutdown()
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	n.log.Info("node stopped")
	return errors.Join(errs...)
}

// drainMaster returns once the master has handed to the journal what it
// had emitted when called (the journal's Close then waits for those
// appends). The master appends on a flush message it sends itself, behind
// the messages already in its mailbox, so a message arriving just before a
// PoisonPill can emit events whose flush comes after the pill and is never
// done. The first answered status request means every message before it
// was handled (their flushes are queued); the second, that those flushes
// ran.
func drainMaster(root *actor.RootContext, pid *actor.PID, timeout time.Duration) error {
	for range 2 {
		if _, err := root.RequestFuture(pid, &messages.GetMasterStatus{}, timeout).Result(); err != nil {
			return fmt.Errorf("node: drain master: %w", err)
		}
	}
	return nil
}

// libraryLogger returns the logger factory of a node's actor system and
// its handler: protoactor's records reach log through a protolog.Handler,
// which logs the library's routine Info at Debug and a lost peer once at
// Warn instead of an Error per connection attempt. A cluster node tells the
// handler the members (see protolog.Handler.SetMembers).
func libraryLogger(log *slog.Logger) (*protolog.Handler, func(*actor.ActorSystem) *slog.Logger) {
	h := protolog.NewHandler(log.Handler())
	return h, func(*actor.ActorSystem) *slog.Logger { return slog.New(h).With("lib", "protoactor") }
}

func (n *Local) shutdown() {
	if n.ownSystem {
		n.sys.Shutdown()
	}
	n.closeJournal()
}

func (n *Local) closeJournal() {
	if n.ownJrnl {
		if err := n.jrnl.Close(); err != nil {
			n.log.Error("closing the journal failed", "error", err)
		}
	}
}
