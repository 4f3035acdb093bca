package etcdmembers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/foreman-actors/foreman/cluster/membership"
)

// Provider is a protoactor-go cluster.ClusterProvider on etcd: each node
// registers a key bound to a lease it renews, and watches the keys of its
// cluster. Make one per cluster.Cluster with [New]; the cluster starts it
// (StartMember or StartClient) and stops it (Shutdown).
type Provider struct {
	cfg       config
	endpoints []string

	mu         sync.Mutex // guards the fields below
	started    bool
	stopped    bool
	log        *slog.Logger
	view       *view
	dir        string // <prefix>/<cluster>/
	lease      clientv3.LeaseID
	granted    time.Duration // the lease etcd granted
	lastRenew  time.Time     // when the last grant or renewal that succeeded was sent
	cli        *clientv3.Client
	sink       sink
	cancel     context.CancelFunc
	loopDone   chan struct{}
	sysStopped func() bool
}

// sink receives the member list whenever it changes: the protoactor
// cluster (clusterSink), or a recorder in tests.
type sink interface {
	push(members []membership.Node)
}

var (
	_ cluster.ClusterProvider = (*Provider)(nil)
	_ membership.Lister       = (*Provider)(nil)
)

// New returns a provider that registers with the etcd cluster at
// endpoints (host:port; the port defaults to [DefaultPort]), or an error
// wrapping [ErrInvalidOption] that names every bad option.
func New(endpoints []string, opts ...Option) (*Provider, error) {
	eps, err := checkEndpoints(endpoints)
	if err != nil {
		return nil, err
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Provider{cfg: cfg, endpoints: eps}, nil
}

// URL returns the endpoints as the membership URL etcd://h:p[,h:p].
func (p *Provider) URL() string { return "etcd://" + strings.Join(p.endpoints, ",") }

// DropAfter returns how long after its last renewal a node that stopped
// renewing (crashed, frozen, cut off) is dropped by the others: the lease
// etcd granted (before start, the one asked for).
func (p *Provider) DropAfter() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.granted > 0 {
		return p.granted
	}
	return p.cfg.ttl
}

// StartMember implements cluster.ClusterProvider: it registers this node
// as a member (hosting the cluster's kinds), reads the members, and keeps
// the cluster's member list current until Shutdown. It fails when etcd
// cannot be reached within the start timeout.
func (p *Provider) StartMember(c *cluster.Cluster) error { return p.startCluster(c, true) }

// StartClient implements cluster.ClusterProvider: like StartMember, but
// the node registers as a client (listed on status pages, never in the
// member list; it hosts nothing).
func (p *Provider) StartClient(c *cluster.Cluster) error { return p.startCluster(c, false) }

func (p *Provider) startCluster(c *cluster.Cluster, member bool) error {
	host, port, err := c.ActorSystem.GetHostPort()
	if err != nil {
		return fmt.Errorf("%w: node address %q: %w", ErrStart, c.ActorSystem.Address(), err)
	}
	self := membership.Node{ID: c.ActorSystem.ID, Host: host, Port: port}
	if member {
		self.Kinds = slices.Clone(c.GetClusterKinds())
		slices.Sort(self.Kinds)
	}
	log := p.cfg.logger
	if log == nil {
		log = c.Logger()
	}
	log = log.With("component", "membership", "member_id", self.ID)
	s := newClusterSink(c, self.ID, log)
	if err := p.start(self, member, c.Config.Name, s, c.ActorSystem.IsStopped, log); err != nil {
		s.close()
		return err
	}
	return nil
}

// start registers self and starts following the cluster's keys; the
// member lists go to s.
func (p *Provider) start(self membership.Node, member bool, clusterName string, s sink, sysStopped func() bool, log *slog.Logger) error {
	p.mu.Lock()
	if p.started {
		p.mu.Unlock()
		return fmt.Errorf("%w: the provider was already started; make one provider per cluster", ErrStart)
	}
	p.started = true
	p.mu.Unlock()

	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   p.endpoints,
		DialTimeout: p.cfg.startTimeout,
		// A renewal or read must not hang on a dead connection for long.
		DialKeepAliveTime:    p.cfg.ttl,
		DialKeepAliveTimeout: p.cfg.ttl,
		Logger:               zap.NewNop(), // failures are reported through our logger
		TLS:                  p.cfg.tls,
	})
	if err != nil {
		return p.startErr(err)
	}
	p.mu.Lock()
	p.cli, p.sink, p.log, p.sysStopped = cli, s, log, sysStopped
	p.dir = p.cfg.prefix + "/" + clusterName + "/"
	p.view = newView(self, member)
	p.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.startTimeout)
	defer cancel()
	if err := p.register(ctx); err != nil {
		return p.failStart(err)
	}
	rev, err := p.readAll(ctx, true)
	if err != nil {
		p.revoke()
		return p.failStart(err)
	}
	lctx, lcancel := context.WithCancel(context.Background())
	p.mu.Lock()
	p.cancel = lcancel
	p.loopDone = make(chan struct{})
	granted := p.granted
	p.mu.Unlock()
	go p.loop(lctx, rev)
	log.Info("membership started", "etcd", p.URL(), "member", member, "lease", granted)
	return nil
}

// failStart closes the client after a failed start (Shutdown has nothing
// left to do) and returns the start error.
func (p *Provider) failStart(err error) error {
	p.mu.Lock()
	cli := p.cli
	p.stopped = true
	p.mu.Unlock()
	_ = cli.Close()
	return p.startErr(err)
}

func (p *Provider) startErr(err error) error {
	if diag := diagnoseTLS(p.endpoints[0], p.cfg.tls); diag != "" {
		return fmt.Errorf("%w: cannot register with etcd at %s within %v: %s: %w",
			ErrStart, p.URL(), p.cfg.startTimeout, diag, err)
	}
	over := ""
	if p.cfg.tls != nil {
		over = " over TLS"
	}
	return fmt.Errorf("%w: cannot register with etcd at %s%s within %v (is etcd running there and reachable from this host?): %w",
		ErrStart, p.URL(), over, p.cfg.startTimeout, err)
}

// register grants a new lease and puts this node's key under it.
func (p *Provider) register(ctx context.Context) error {
	p.mu.Lock()
	cli, dir, self, member := p.cli, p.dir, p.view.self, p.view.member
	p.mu.Unlock()
	sent := time.Now()
	g, err := cli.Grant(ctx, int64(p.cfg.ttl/time.Second))
	if err != nil {
		return fmt.Errorf("grant a lease: %w", err)
	}
	key, value := encode(dir, self, member)
	if _, err := cli.Put(ctx, key, string(value), clientv3.WithLease(g.ID)); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	p.mu.Lock()
	p.lease, p.granted, p.lastRenew = g.ID, time.Duration(g.TTL)*time.Second, sent
	p.mu.Unlock()
	return nil
}

// readAll reads every key of the cluster into the view, pushes the member
// list when it changed (always when first), and returns the revision read.
func (p *Provider) readAll(ctx context.Context, first bool) (int64, error) {
	p.mu.Lock()
	cli, dir := p.cli, p.dir
	p.mu.Unlock()
	resp, err := cli.Get(ctx, dir, clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", dir, err)
	}
	es := make([]entry, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		e, err := decode(dir, string(kv.Key), kv.Value, kv.CreateRevision)
		if err != nil {
			p.log.Warn("ignoring a key", "error", err)
			continue
		}
		es = append(es, e)
	}
	p.mu.Lock()
	p.view.reset(es)
	p.mu.Unlock()
	p.settle(first)
	return resp.Header.Revision, nil
}

// settle pushes the member list when it changed (or when force).
func (p *Provider) settle(force bool) {
	p.mu.Lock()
	members, ch := p.view.settle()
	s, log := p.sink, p.log
	p.mu.Unlock()
	for _, n := range ch.joined {
		log.Info("member up", "member", n.ID, "address", n.Address(), "kinds", n.Kinds)
	}
	for _, n := range ch.left {
		log.Info("member down", "member", n.ID, "address", n.Address())
	}
	if ch.changed() || force {
		s.push(members)
	}
}

// loop renews the lease every third of it and folds watch events into the
// view. After renewals failed (etcd unreachable) it reads everything again
// and watches anew once one succeeds; a renewal that finds the lease gone
// (it expired during the outage, or etcd lost its data) registers again
// first.
func (p *Provider) loop(ctx context.Context, rev int64) {
	defer close(p.loopDone)
	every := p.DropAfter() / 3
	tick := time.NewTicker(every)
	defer tick.Stop()
	wch, wcancel := p.watch(ctx, rev)
	defer func() { wcancel() }()
	var (
		failing      bool // renewals are failing
		resync       bool // read everything and watch anew at the next good renewal
		stoppedTicks int
	)
	for {
		select {
		case <-ctx.Done():
			return
		case resp, ok := <-wch:
			if !ok || resp.Canceled || resp.Err() != nil {
				if ok {
					p.log.Warn("watch ended; reading the members again", "error", resp.Err())
				}
				wcancel()
				wch, resync = nil, true
				continue
			}
			p.fold(resp.Events)
		case <-tick.C:
			if p.sysStopped != nil && p.sysStopped() {
				// cluster.Shutdown(false) does not call the provider: stop
				// with the actor system. Wait one tick first: a graceful
				// shutdown stops the system just before it calls
				// Shutdown(true), which must win (the lease is revoked).
				if stoppedTicks++; stoppedTicks >= 2 {
					go func() { _ = p.Shutdown(false) }()
					return
				}
				continue
			}
			switch err := p.renew(ctx, every); {
			case err == nil:
				if failing {
					p.log.Info("etcd reachable again")
					failing, resync = false, true
				}
			case ctx.Err() != nil:
				return
			case errors.Is(err, rpctypes.ErrLeaseNotFound):
				p.log.Warn("registration lost (the lease expired or etcd lost its data); registering again")
				rctx, cancel := context.WithTimeout(ctx, every)
				err := p.register(rctx)
				cancel()
				if err != nil {
					failing = true
					p.log.Warn("registering again failed; will retry", "error", err)
					continue
				}
				failing, resync = false, true
			default:
				if !failing {
					p.log.Warn("renewing the registration failed; will retry", "error", err, "etcd", p.URL())
				}
				failing = true
			}
			if resync {
				rctx, cancel := context.WithTimeout(ctx, every)
				rev, err := p.readAll(rctx, false)
				cancel()
				if err != nil {
					p.log.Warn("reading the members failed; will retry", "error", err)
					continue
				}
				wcancel()
				wch, wcancel = p.watch(ctx, rev)
				resync = false
			}
		}
	}
}

// watch follows the cluster's keys from after rev. WithRequireLeader: an
// etcd member cut off from its leader ends the watch instead of going
// silent, so the loop reads everything again elsewhere.
func (p *Provider) watch(ctx context.Context, rev int64) (clientv3.WatchChan, context.CancelFunc) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	p.mu.Lock()
	cli, dir := p.cli, p.dir
	p.mu.Unlock()
	return cli.Watch(wctx, dir, clientv3.WithPrefix(), clientv3.WithRev(rev+1)), cancel
}

// fold applies watch events to the view and pushes the member list when
// it changed.
func (p *Provider) fold(evs []*clientv3.Event) {
	p.mu.Lock()
	for _, ev := range evs {
		key := string(ev.Kv.Key)
		if ev.Type == mvccpb.DELETE {
			p.view.remove(key)
			continue
		}
		e, err := decode(p.dir, key, ev.Kv.Value, ev.Kv.CreateRevision)
		if err != nil {
			p.log.Warn("ignoring a key", "error", err)
			continue
		}
		p.view.put(e)
	}
	p.mu.Unlock()
	p.settle(false)
}

// renew renews the lease once, within d (a renewal that takes longer is
// as good as lost: the next one follows).
func (p *Provider) renew(ctx context.Context, d time.Duration) error {
	p.mu.Lock()
	cli, lease := p.cli, p.lease
	p.mu.Unlock()
	sent := time.Now()
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	resp, err := cli.KeepAliveOnce(rctx, lease)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.lastRenew = sent
	if resp.TTL > 0 {
		p.granted = time.Duration(resp.TTL) * time.Second
	}
	p.mu.Unlock()
	return nil
}

// CutOff reports whether no renewal sent within the last granted lease
// has succeeded: etcd has dropped this node's registration (or will any
// moment), so the other nodes have taken it out of their views and it
// must let go of what only one node may hold (the master's journal
// lease). This node's own view stays as it was meanwhile.
func (p *Provider) CutOff() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return true
	}
	return cutOff(time.Now(), p.lastRenew, p.granted)
}

// Members returns the members this node believes alive (itself included
// when it is a member), sorted by id; it implements membership.Lister.
func (p *Provider) Members() []membership.Node {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.view == nil {
		return nil
	}
	return p.view.members()
}

// Clients returns the registered cluster clients (frontends, workers)
// other than this node, sorted by id.
func (p *Provider) Clients() []membership.Node {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.view == nil {
		return nil
	}
	return p.view.clients()
}

// Self returns this node (the zero Node before start) and whether it is a
// member.
func (p *Provider) Self() (membership.Node, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.view == nil {
		return membership.Node{}, false
	}
	return p.view.self, p.view.member
}

// Shutdown implements cluster.ClusterProvider. Graceful: the lease is
// revoked, so the others drop this node at once; otherwise the
// registration stays until the lease expires (as after a crash). It never
// panics, is safe to call more than once, and returns when the provider's
// goroutine has ended.
func (p *Provider) Shutdown(graceful bool) error {
	p.mu.Lock()
	if !p.started || p.stopped || p.cli == nil {
		p.mu.Unlock()
		return nil
	}
	p.stopped = true
	cancel, done, s := p.cancel, p.loopDone, p.sink
	p.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	if graceful {
		p.revoke()
	}
	if cs, ok := s.(*clusterSink); ok {
		cs.close()
	}
	_ = p.cli.Close()
	p.log.Info("membership stopped", "graceful", graceful)
	return nil
}

// revoke revokes the lease (its key goes with it), bounded by a second.
func (p *Provider) revoke() {
	p.mu.Lock()
	cli, lease := p.cli, p.lease
	p.mu.Unlock()
	if lease == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := cli.Revoke(ctx, lease); err != nil {
		p.log.Warn("revoking the registration failed; the others drop this node when its lease expires", "error", err)
	}
}
