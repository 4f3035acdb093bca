package membership

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/eventstream"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/cluster/membership/internal/alias"
)

// Provider is a protoactor-go cluster.ClusterProvider that needs no
// external service: members serve GET /members on an HTTP port, every node
// probes the seeds and every member it knows each refresh, learns members
// transitively from the answers, and declares a member down after a number
// of consecutive failed probes of its own. Make one per cluster.Cluster
// with [New]; it is started by the cluster (StartMember or StartClient)
// and stopped by Shutdown.
type Provider struct {
	cfg    config
	clock  clock.Clock
	client *http.Client
	tr     *http.Transport

	pushedOnce atomic.Bool // the first member list was handed to the cluster

	mu       sync.Mutex
	view     *view
	leaving  bool
	lingered map[string]bool // member ids that probed us since we started leaving
	started  bool
	stopped  bool
	log      *slog.Logger
	c        *cluster.Cluster
	sub      *eventstream.Subscription
	accepted map[string]bool // protoactor ids in the cluster's last published topology
	httpAddr string
	inflight map[string]bool // endpoints with a probe under way
	aliases  *alias.Aliases  // member id -> the id protoactor knows it by

	srv      *http.Server
	cancel   context.CancelFunc
	loopDone chan struct{}
	results  chan result // probe results, folded by the loop
	confirm  chan string // endpoints to probe again soon (a fast failure)
	wg       sync.WaitGroup
	probes   sync.WaitGroup // probe goroutines

	// hooks for tests (export_test.go)
	startedHook func()
	failServing atomic.Bool
	hang        atomic.Pointer[chan struct{}] // non-nil: answers wait until it is closed (a silent node)
}

var _ cluster.ClusterProvider = (*Provider)(nil)

// New returns a provider configured by opts, or an error wrapping
// [ErrInvalidOption] that names every bad option.
func New(opts ...Option) (*Provider, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: cfg.timeout}
	tr := &http.Transport{
		Proxy:               nil, // loopback and private addresses: never a proxy
		DialContext:         dialer.DialContext,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     10 * cfg.refresh,
		DisableCompression:  true,
	}
	cfg.secureTransport(tr, dialer)
	log := cfg.logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Provider{
		log:    log,
		cfg:    cfg,
		clock:  clock.OrReal(cfg.clock),
		tr:     tr,
		client: &http.Client{Transport: tr, Timeout: cfg.timeout},
	}, nil
}

// StartMember implements cluster.ClusterProvider: it serves GET /members,
// runs a first probe round (so the member list is filled before it
// returns), then probes every refresh until Shutdown.
func (p *Provider) StartMember(c *cluster.Cluster) error {
	return p.start(c, true)
}

// StartClient implements cluster.ClusterProvider: a client serves nothing
// and is not a member; it polls the seeds and the members it learns and
// keeps the cluster's member list current so that its requests route.
func (p *Provider) StartClient(c *cluster.Cluster) error {
	return p.start(c, false)
}

func (p *Provider) start(c *cluster.Cluster, member bool) error {
	p.mu.Lock()
	if p.started {
		p.mu.Unlock()
		return fmt.Errorf("%w: the provider was already started; make one provider per cluster", ErrStart)
	}
	p.started = true
	p.mu.Unlock()

	host, port, err := c.ActorSystem.GetHostPort()
	if err != nil {
		return fmt.Errorf("%w: node address %q: %w", ErrStart, c.ActorSystem.Address(), err)
	}
	log := p.cfg.logger
	if log == nil {
		log = c.Logger()
	}
	log = log.With("component", "membership", "member_id", c.ActorSystem.ID)

	self := Node{ID: c.ActorSystem.ID, Host: host, Port: port}
	if member {
		self.Kinds = c.GetClusterKinds()
		slices.Sort(self.Kinds)
	}
	seeds := make([]string, 0, len(p.cfg.seeds)+len(p.cfg.seedHTTP))
	for _, s := range p.cfg.seeds {
		a, err := offsetAddr(s, p.cfg.portOffset)
		if err != nil {
			return fmt.Errorf("%w: seed %q: %w", ErrStart, s, err)
		}
		seeds = append(seeds, a)
	}
	seeds = append(seeds, p.cfg.seedHTTP...)

	var ln net.Listener
	if member {
		listen := p.cfg.httpAddr
		if listen == "" {
			a, err := offsetAddr(net.JoinHostPort(p.cfg.bindHost, strconv.Itoa(port)), p.cfg.portOffset)
			if err != nil {
				return fmt.Errorf("%w: membership endpoint for remote port %d: %w", ErrStart, port, err)
			}
			listen = a
		}
		ln, err = net.Listen("tcp", listen)
		if err != nil {
			return fmt.Errorf("%w: membership endpoint %s: %w (is another node using this port? set WithPortOffset or WithHTTPAddr)", ErrStart, listen, err)
		}
		ln = p.cfg.secureListener(ln)
		_, lport, _ := splitHostPort(ln.Addr().String())
		// Others reach us at our advertised host, not at a wildcard bind.
		self.HTTP = net.JoinHostPort(host, strconv.Itoa(lport))
	}

	p.mu.Lock()
	p.c = c
	p.log = log
	p.httpAddr = self.HTTP
	p.view = newView(self, member, c.Config.Name, seeds, rules{
		failures:  p.cfg.failures,
		silence:   p.cfg.silence,
		forget:    p.cfg.forget,
		clientTTL: time.Duration(p.cfg.clientTTL) * p.cfg.refresh,
	})
	p.accepted = nil
	p.inflight = make(map[string]bool)
	p.aliases = alias.New(self.ID)
	p.mu.Unlock()

	p.sub = c.ActorSystem.EventStream.Subscribe(func(evt any) {
		if t, ok := evt.(*cluster.ClusterTopology); ok {
			ids := make(map[string]bool, len(t.Members))
			for _, m := range t.Members {
				ids[m.Id] = true
			}
			p.mu.Lock()
			p.accepted = ids
			p.mu.Unlock()
		}
	})

	if ln != nil {
		mux := http.NewServeMux()
		mux.HandleFunc("GET "+Path, p.serveMembers)
		p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("membership endpoint stopped", "error", err)
			}
		}()
	}
	if p.startedHook != nil {
		p.startedHook()
	}

	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.loopDone = make(chan struct{})
	p.results = make(chan result, 64)
	p.confirm = make(chan string, 64)
	p.firstRound(ctx)
	go p.loop(ctx)
	log.Info("membership started", "member", member, "http", self.HTTP, "seeds", len(seeds),
		"refresh", p.cfg.refresh, "failures", p.cfg.failures, "silence", p.cfg.silence)
	return nil
}

// HTTPAddr returns the address of this member's membership endpoint
// (empty for a client or before start).
func (p *Provider) HTTPAddr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.httpAddr
}

// Members returns the members this node believes alive (itself included
// when it is a member), sorted by id.
func (p *Provider) Members() []Node {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.view == nil {
		return nil
	}
	return p.view.members()
}

// CutOff reports whether this node has heard from no other node of its
// cluster (no good answer to its probes, no probe received) for the
// silence period ([WithSilence]) although it had before: the other nodes
// have taken it out of their views by now, so it should not hold on to
// anything only one node may hold (the master's journal lease). A node
// that never heard from another one, a cluster of one, is not cut off.
func (p *Provider) CutOff() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.view == nil {
		return false
	}
	return p.view.cutOff(p.clock.Now())
}

// Silence returns how long a member may give no good answer before this
// node declares it down ([WithSilence]): the longest stall (a pause, an
// overloaded machine) that the membership rides out.
func (p *Provider) Silence() time.Duration { return p.cfg.silence }

// Clients returns the cluster clients this node or its alive peers saw
// polling recently, sorted by id.
func (p *Provider) Clients() []Node {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.view == nil {
		return nil
	}
	return p.view.allClients(p.clock.Now())
}

// loop probes every target each refresh, each probe on its own: a silent
// peer (its probe waits for the timeout) delays nobody else's. Results are
// folded into the view as they arrive.
func (p *Provider) loop(ctx context.Context) {
	defer close(p.loopDone)
	t := p.clock.NewTicker(p.cfg.refresh)
	defer t.Stop()
	stoppedTicks := 0
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-p.results:
			p.fold(ctx, []result{r})
		case addr := <-p.confirm:
			p.startProbes(ctx, []string{addr})
		case <-t.C():
			if p.c.ActorSystem.IsStopped() {
				// cluster.Shutdown(false) does not call the provider: stop with
				// the actor system so no goroutine outlives it. Wait one tick
				// first: cluster.Shutdown(true) stops the system just before
				// it calls Shutdown(true), which must win (graceful leave).
				if stoppedTicks++; stoppedTicks >= 2 {
					go func() { _ = p.Shutdown(false) }()
					return
				}
				continue
			}
			p.fold(ctx, nil) // silence and forgetting go by the clock
			p.mu.Lock()
			targets := p.view.targets()
			p.mu.Unlock()
			p.startProbes(ctx, targets)
		}
	}
}

// firstRound probes every target and waits for all of them, so that the
// member list is filled before StartMember or StartClient returns.
func (p *Provider) firstRound(ctx context.Context) {
	p.mu.Lock()
	targets := p.view.targets()
	self, member := p.view.self, p.view.member
	p.mu.Unlock()
	results := make([]result, len(targets))
	var wg sync.WaitGroup
	for i, addr := range targets {
		wg.Go(func() { results[i] = p.probe(ctx, addr, self, member) })
	}
	wg.Wait()
	p.fold(ctx, results)
}

// startProbes starts a probe of each addr that has none under way; its
// result reaches the loop through p.results.
func (p *Provider) startProbes(ctx context.Context, addrs []string) {
	p.mu.Lock()
	self, member := p.view.self, p.view.member
	var start []string
	for _, a := range addrs {
		if !p.inflight[a] {
			p.inflight[a] = true
			start = append(start, a)
		}
	}
	p.mu.Unlock()
	for _, addr := range start {
		p.probes.Go(func() {
			r := p.probe(ctx, addr, self, member)
			select {
			case p.results <- r:
			case <-ctx.Done():
			}
		})
	}
}

// fold applies results (and the passing of time) to the view, pushes the
// member list to the cluster when it changed, and has a member whose probe
// just failed fast probed again soon: a refused connection is strong
// evidence of a dead process, and a second one confirms it well before the
// next round.
func (p *Provider) fold(ctx context.Context, results []result) {
	p.mu.Lock()
	ch := p.view.apply(p.clock.Now(), results)
	members := p.view.members()
	var again []string
	for _, r := range results {
		delete(p.inflight, r.addr)
		if r.outcome == outcomeFailed && p.view.suspect(r.addr) {
			again = append(again, r.addr)
		}
	}
	p.mu.Unlock()

	// Push on every change, and once at start even without one: a lone
	// member (the first seed) must see itself, or lookups on it find no
	// owner for any identity.
	if ch.changed() || !p.pushedOnce.Load() {
		p.pushedOnce.Store(true)
		p.push(members, ch)
	}
	for _, addr := range again {
		p.clock.AfterFunc(p.cfg.refresh/4, func() {
			if ctx.Err() != nil {
				return
			}
			select {
			case p.confirm <- addr:
			default: // the next round probes it anyway
			}
		})
	}
}

// push hands the alive members to the cluster, each under the id
// protoactor knows it by (see aliases), and takes out those the cluster
// refuses (ids blocked by it, e.g. propagated by gossip).
func (p *Provider) push(nodes []Node, ch change) {
	p.mu.Lock()
	for _, n := range ch.joined {
		if p.aliases.Known(n.ID) {
			p.log.Info("member up again", "member", n.ID, "address", n.Address(), "kinds", n.Kinds)
		} else {
			p.log.Info("member up", "member", n.ID, "address", n.Address(), "kinds", n.Kinds)
		}
	}
	for _, n := range ch.left {
		p.log.Info("member down", "member", n.ID, "address", n.Address())
	}
	ids := p.aliases.Next(nodeIDs(nodes))
	p.mu.Unlock()
	members := make([]*cluster.Member, 0, len(nodes))
	for i, n := range nodes {
		members = append(members, &cluster.Member{Id: ids[i], Host: n.Host, Port: int32(n.Port), Kinds: append([]string(nil), n.Kinds...)})
	}
	p.c.MemberList.UpdateClusterTopology(members)

	p.mu.Lock()
	var refused []string
	if p.accepted != nil {
		for i, n := range nodes {
			if !p.accepted[ids[i]] && n.ID != p.view.self.ID {
				refused = append(refused, n.ID)
			}
		}
	}
	var rch change
	if len(refused) > 0 {
		rch = p.view.reject(p.clock.Now(), refused)
	}
	p.mu.Unlock()
	for _, n := range rch.left {
		p.log.Info("member refused by the cluster (blocked id)", "member", n.ID, "address", n.Address())
	}
}

func nodeIDs(nodes []Node) []string {
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	return ids
}

// probe asks one endpoint for its Status.
func (p *Provider) probe(ctx context.Context, addr string, self Node, member bool) result {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.cfg.scheme()+"://"+addr+Path, nil)
	if err != nil {
		return result{addr: addr, outcome: outcomeFailed}
	}
	req.Header.Set(HeaderID, self.ID)
	req.Header.Set(HeaderAddr, self.Address())
	req.Header.Set(HeaderCluster, p.clusterName())
	if member {
		req.Header.Set(HeaderHTTP, self.HTTP)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		p.debug("probe failed", addr, err)
		return result{addr: addr, outcome: failureOf(err)}
	}
	// The probe's outcome comes from the status and the decoded body; a failed
	// close of the body afterwards changes nothing.
	defer func() { _ = resp.Body.Close() }()
	var st Status
	dec := json.NewDecoder(io.LimitReader(resp.Body, MaxResponseBytes))
	decErr := dec.Decode(&st)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes))
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable && decErr == nil && st.Leaving:
		return result{addr: addr, outcome: outcomeLeaving, status: &st}
	case resp.StatusCode != http.StatusOK:
		p.debug("probe failed", addr, fmt.Errorf("%w: HTTP status %d", ErrProbe, resp.StatusCode))
		return result{addr: addr, outcome: outcomeFailed}
	case decErr != nil:
		p.debug("probe failed", addr, fmt.Errorf("%w: bad JSON: %w", ErrProbe, decErr))
		return result{addr: addr, outcome: failureOf(decErr)}
	case st.Cluster != p.clusterName():
		p.debug("probe failed", addr, fmt.Errorf("%w: node %s belongs to cluster %q, not %q", ErrProbe, st.ID, st.Cluster, p.clusterName()))
		return result{addr: addr, outcome: outcomeFailed}
	case st.ID == "":
		p.debug("probe failed", addr, fmt.Errorf("%w: answer has no id", ErrProbe))
		return result{addr: addr, outcome: outcomeFailed}
	}
	return result{addr: addr, outcome: outcomeOK, status: &st}
}

// failureOf classifies a failed probe: no answer within the timeout is
// silence (the peer may be paused, overloaded or cut off), anything else
// (refused, reset, a broken answer) a fast failure.
func failureOf(err error) outcome {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return outcomeSilent
	}
	return outcomeFailed
}

func (p *Provider) debug(msg, addr string, err error) {
	p.log.Debug(msg, "endpoint", addr, "error", err)
}

func (p *Provider) clusterName() string { return p.c.Config.Name }

// serveMembers answers GET /members.
func (p *Provider) serveMembers(w http.ResponseWriter, r *http.Request) {
	if hang := p.hang.Load(); hang != nil {
		select {
		case <-*hang:
		case <-r.Context().Done():
			return
		}
	}
	if p.failServing.Load() {
		http.Error(w, "membership: fault injected by a test", http.StatusInternalServerError)
		return
	}
	from := Node{ID: r.Header.Get(HeaderID), HTTP: r.Header.Get(HeaderHTTP)}
	if h, port, err := splitHostPort(r.Header.Get(HeaderAddr)); err == nil {
		from.Host, from.Port = h, port
	}
	sameCluster := r.Header.Get(HeaderCluster) == p.clusterName()

	p.mu.Lock()
	now := p.clock.Now()
	if sameCluster && !p.leaving {
		p.view.heardFrom(now, from)
	}
	if p.leaving && from.ID != "" {
		p.lingered[from.ID] = true
	}
	st := Status{
		Node:    p.view.self,
		Cluster: p.clusterName(),
		Leaving: p.leaving,
		Members: p.view.members(),
		Clients: p.view.directClients(now),
	}
	leaving := p.leaving
	p.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if leaving {
		st.Members = nil
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(&st)
}

// Shutdown implements cluster.ClusterProvider. Graceful: the member
// answers 503 "leaving" until every alive member and every client that
// polls it has seen that (bounded by two rounds plus a probe timeout), so others drop it at once instead of
// after several failed probes. Then (or at once when not graceful) it
// stops probing and serving. It never panics, is safe to call more than
// once, and returns when every goroutine it started has ended.
func (p *Provider) Shutdown(graceful bool) error {
	p.mu.Lock()
	if !p.started || p.stopped {
		p.mu.Unlock()
		return nil
	}
	p.stopped = true
	var waitFor []string
	if graceful && p.srv != nil {
		p.leaving = true
		p.lingered = make(map[string]bool)
		for _, n := range p.view.members() {
			if n.ID != p.view.self.ID {
				waitFor = append(waitFor, n.ID)
			}
		}
		for _, n := range p.view.directClients(p.clock.Now()) {
			waitFor = append(waitFor, n.ID)
		}
	}
	p.mu.Unlock()

	if p.cancel != nil {
		p.cancel()
		<-p.loopDone
		p.probes.Wait()
	}
	if len(waitFor) > 0 {
		p.linger(waitFor)
	}
	if p.sub != nil {
		p.c.ActorSystem.EventStream.Unsubscribe(p.sub)
	}
	if p.srv != nil {
		_ = p.srv.Close()
	}
	p.wg.Wait()
	p.tr.CloseIdleConnections()
	p.log.Info("membership stopped", "graceful", graceful)
	return nil
}

// linger waits until every node in ids has probed us since we started
// leaving, or two rounds plus one probe timeout have passed.
func (p *Provider) linger(ids []string) {
	deadline := p.clock.NewTimer(2*p.cfg.refresh + p.cfg.timeout)
	defer deadline.Stop()
	tick := p.clock.NewTicker(p.cfg.refresh / 10)
	defer tick.Stop()
	for {
		p.mu.Lock()
		all := true
		for _, id := range ids {
			if !p.lingered[id] {
				all = false
				break
			}
		}
		p.mu.Unlock()
		if all {
			return
		}
		select {
		case <-deadline.C():
			return
		case <-tick.C():
		}
	}
}
