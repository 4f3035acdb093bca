package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"go.opentelemetry.io/otel/trace"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/membership"
	"github.com/foreman-actors/foreman/cluster/membership/etcdmembers"
	"github.com/foreman-actors/foreman/cluster/metrics"
	"github.com/foreman-actors/foreman/cluster/tlsconf"
	"github.com/foreman-actors/foreman/messages"
)

// Names in the cluster.
const (
	// ClusterName is the protoactor cluster name of a Foreman cluster.
	ClusterName = "foreman"
	// MasterKind is the cluster kind of the singleton master; only backend
	// nodes register it, so only they host the master.
	MasterKind = "master"
	// MasterIdentity is the fixed identity of the singleton master.
	MasterIdentity = "master"
	// ResultsTopic is the pub-sub topic results are published on.
	ResultsTopic = "results"
)

// Defaults of cluster nodes.
const (
	DefaultKeepAlive       = 250 * time.Millisecond
	DefaultResubscribe     = 2 * time.Second
	DefaultLocatorTTL      = 2 * time.Second
	DefaultWorkerRegister  = time.Second
	DefaultClusterAskLimit = time.Second
	// DefaultHandBackTimeout bounds each wait of a stopping node for the
	// master: for it to confirm it has the work the node's workers handed
	// back, and for a master on the node to hand its last events to the
	// journal.
	DefaultHandBackTimeout = 750 * time.Millisecond
	// DefaultFrontendAskTimeout bounds a frontend's wait for the master's
	// ack in a cluster. It is what a submit loses when the master's node
	// dies mid-request (the ask goes unanswered), so it is short; a late
	// ack only causes a retry with the same id, which is acked again.
	DefaultFrontendAskTimeout = 750 * time.Millisecond
)

// MaxShards bounds ClusterConfig.Shards.
const MaxShards = 256

// ShardKind returns the cluster kind of shard k's master of n: MasterKind
// with one shard, MasterKind-k with several ("master-0" .. "master-N-1").
// Its identity and journal stream are route.ShardName's "master/k", but a
// kind must not contain "/": protoactor's placement actor, on every
// topology change, finds the owner of each activation it hosts from the
// key kind + "/" + identity, split at the first "/"; a kind "master/k"
// reads back as kind "master", which no member hosts, so the placement
// actor stopped every shard's master on every membership change (another
// shard's failover paused them all; the pinned protoactor-go, disthash
// placement_actor.go onClusterTopology with Rendezvous.GetByIdentity).
func ShardKind(k, n int) string {
	if n < 2 {
		return MasterKind
	}
	return MasterKind + "-" + strconv.Itoa(k)
}

// shardKind builds shard k's master kind: its own journal stream, and a
// lease guard that follows where this node's view places shard k.
func (n *ClusterNode) shardKind(k int, log *slog.Logger) (*cluster.Kind, error) {
	cfg := n.cfg
	kind := ShardKind(k, cfg.Shards)
	publish := n.publish
	if cfg.NoResultsPubSub {
		// Every frontend reads the durable feed: no one would receive it.
		publish = func(*messages.WorkResult) {}
	}
	mopts := []master.Option{master.WithLogger(log), master.WithPublisher(master.PublisherFunc(publish))}
	// The master holds the lease only where this node's view places it
	// (a stray activation must not keep it from the owner), and the side
	// of a partition that hears from nobody lets go of it, so that the
	// side the clients reach takes over.
	own := newMasterOwnership(n.sys, kind, route.ShardName(MasterIdentity, k, cfg.Shards))
	n.ownership = append(n.ownership, own)
	guard := own.Owns
	if p, ok := cfg.Provider.(cutOffReporter); ok {
		guard = func() bool { return own.Owns() && !p.CutOff() }
	}
	mopts = append(mopts, master.WithLeaseGuard(guard))
	if ttl, ok := masterLeaseFor(cfg.Provider); ok {
		mopts = append(mopts, master.WithLeaseTTL(ttl))
	}
	mopts = append(mopts, metricsMaster(cfg.Metrics)...)
	mopts = append(mopts, cfg.MasterOptions...)
	// After the caller's options: a cluster-wide limit replaces a limiter
	// of the same type passed there.
	mopts = append(mopts, n.permits.permitOptions(cfg.RateLimits)...)
	if cfg.Shards > 1 {
		// After the caller's options: shard k's stream is not theirs to pick.
		mopts = append(mopts, master.WithStream(route.ShardName(master.DefaultStream, k, cfg.Shards)), master.WithShard(k, cfg.Shards))
	}
	props, err := master.Props(n.jrnl, mopts...)
	if err != nil {
		return nil, err
	}
	return cluster.NewKind(kind, metricsMailbox(props, cfg.Metrics, metrics.ActorMaster)), nil
}

func (n *ClusterNode) closeOwnership() {
	for _, o := range n.ownership {
		o.Close()
	}
	n.ownership = nil
}

// cutOffReporter is a membership provider that tells when this node has
// heard from no other node for a while (membership.Provider does).
type cutOffReporter interface{ CutOff() bool }

// ClusterConfig describes a cluster node.
type ClusterConfig struct {
	// Role of the node: RoleBackend, RoleFrontend or RoleWorker.
	Role Role
	// Host to bind and advertise (default 127.0.0.1).
	Host string
	// Port of the node's remote endpoint (0: a free port).
	Port int
	// Provider is the membership provider (required).
	Provider cluster.ClusterProvider
	// DataDir holds the shared SQLite journal of backend nodes, unless
	// JournalURL or Journal is set.
	DataDir string
	// JournalURL is where a backend's journal lives: sqlite:PATH or
	// postgres://... (see journal.ParseURL). Empty: the SQLite file
	// JournalFile in DataDir. Backends on several hosts share a PostgreSQL
	// journal; a SQLite file can be shared only on one host. Other roles
	// have no journal and must leave it empty.
	JournalURL string
	// Journal overrides JournalURL and DataDir with an open journal (the
	// node does not close it).
	Journal persistence.Journal
	// Shards is the number of masters work is sharded over (default 1: one
	// master, identity and journal stream "master", as before sharding).
	// With N > 1, shard k's master is the cluster kind master-k (see
	// ShardKind) and identity master/k, with its own journal stream
	// master/k; route.ShardOf picks a work's shard. Every node of a cluster must have the same N: the
	// journal records the first backend's (ConfigStream), and a backend
	// with another refuses to start (ErrShardsMismatch).
	Shards int
	// Workers is the number of workers of a worker node; each pulls from
	// every shard.
	Workers int
	// DrainTimeout, if positive, makes Stop drain the node's workers first
	// (a graceful drain, e.g. on SIGTERM): they ask for no more work, their
	// running jobs may finish for up to DrainTimeout, and the jobs still
	// running then are cancelled (context.Cause: worker.ErrDrainTimeout)
	// and handed back to the master, which runs them again elsewhere
	// without counting the attempt. 0: Stop hands running jobs back at
	// once. cmd/foreman's --drain-timeout defaults to DefaultDrainTimeout.
	DrainTimeout time.Duration
	// Registry holds the job functions of a worker node (default: built-ins).
	Registry *worker.Registry
	// RateLimits are cluster-wide per-job-type limits (backends): each is
	// enforced across every master shard by one throttler actor, the
	// cluster kind ThrottleKind(type), placed by the cluster on a backend.
	// Every backend must be given the same limits: the journal records
	// the first backend's (ConfigStream), and a backend with others
	// refuses to start (ErrRatesMismatch) unless ChangeRateLimits.
	RateLimits []RateLimit
	// ChangeRateLimits makes a backend record its RateLimits in the
	// journal as the cluster's, replacing the ones it records, instead of
	// refusing to start on a difference (--change-rate). Restart every
	// other backend with the same limits then: one that runs on keeps
	// those it was started with.
	ChangeRateLimits bool
	// MasterOptions, WorkerOptions and FrontendOptions pass options on.
	MasterOptions   []master.Option
	WorkerOptions   []worker.Option
	FrontendOptions []frontend.Option
	// OnResult is called for every result a frontend node consumes.
	OnResult func(*messages.WorkResult)
	// ResultCursor keeps a frontend node's result-feed cursor across its
	// restarts (default: in memory, from the oldest retained result).
	ResultCursor frontend.CursorStore
	// ResultsFromPubSub makes a frontend node consume results from
	// protoactor's pub-sub (at most once; results may be lost) instead of
	// the master's durable result feed.
	ResultsFromPubSub bool
	// NoResultsPubSub stops a backend node's masters from publishing
	// every result on [ResultsTopic]. Set it when every frontend of the
	// cluster reads the durable result feed (none sets ResultsFromPubSub)
	// and nothing else subscribes to the topic: the publishing then only
	// costs the backend a producer request and a topic delivery per
	// batch of results that no one receives (issue 39: about a sixth of
	// the backend's CPU per job on the batch path). Callers that wait for
	// an outcome (frontend.Client.Call and Do, POST /work?wait) are
	// answered by the master directly, not through pub-sub, and are
	// unaffected. Only for backend nodes.
	NoResultsPubSub bool
	// Logger for the node and its actor system (default slog.Default()).
	Logger *slog.Logger
	// KeepAlive is how often a backend touches the master so it is active
	// somewhere at all times (default 250 ms).
	KeepAlive time.Duration
	// RequestTimeout bounds cluster requests (default 1 s).
	RequestTimeout time.Duration
	// TLS, when set, gives the node's gRPC remote mutual TLS: only peers
	// with a certificate from the same CA connect, in either direction.
	// Certificates must name the Host every peer dials. Give the membership
	// provider the same material (membership.WithTLS). Reloading it
	// (tlsconf.Material.Reload) applies to new connections.
	TLS *tlsconf.Material
	// WrapStart, when set, is called with the function that starts the
	// node's remote and joins the cluster, and must call it. Tests that run
	// several members in one process use it to serialise remote start-ups
	// (see testkit.StartRemoteWith).
	WrapStart func(start func())
	// Metrics, when set, is fed by the node (see WithMetrics); ActorMetrics
	// also exports protoactor's actor metrics into it.
	Metrics      *metrics.Metrics
	ActorMetrics bool
	// TracerProvider, when set, traces the node's jobs (tracing.go).
	TracerProvider trace.TracerProvider
}

// ClusterNode is a running backend, frontend or worker node.
type ClusterNode struct {
	cfg     ClusterConfig
	log     *slog.Logger
	sys     *actor.ActorSystem
	c       *cluster.Cluster
	permits *permitAsker // backends: asks the throttlers for the master shards
	jrnl    persistence.Journal
	ownJ    bool
	locator *MasterLocator   // shard 0's
	shards  []*MasterLocator // every shard's, in order
	route   route.Master     // every shard's route (route.Sharded)
	// ownership tells each shard master's lease guard whether this backend
	// owns that master in its view; empty on frontends and workers.
	ownership []*masterOwnership
	client    *frontend.Client
	workers   []*actor.PID
	workerIDs []string // the workers' ids, which the readiness check asks the masters about
	results   *actor.PID
	// joined: this node is in the last cluster topology it saw (a
	// backend's readiness, health.go).
	joined atomic.Bool
	peers  *peers                    // whether a waiter's node has gone (peers.go); nil until workers start
	prodMu sync.Mutex                // guards prod and prodAt
	prod   *cluster.BatchingProducer // results producer of a backend
	prodAt time.Time                 // when prod was made
	// schedSub is the scheduler's submitter on a backend (schedules.go).
	schedSub *lateSubmitter

	cancel context.CancelFunc
	wg     sync.WaitGroup // background loops
	once   sync.Once
}

// StartCluster starts a node of the given role and joins the cluster.
func StartCluster(ctx context.Context, cfg ClusterConfig) (*ClusterNode, error) {
	if cfg.Provider == nil {
		return nil, fmt.Errorf("%w: a membership provider is required", ErrInvalidConfig)
	}
	if cfg.Role != RoleBackend && cfg.Role != RoleFrontend && cfg.Role != RoleWorker {
		return nil, fmt.Errorf("%w: role %v is not a cluster role", ErrInvalidConfig, cfg.Role)
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultClusterAskLimit
	}
	if cfg.Shards == 0 {
		cfg.Shards = 1
	}
	if cfg.Shards < 1 || cfg.Shards > MaxShards {
		return nil, fmt.Errorf("%w: shards %d must be 1 to %d", ErrInvalidConfig, cfg.Shards, MaxShards)
	}
	if cfg.Workers < 0 {
		return nil, fmt.Errorf("%w: workers %d must be 0 or more", ErrInvalidConfig, cfg.Workers)
	}
	if cfg.NoResultsPubSub && cfg.Role != RoleBackend {
		return nil, fmt.Errorf("%w: NoResultsPubSub stops the masters publishing results, and a %s node runs none: set it on backend nodes only", ErrInvalidConfig, cfg.Role)
	}
	if cfg.JournalURL != "" && cfg.Role != RoleBackend {
		// A journal URL on a node that has none is a mistake in the
		// deployment (the URL meant for a backend went elsewhere): say so
		// rather than run without it.
		return nil, fmt.Errorf("%w: a %s node has no journal, so it takes no journal URL (set it on backend nodes only)", ErrInvalidConfig, cfg.Role)
	}
	loc, err := journalLocation(cfg.JournalURL, cfg.DataDir)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	n := &ClusterNode{cfg: cfg.withTracing(), log: log.With("component", "node", "role", cfg.Role.String())}
	lib, factory := libraryLogger(log)
	sysOpts, err := metricsSystem(cfg.Metrics, cfg.ActorMetrics)
	if err != nil {
		return nil, err
	}
	n.sys = actor.NewActorSystem(append(sysOpts, actor.WithLoggerFactory(factory))...)
	// The library's log handler reports a lost connection only for a
	// member; it learns the members from the topology.
	n.sys.EventStream.Subscribe(func(evt any) {
		if t, ok := evt.(*cluster.ClusterTopology); ok {
			addrs := make([]string, 0, len(t.GetMembers()))
			self := false
			for _, m := range t.GetMembers() {
				addrs = append(addrs, m.Address())
				self = self || m.GetId() == n.sys.ID
			}
			n.joined.Store(self)
			lib.SetMembers(addrs)
		}
	})

	var kinds []*cluster.Kind
	if cfg.Role == RoleBackend {
		if err := n.openJournal(ctx, loc); err != nil {
			n.sys.Shutdown()
			return nil, err
		}
		check, err := checkClusterConfig(ctx, n.jrnl, cfg.Shards, cfg.RateLimits, cfg.ChangeRateLimits)
		if err != nil {
			n.closeJournal()
			n.sys.Shutdown()
			return nil, err
		}
		switch {
		case check.changed:
			n.log.Warn("rate limits changed in the journal: restart every other backend with the same --rate",
				"rate_limits", RateSpec(cfg.RateLimits), "before", check.ratesBefore)
		case check.recorded:
			n.log.Info("cluster settings recorded in the journal", "shards", cfg.Shards, "rate_limits", RateSpec(cfg.RateLimits))
		}
		n.permits = newPermitAsker(log)
		tk, err := n.throttleKinds(log.With("component", "throttler"))
		if err != nil {
			n.closeJournal()
			n.sys.Shutdown()
			return nil, err
		}
		kinds = append(kinds, tk...)
		sk, err := n.schedulerKind(log)
		if err != nil {
			n.closeOwnership()
			n.closeJournal()
			n.sys.Shutdown()
			return nil, err
		}
		kinds = append(kinds, sk)
		for k := range cfg.Shards {
			kind, err := n.shardKind(k, log)
			if err != nil {
				n.closeOwnership()
				n.closeJournal()
				n.sys.Shutdown()
				return nil, err
			}
			kinds = append(kinds, kind)
		}
	}
	// endpointWriterQueue is the initial ring of protoactor's remote per
	// peer for outgoing messages. Its default, 1,000,000 slots, preallocated
	// 15 MB per peer: a backend talking to a frontend and a worker node kept
	// 30 MB live, and twice that in RSS under the collector's pacing. The
	// ring doubles when full (it is no bound), so a small start costs a few
	// copies in a burst; cluster/pullcluster starts at 4,096 too.
	const endpointWriterQueue = 4096
	ccfg := cluster.Configure(ClusterName, cfg.Provider, disthash.New(),
		remote.Configure(cfg.Host, cfg.Port, append(remoteOptions(cfg.TLS), remote.WithEndpointWriterQueueSize(endpointWriterQueue))...),
		cluster.WithKinds(kinds...),
		cluster.WithRequestTimeout(cfg.RequestTimeout))
	// Membership comes from our provider, not from gossip. protoactor's
	// gossip re-applies every gossiped topology, which writes the remote
	// block list while incoming connections read it without a lock (a data
	// race in the pinned version); nothing of ours reads gossip state, so
	// gossip runs rarely.
	ccfg.GossipInterval = time.Hour
	n.c = cluster.New(n.sys, ccfg)
	// The locators follow the topology from the first one, which the
	// membership provider may publish while the cluster starts: they send
	// lookups to the owner in the last topology they saw.
	for k := range cfg.Shards {
		n.shards = append(n.shards, NewShardLocator(n.c, DefaultLocatorTTL, k, cfg.Shards))
	}
	n.locator = n.shards[0]
	if err := n.startCluster(); err != nil {
		n.closeLocator()
		n.closeJournal()
		n.sys.Shutdown()
		return nil, err
	}
	routes := make([]route.Master, len(n.shards))
	for k, l := range n.shards {
		routes[k] = l.Route()
	}
	if n.route, err = route.Sharded(routes...); err != nil {
		n.Kill()
		return nil, err
	}
	bg, cancel := context.WithCancel(context.Background())
	n.cancel = cancel

	switch cfg.Role {
	case RoleBackend:
		// After the remote started: the receiver's PID must carry the
		// node's address for the throttlers' grants to reach it.
		if err := n.permits.start(n.sys, func(jobType string) *actor.PID { return n.c.Get(jobType, ThrottleKind(jobType)) }); err != nil {
			n.Kill()
			return nil, err
		}
		if !cfg.NoResultsPubSub {
			n.prodMu.Lock()
			n.prod, n.prodAt = n.newProducer(), time.Now()
			n.prodMu.Unlock()
		}
		n.loop(bg, cfg.KeepAlive, n.keepAlive)
		if err := n.startScheduler(bg); err != nil {
			n.Kill()
			return nil, err
		}
	case RoleFrontend:
		if err := n.startFrontend(bg); err != nil {
			n.Kill()
			return nil, err
		}
	case RoleWorker:
		if err := n.startWorkers(); err != nil {
			n.Kill()
			return nil, err
		}
	}
	attrs := []any{"address", n.sys.Address(), "member_id", n.sys.ID, "tls", cfg.TLS != nil, "shards", cfg.Shards}
	if cfg.Role == RoleBackend {
		attrs = append(attrs, "journal", journalDesc(cfg.Journal, loc))
	}
	n.log.Info("node started", attrs...)
	return n, nil
}

// startCluster joins as a member (backends) or a client (frontends and
// workers), turning protoactor's start-up panics (port in use, provider
// errors) into errors.
func (n *ClusterNode) startCluster() (err error) {
	defer func() {
		if r := recover(); r != nil {
			if perr, ok := r.(error); ok && (errors.Is(perr, etcdmembers.ErrStart) || errors.Is(perr, membership.ErrStart)) {
				err = fmt.Errorf("node: the %s node cannot join the cluster: %w", n.cfg.Role, perr)
				n.stopFailedStart()
				return
			}
			err = fmt.Errorf("node: cannot start the %s node on %s:%d: %v (is the port in use? pick another port)", n.cfg.Role, n.cfg.Host, n.cfg.Port, r)
		}
	}()
	start := n.c.StartClient
	if n.cfg.Role == RoleBackend {
		start = n.c.StartMember
	}
	if n.cfg.WrapStart != nil {
		n.cfg.WrapStart(start)
	} else {
		start()
	}
	return nil
}

// stopFailedStart stops what protoactor started before the membership
// provider failed (the remote's gRPC server, gossip, the identity lookup),
// so that none of their goroutines outlives the failed start.
func (n *ClusterNode) stopFailedStart() {
	defer func() { _ = recover() }() // best effort: the process is failing anyway
	if n.cfg.Role == RoleBackend {
		n.c.IdentityLookup.Shutdown()
		n.c.Gossip.Shutdown()
	}
	n.c.Remote.Shutdown(false)
}

func (n *ClusterNode) openJournal(ctx context.Context, loc journal.Location) error {
	if n.cfg.Journal != nil {
		n.jrnl = n.cfg.Journal
		return nil
	}
	j, err := openJournal(ctx, loc, n.log, metricsJournal(n.cfg.Metrics)...)
	if err != nil {
		return err
	}
	n.jrnl, n.ownJ = j, true
	return nil
}

// disposeProducer stops the results producer for good.
func (n *ClusterNode) disposeProducer() {
	n.prodMu.Lock()
	defer n.prodMu.Unlock()
	if n.prod != nil {
		n.prod.Dispose()
		n.prod = nil
	}
}

// newProducer returns a batching producer for the results topic.
func (n *ClusterNode) newProducer() *cluster.BatchingProducer {
	return n.c.BatchingProducer(ResultsTopic,
		cluster.WithBatchingProducerPublishTimeout(5*time.Second),
		cluster.WithBatchingProducerMaxQueueSize(100000),
		// The default stops the producer for good on the first failure
		// (e.g. while membership converges at start or during a
		// failover). Results are notifications, the durable record is
		// the master's state, so retry a little, then skip the batch.
		cluster.WithBatchingProducerOnPublishingError(func(retries int, err error, _ *cluster.PubSubBatch) *cluster.PublishingErrorDecision {
			if retries < 5 {
				return cluster.RetryBatchAfter(time.Duration(retries+1) * 100 * time.Millisecond)
			}
			n.log.Warn("dropping a batch of result notifications", "error", err)
			return cluster.FailBatchAndContinue
		}))
}

// publish hands a result to the pub-sub producer; it never blocks the
// master (the producer queues and batches). protoactor's producer stops for
// good when its first request to the topic fails (e.g. while membership
// converges at start), so a stopped producer is replaced, at most once a
// second.
func (n *ClusterNode) publish(r *messages.WorkResult) {
	n.prodMu.Lock()
	prod := n.prod
	n.prodMu.Unlock()
	if prod == nil {
		return
	}
	_, err := prod.Produce(context.Background(), r)
	if err == nil {
		return
	}
	var stopped *cluster.InvalidOperationException
	if errors.As(err, &stopped) {
		n.prodMu.Lock()
		if n.prod == prod && time.Since(n.prodAt) > time.Second {
			prod.Dispose()
			n.prod, n.prodAt = n.newProducer(), time.Now()
			n.log.Info("result producer restarted", "error", err)
			if _, err := n.prod.Produce(context.Background(), r); err == nil {
				n.prodMu.Unlock()
				return
			}
		}
		n.prodMu.Unlock()
	}
	n.log.Warn("publishing a result failed", "work_id", r.GetWorkId(), "error", err)
}

// keepAlive touches the master so that it is activated on its owner soon
// after a membership change (protoactor activates virtual actors lazily).
func (n *ClusterNode) keepAlive(ctx context.Context) {
	// Bounded: a lookup stuck on a dead owner goes on in the background,
	// and the next tick checks again.
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for k, l := range n.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.Resolve(ctx); err != nil {
				n.log.Debug("master not reachable yet", "shard", k, "error", err)
			}
		}()
	}
	wg.Wait()
}

func (n *ClusterNode) startFrontend(bg context.Context) error {
	var err error
	fopts := append([]frontend.Option{
		frontend.WithLogger(n.log),
		frontend.WithAskTimeout(DefaultFrontendAskTimeout),
		frontend.WithRetryBackoff(20*time.Millisecond, 500*time.Millisecond),
	}, n.cfg.FrontendOptions...)
	n.client, err = frontend.NewClient(n.sys, n.route, fopts...)
	if err != nil {
		return err
	}
	copts := []frontend.Option{frontend.WithLogger(n.log), frontend.WithoutEventStream(), frontend.WithDedupe(1 << 16)}
	if n.cfg.OnResult != nil {
		copts = append(copts, frontend.WithOnResult(n.cfg.OnResult))
	}
	if !n.cfg.ResultsFromPubSub {
		// The durable feed: every result at least once, from the cursor.
		props, err := frontend.ConsumerProps(append(copts, frontend.WithFeed(n.client, n.cfg.ResultCursor))...)
		if err != nil {
			return err
		}
		n.results = n.sys.Root.Spawn(props)
		return nil
	}
	props, err := frontend.ConsumerProps(copts...)
	if err != nil {
		return err
	}
	n.results = n.sys.Root.Spawn(metricsMailbox(props, n.cfg.Metrics, metrics.ActorFrontend))
	// protoactor's pub-sub keeps subscriptions in the topic actor's memory
	// and loses them when the topic moves: subscribe again periodically
	// (subscribing is idempotent per PID).
	// Subscribe at once, every DefaultResubscribe, and as soon as a member
	// leaves (the topic may have lived on it).
	kick := make(chan struct{}, 1)
	sub := n.sys.EventStream.Subscribe(func(evt any) {
		if t, ok := evt.(*cluster.ClusterTopology); ok && len(t.Left) > 0 {
			select {
			case kick <- struct{}{}:
			default:
			}
		}
	})
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer n.sys.EventStream.Unsubscribe(sub)
		t := time.NewTicker(DefaultResubscribe)
		defer t.Stop()
		// Until the first subscription succeeds (membership is still
		// converging), retry quickly: results published before it are
		// not delivered to this frontend.
		for !n.subscribe() {
			select {
			case <-bg.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
		for {
			select {
			case <-bg.Done():
				return
			case <-t.C:
			case <-kick:
			}
			n.subscribe()
		}
	}()
	return nil
}

func (n *ClusterNode) subscribe() bool {
	if _, err := n.c.SubscribeByPid(ResultsTopic, n.results, cluster.WithTimeout(n.cfg.RequestTimeout)); err != nil {
		n.log.Debug("subscribing to results failed; will retry", "error", err)
		return false
	}
	return true
}

func (n *ClusterNode) startWorkers() error {
	reg := n.cfg.Registry
	if reg == nil {
		reg = worker.NewRegistry()
		if err := worker.RegisterBuiltins(reg); err != nil {
			return err
		}
	}
	for i := 0; i < n.cfg.Workers; i++ {
		// Register every second (the sample: 10 s): registration is how a
		// worker finds a new master after a failover, so it bounds how long
		// work waits for workers then. Each worker registers with every
		// shard's master and asks those that have work.
		// The id last: the readiness check asks the masters about it.
		id := fmt.Sprintf("%s-%d", n.sys.ID, i)
		wopts := append(append([]worker.Option{worker.WithLogger(n.log), worker.WithRegisterInterval(DefaultWorkerRegister),
			worker.WithWaiterGone(n.peerWatch().Gone)}, n.cfg.WorkerOptions...), worker.WithWorkerID(id))
		n.workerIDs = append(n.workerIDs, id)
		props, err := worker.Props(n.route, reg, wopts...)
		if err != nil {
			return err
		}
		n.workers = append(n.workers, n.sys.Root.Spawn(metricsMailbox(props, n.cfg.Metrics, metrics.ActorWorker)))
	}
	return nil
}

// loop runs fn every d until ctx ends.
func (n *ClusterNode) loop(ctx context.Context, d time.Duration, fn func(context.Context)) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			fn(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// System returns the node's actor system.
func (n *ClusterNode) System() *actor.ActorSystem { return n.sys }

// Cluster returns the node's protoactor cluster.
func (n *ClusterNode) Cluster() *cluster.Cluster { return n.c }

// Client returns the frontend client of a frontend node (nil otherwise).
func (n *ClusterNode) Client() *frontend.Client { return n.client }

// Locator returns the node's master locator (shard 0's).
func (n *ClusterNode) Locator() *MasterLocator { return n.locator }

// ShardLocators returns the locators of every shard's master, in order.
func (n *ClusterNode) ShardLocators() []*MasterLocator { return n.shards }

// Route returns the route to every shard's master (route.Sharded).
func (n *ClusterNode) Route() route.Master { return n.route }

// Address returns the node's remote address.
func (n *ClusterNode) Address() string { return n.sys.Address() }

// Stop leaves the cluster gracefully, in order: workers hand their work
// back and the master confirms it has it; a master activation on this
// node hands its last events to the journal; the node leaves the
// membership (peers drop it at once, the next owner takes the master
// over); the master activation here stops; the gRPC server closes; the
// journal closes. It takes about a second at most (the membership's
// leave, at most two probe rounds plus a probe timeout, is the longest
// step), also when a peer is dead.
func (n *ClusterNode) Stop(ctx context.Context) error {
	var errs []error
	n.once.Do(func() {
		start := time.Now()
		if len(n.workers) > 0 && n.cfg.DrainTimeout > 0 {
			// While the node still runs in full: a job's result may need
			// the master looked up again.
			n.drainWorkers(ctx, n.cfg.DrainTimeout)
		}
		if n.cancel != nil {
			n.cancel()
		}
		n.wg.Wait()
		if len(n.workers) > 0 {
			errs = append(errs, n.stopWorkers()...)
			n.confirmHandBack(ctx)
		}
		if n.results != nil {
			_ = n.sys.Root.StopFuture(n.results).Wait()
		}
		n.disposeProducer()
		n.leave(ctx)
		n.closeLocator()
		n.closeJournal()
		n.log.Info("node stopped", "took", time.Since(start).Round(time.Millisecond))
	})
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

// confirmHandBack makes sure the master has what the stopped workers told
// it (running work handed back, results, deregistration) before the node
// goes: messages still queued for a peer are lost when the process exits
// (they were, before this wait). protoactor sends the messages of one node
// to another in order over one stream, so the master's answer to a status
// request sent after them means it has processed them.
func (n *ClusterNode) confirmHandBack(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, DefaultHandBackTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, l := range n.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.confirmHandBackTo(ctx, l)
		}()
	}
	wg.Wait()
}

func (n *ClusterNode) confirmHandBackTo(ctx context.Context, l *MasterLocator) {
	pid, err := l.Resolve(ctx)
	if err == nil {
		dl, _ := ctx.Deadline()
		_, err = n.sys.Root.RequestFuture(pid, &messages.GetMasterStatus{}, time.Until(dl)).Result()
	}
	if err != nil {
		n.log.Warn("the master did not confirm the work handed back; it is re-queued when the master times it out",
			"error", err, "waited", DefaultHandBackTimeout)
	}
}

// Kill stops the node abruptly, without leaving the cluster: as far as the
// other members can tell, the process died (its membership endpoint and
// remote go silent). Its own workers are stopped first so that no goroutine
// of the node outlives it. Tests use it.
func (n *ClusterNode) Kill() {
	n.once.Do(func() {
		if n.cancel != nil {
			n.cancel()
		}
		n.wg.Wait()
		n.stopWorkers()
		if n.results != nil {
			_ = n.sys.Root.StopFuture(n.results).Wait() // its feed reader is a goroutine
		}
		n.disposeProducer()
		n.shutdownCluster()
		n.closeLocator()
		n.closeJournal()
	})
}

// DefaultDrainTimeout is how long a draining worker node lets its running
// jobs finish (cmd/foreman's --drain-timeout): below Kubernetes' default
// termination grace period of 30 s, so that the rest is handed back before
// the kubelet kills the pod.
const DefaultDrainTimeout = 25 * time.Second

// drainBound is how long Stop waits for a drained worker beyond the drain
// timeout: its last results' Acks and its hand-backs.
const drainBound = 5 * time.Second

// drainWorkers drains every worker of the node at once; see drainAll.
func (n *ClusterNode) drainWorkers(ctx context.Context, timeout time.Duration) {
	drainAll(ctx, n.sys.Root, n.workers, timeout, n.log)
}

// stopWorkers stops the node's workers (their running work goes back to the
// master) and waits for them. A worker that drained has stopped itself.
func (n *ClusterNode) stopWorkers() []error {
	var errs []error
	for _, w := range n.workers {
		if _, alive := n.sys.ProcessRegistry.Get(w); !alive {
			continue
		}
		if err := n.sys.Root.StopFuture(w).Wait(); err != nil {
			errs = append(errs, fmt.Errorf("node: stop worker: %w", err))
		}
	}
	n.workers = nil
	return errs
}

func (n *ClusterNode) closeLocator() {
	if n.peers != nil {
		n.peers.close()
	}
	n.closeOwnership()
	for _, l := range n.shards {
		l.Close()
	}
}

// drainLocalMaster lets a master activation on this node hand what it has
// emitted to the journal (see drainMaster) while this node still owns it:
// once the node has left, the next owner's master starts a new epoch and
// fences the old one's appends.
func (n *ClusterNode) drainLocalMaster(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, DefaultHandBackTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, l := range n.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.drainShard(ctx, l)
		}()
	}
	wg.Wait()
}

func (n *ClusterNode) drainShard(ctx context.Context, l *MasterLocator) {
	pid, err := l.Resolve(ctx)
	if err != nil || pid.GetAddress() != n.sys.Address() {
		return // not here (or not reachable): nothing of ours to drain
	}
	if err := drainMaster(n.sys.Root, pid, DefaultHandBackTimeout); err != nil {
		n.log.Warn("the master did not confirm its last journal writes before leaving", "error", err)
	}
}

// leave leaves the cluster gracefully, as protoactor's
// Cluster.Shutdown(true) does, without its unconditional 2 s sleep (it
// waits for an ownership hand-over that disthash does not do: the next
// owner activates the master when asked) and without its graceful remote
// stop (see below). Clients (frontends, workers) run no gossip and host no
// activations.
func (n *ClusterNode) leave(ctx context.Context) {
	if n.cfg.Role == RoleBackend {
		n.drainLocalMaster(ctx)
	}
	// Peers drop this node as soon as they see it leaving, so requests
	// for the master go to its next owner from then on.
	_ = n.cfg.Provider.Shutdown(true)
	if n.cfg.Role == RoleBackend {
		// Stops the placement actor, which stops the activations here
		// (the master) and waits for them.
		n.c.IdentityLookup.Shutdown()
		n.c.Gossip.Shutdown()
	}
	n.sys.Shutdown()
	// Not protoactor's graceful Remote.Shutdown(true): it waits up to 10 s
	// for each of an endpoint writer retrying a dead peer (5 attempts, 2 s
	// apart) and gRPC GracefulStop, and it races with the connections it
	// closes (it sends on channels their handlers close, and writes fields
	// they read, without synchronisation; the race detector reports both
	// whenever peers still send). Everything that must reach a peer has
	// been confirmed above; closing the gRPC server is all that is left.
	// Outgoing connections close when the process exits.
	n.c.Remote.Shutdown(false)
	n.log.Debug("left the cluster", "address", n.sys.Address())
}

// shutdownCluster stops the node abruptly (Kill): as if the process died.
// protoactor's Cluster.Shutdown sets gossip state first, which panics on a
// client (clients run no gossip), so clients take the same steps without
// it.
func (n *ClusterNode) shutdownCluster() {
	if n.cfg.Role == RoleBackend {
		// The provider stops answering without announcing a leave.
		_ = n.cfg.Provider.Shutdown(false)
		n.c.Shutdown(false)
		return
	}
	_ = n.cfg.Provider.Shutdown(false)
	n.sys.Shutdown()
	n.c.Remote.Shutdown(false)
}

func (n *ClusterNode) closeJournal() {
	if n.ownJ && n.jrnl != nil {
		if err := n.jrnl.Close(); err != nil {
			n.log.Error("closing the journal failed", "error", err)
		}
	}
}
