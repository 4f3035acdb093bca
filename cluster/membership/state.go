package membership

import (
	"slices"
	"strings"
	"time"
)

// outcome is what one probe of a peer's endpoint gave.
type outcome uint8

const (
	outcomeFailed  outcome = iota + 1 // unreachable, timeout, bad answer
	outcomeOK                         // 200 with a Status of our cluster
	outcomeLeaving                    // 503 with Leaving set: graceful leave
)

// result is one probe's result, the input of view.apply.
type result struct {
	addr    string
	outcome outcome
	status  *Status // set for outcomeOK and (when known) outcomeLeaving
}

// peer is a membership endpoint this node probes.
type peer struct {
	addr     string
	seed     bool    // configured: probed forever, never forgotten
	self     bool    // answered with our own id (a seed naming this node)
	node     Node    // the incarnation that last answered there
	alive    bool    // in this node's view
	failures int     // consecutive failed probes
	last     *Status // last good answer, while alive
}

// change is what one round of results changed.
type change struct {
	joined  []Node
	left    []Node
	ejected bool // the self-ejection check fired (once)
}

func (c change) changed() bool { return len(c.joined) > 0 || len(c.left) > 0 }

// seenClient is a client that polled this member.
type seenClient struct {
	node Node
	last time.Time
}

// view is the pure membership state of one node: which peers to probe,
// which members are alive, which incarnations are dead for good. It does
// no I/O and reads no clock; the provider feeds it probe results and the
// probes it receives.
type view struct {
	self       Node // this node; HTTP and ID empty until started
	member     bool // false for a cluster client (not in its own view)
	cluster    string
	failures   int
	ejectAfter int
	clientTTL  time.Duration

	peers   map[string]*peer    // by endpoint address
	dead    map[string]struct{} // member ids that left or were declared down
	clients map[string]seenClient
	absent  int // consecutive rounds in which no reachable peer listed us
	ejected bool
}

func newView(self Node, member bool, cluster string, seeds []string, failures, ejectAfter int, clientTTL time.Duration) *view {
	v := &view{
		self:       self,
		member:     member,
		cluster:    cluster,
		failures:   failures,
		ejectAfter: ejectAfter,
		clientTTL:  clientTTL,
		peers:      make(map[string]*peer),
		dead:       make(map[string]struct{}),
		clients:    make(map[string]seenClient),
	}
	for _, s := range seeds {
		if s == self.HTTP && self.HTTP != "" {
			continue
		}
		v.peers[s] = &peer{addr: s, seed: true}
	}
	return v
}

// targets returns the endpoints to probe this round, sorted.
func (v *view) targets() []string {
	out := make([]string, 0, len(v.peers))
	for a, p := range v.peers {
		if !p.self {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

// isDead reports whether the incarnation id left or was declared down.
func (v *view) isDead(id string) bool {
	_, ok := v.dead[id]
	return ok
}

// kill records that id left or is down: it never becomes alive again.
func (v *view) kill(id string) {
	if id != "" && id != v.self.ID {
		v.dead[id] = struct{}{}
	}
}

// down takes p out of the view, records its incarnation as dead and, for a
// learned (non-seed) endpoint, forgets the endpoint.
func (v *view) down(p *peer, ch *change) {
	wasAlive := p.alive
	p.alive, p.last = false, nil
	if p.node.ID != "" {
		// The same member may be known under several endpoint spellings
		// (a seed "localhost:6551" and the advertised "127.0.0.1:6551").
		for _, q := range v.peers {
			if q.node.ID == p.node.ID && q.alive {
				q.alive, q.last = false, nil
				wasAlive = true
			}
		}
	}
	if wasAlive {
		ch.left = append(ch.left, p.node)
	}
	v.kill(p.node.ID)
	if !p.seed {
		delete(v.peers, p.addr)
	}
}

// apply folds one round of probe results into the view.
func (v *view) apply(results []result) change {
	var ch change
	reachable, listsUs := 0, false
	for _, r := range results {
		p, ok := v.peers[r.addr]
		if !ok || p.self {
			continue
		}
		switch r.outcome {
		case outcomeOK:
			st := r.status
			if st.ID == v.self.ID && v.self.ID != "" {
				p.self = true
				continue
			}
			if p.alive && p.node.ID != st.ID {
				// The endpoint now answers for a new incarnation (a restart
				// on the same port): the old one is gone.
				v.down(p, &ch)
				p, ok = v.peers[r.addr]
				if !ok {
					p = &peer{addr: r.addr}
					v.peers[r.addr] = p
				}
			}
			p.failures = 0
			p.node = st.Node
			p.node.HTTP = r.addr
			if v.isDead(st.ID) {
				// A zombie: declared down or left, still answering. It can
				// never rejoin under this id; its view does not count.
				if p.alive {
					ch.left = append(ch.left, p.node)
				}
				p.alive, p.last = false, nil
				continue
			}
			if !p.alive {
				p.alive = true
				ch.joined = append(ch.joined, p.node)
			}
			p.last = st
			reachable++
			for _, m := range st.Members {
				if m.ID == v.self.ID && v.self.ID != "" {
					listsUs = true
					continue
				}
				v.learn(m)
			}
		case outcomeLeaving:
			if r.status != nil && r.status.ID != "" && p.node.ID != r.status.ID {
				v.kill(r.status.ID)
			}
			v.down(p, &ch)
		default:
			p.failures++
			if p.failures >= v.failures {
				if p.alive || !p.seed {
					v.down(p, &ch)
				}
			}
		}
	}
	if v.member && reachable > 0 && !v.ejected {
		if listsUs {
			v.absent = 0
		} else {
			v.absent++
			if v.absent >= v.ejectAfter {
				v.ejected = true
				ch.ejected = true
			}
		}
	}
	return ch
}

// learn adds the endpoint of member m, reported by a peer, to the probe
// targets. It becomes alive only once this node has probed it.
func (v *view) learn(m Node) {
	if m.HTTP == "" || m.HTTP == v.self.HTTP || m.ID == "" || v.isDead(m.ID) {
		return
	}
	if _, ok := v.peers[m.HTTP]; ok {
		return
	}
	v.peers[m.HTTP] = &peer{addr: m.HTTP}
}

// heardFrom records a probe this node received: a member prober's endpoint
// is learned, a client prober is remembered for clientTTL.
func (v *view) heardFrom(now time.Time, n Node) {
	if n.ID == "" || n.ID == v.self.ID {
		return
	}
	if n.HTTP != "" {
		v.learn(n)
		return
	}
	v.clients[n.ID] = seenClient{node: n, last: now}
}

// reject records member ids that the cluster refused (blocked ids): they
// are taken out of the view like members that were declared down.
func (v *view) reject(ids []string) change {
	var ch change
	for _, id := range ids {
		if id == v.self.ID {
			continue
		}
		v.kill(id)
		for _, p := range v.peers {
			if p.node.ID == id && p.alive {
				p.alive, p.last = false, nil
				ch.left = append(ch.left, p.node)
			}
		}
	}
	return ch
}

// members returns the alive members sorted by id, self first included when
// this node is a member.
func (v *view) members() []Node {
	out := make([]Node, 0, len(v.peers)+1)
	if v.member {
		out = append(out, v.self)
	}
	seen := map[string]bool{v.self.ID: v.member}
	for _, p := range v.peers {
		if p.alive && !seen[p.node.ID] {
			seen[p.node.ID] = true
			out = append(out, p.node)
		}
	}
	sortNodes(out)
	return out
}

// directClients returns the clients that polled this node within
// clientTTL of now, sorted by id, and forgets older ones.
func (v *view) directClients(now time.Time) []Node {
	out := make([]Node, 0, len(v.clients))
	for id, c := range v.clients {
		if now.Sub(c.last) > v.clientTTL {
			delete(v.clients, id)
			continue
		}
		out = append(out, c.node)
	}
	sortNodes(out)
	return out
}

// allClients returns the clients this node saw itself plus those its alive
// peers reported, sorted by id.
func (v *view) allClients(now time.Time) []Node {
	out := v.directClients(now)
	seen := make(map[string]bool, len(out))
	for _, c := range out {
		seen[c.ID] = true
	}
	if !v.member {
		seen[v.self.ID] = true
	}
	for _, p := range v.peers {
		if !p.alive || p.last == nil {
			continue
		}
		for _, c := range p.last.Clients {
			if !seen[c.ID] {
				seen[c.ID] = true
				out = append(out, c)
			}
		}
	}
	sortNodes(out)
	return out
}

func sortNodes(ns []Node) {
	slices.SortFunc(ns, func(a, b Node) int { return strings.Compare(a.ID, b.ID) })
}
