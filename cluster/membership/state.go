package membership

import (
	"slices"
	"strings"
	"time"
)

// outcome is what one probe of a peer's endpoint gave.
type outcome uint8

const (
	// outcomeFailed: the probe failed fast, which only a live host does for
	// a dead process or a sick node: connection refused or reset, a non-200
	// answer, a bad body, another cluster. n in a row take a member down.
	outcomeFailed  outcome = iota + 1
	outcomeOK              // 200 with a Status of our cluster
	outcomeLeaving         // 503 with Leaving set: graceful leave
	// outcomeSilent: no answer within the probe timeout. A paused, overloaded
	// or partitioned node looks like this; it counts only through silence
	// (no good answer for a while), never one probe at a time.
	outcomeSilent
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
	seed     bool      // configured: probed forever, never forgotten
	self     bool      // answered with our own id (a seed naming this node)
	node     Node      // the incarnation that last answered there
	alive    bool      // in this node's view
	failures int       // consecutive fast failures
	lastOK   time.Time // last good answer; zero when it never answered
	since    time.Time // when the endpoint was learned or last went down
	last     *Status   // last good answer, while alive
}

// change is what one call of apply or expire changed.
type change struct {
	joined []Node
	left   []Node
}

func (c change) changed() bool { return len(c.joined) > 0 || len(c.left) > 0 }

func (c *change) merge(o change) {
	c.joined = append(c.joined, o.joined...)
	c.left = append(c.left, o.left...)
}

// seenClient is a client that polled this member.
type seenClient struct {
	node Node
	last time.Time
}

// rules are the view's thresholds.
type rules struct {
	failures  int           // consecutive fast failures that take a member down
	silence   time.Duration // no good answer for this long takes a member down
	forget    time.Duration // a learned endpoint down for this long is no longer probed
	clientTTL time.Duration // how long a client that polled us is reported
}

// view is the pure membership state of one node: which peers to probe,
// which members are alive, which incarnations are gone for good. It does
// no I/O and reads no clock; the provider feeds it probe results, the
// probes it receives and the time.
//
// Down is not forever. A member taken down for failed probes or silence
// (crashed, paused, cut off by a partition) is probed on, and joins again
// when its own probe answers: partitions heal by themselves. Only a member
// that left gracefully, or whose endpoint now answers for a newer
// incarnation, is gone for good (its id is dead).
type view struct {
	self    Node // this node; HTTP and ID empty until started
	member  bool // false for a cluster client (not in its own view)
	cluster string
	rules   rules

	peers   map[string]*peer    // by endpoint address
	dead    map[string]struct{} // member ids that left or were replaced
	clients map[string]seenClient

	contacted   bool      // this node has heard from another node at least once
	lastContact time.Time // last good answer or probe received from another node
}

func newView(self Node, member bool, cluster string, seeds []string, r rules) *view {
	v := &view{
		self:    self,
		member:  member,
		cluster: cluster,
		rules:   r,
		peers:   make(map[string]*peer),
		dead:    make(map[string]struct{}),
		clients: make(map[string]seenClient),
	}
	for _, s := range seeds {
		if s == self.HTTP && self.HTTP != "" {
			continue
		}
		v.peers[s] = &peer{addr: s, seed: true}
	}
	return v
}

// targets returns the endpoints to probe, sorted.
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

// isDead reports whether the incarnation id left or was replaced.
func (v *view) isDead(id string) bool {
	_, ok := v.dead[id]
	return ok
}

// kill records that id is gone for good: it never becomes alive again.
func (v *view) kill(id string) {
	if id != "" && id != v.self.ID {
		v.dead[id] = struct{}{}
	}
}

// down takes p's member out of the view; its endpoint stays a target (a
// learned one until rules.forget has passed) so that it can join again.
func (v *view) down(now time.Time, p *peer, ch *change) {
	wasAlive := p.alive
	p.alive, p.last, p.since = false, nil, now
	if p.node.ID != "" {
		// The same member may be known under several endpoint spellings
		// (a seed "localhost:6551" and the advertised "127.0.0.1:6551").
		for _, q := range v.peers {
			if q.node.ID == p.node.ID && q.alive {
				q.alive, q.last, q.since = false, nil, now
				wasAlive = true
			}
		}
	}
	if wasAlive {
		ch.left = append(ch.left, p.node)
	}
}

// apply folds probe results into the view, then expires what the time
// says is silent or forgotten.
func (v *view) apply(now time.Time, results []result) change {
	var ch change
	for _, r := range results {
		p, ok := v.peers[r.addr]
		if !ok || p.self {
			continue
		}
		switch r.outcome {
		case outcomeOK:
			v.answered(now, p, r.status, &ch)
		case outcomeLeaving:
			if r.status != nil && r.status.ID != "" {
				v.kill(r.status.ID)
			}
			v.kill(p.node.ID)
			v.down(now, p, &ch)
		case outcomeFailed:
			p.failures++
			if p.alive && p.failures >= v.rules.failures {
				v.down(now, p, &ch)
			}
		case outcomeSilent:
			// Counted by expire, through silence.
		}
	}
	ch.merge(v.expire(now))
	return ch
}

// answered folds a good answer st from p's endpoint into the view.
func (v *view) answered(now time.Time, p *peer, st *Status, ch *change) {
	if st.ID == v.self.ID && v.self.ID != "" {
		p.self = true
		return
	}
	v.contacted, v.lastContact = true, now
	if p.node.ID != "" && p.node.ID != st.ID {
		// The endpoint answers for a new incarnation (a restart on the same
		// port): the old one is gone for good.
		v.down(now, p, ch)
		v.kill(p.node.ID)
	}
	p.failures = 0
	p.lastOK = now
	p.node = st.Node
	p.node.HTTP = p.addr
	if v.isDead(st.ID) {
		// It left or was replaced, and still answers: it can never rejoin
		// under this id, and its view does not count.
		if p.alive {
			v.down(now, p, ch)
		}
		return
	}
	if !p.alive {
		p.alive = true
		ch.joined = append(ch.joined, p.node)
	}
	p.last = st
	for _, m := range st.Members {
		if m.ID != v.self.ID || v.self.ID == "" {
			v.learn(now, m)
		}
	}
}

// expire takes down the members that gave no good answer for
// rules.silence and stops probing learned endpoints that have been down
// (or never answered) for rules.forget.
func (v *view) expire(now time.Time) change {
	var ch change
	for addr, p := range v.peers {
		switch {
		case p.alive && now.Sub(p.lastOK) >= v.rules.silence:
			v.down(now, p, &ch)
		case !p.alive && !p.seed && now.Sub(p.since) >= v.rules.forget:
			delete(v.peers, addr)
		}
	}
	return ch
}

// cutOff reports whether this node has heard from no other node for
// rules.silence although it did before: the others have taken it down by
// now. A node that never heard from another (a cluster of one) is not cut
// off.
func (v *view) cutOff(now time.Time) bool {
	return v.contacted && now.Sub(v.lastContact) >= v.rules.silence
}

// learn adds the endpoint of member m, reported by a peer, to the probe
// targets. It becomes alive only once this node has probed it.
func (v *view) learn(now time.Time, m Node) {
	if m.HTTP == "" || m.HTTP == v.self.HTTP || m.ID == "" || v.isDead(m.ID) {
		return
	}
	if _, ok := v.peers[m.HTTP]; ok {
		return
	}
	v.peers[m.HTTP] = &peer{addr: m.HTTP, since: now}
}

// heardFrom records a probe this node received from a node of its
// cluster: a member prober's endpoint is learned, a client prober is
// remembered for rules.clientTTL.
func (v *view) heardFrom(now time.Time, n Node) {
	if n.ID == "" || n.ID == v.self.ID {
		return
	}
	v.contacted, v.lastContact = true, now
	if n.HTTP != "" {
		v.learn(now, n)
		return
	}
	v.clients[n.ID] = seenClient{node: n, last: now}
}

// reject records member ids that the cluster refused (blocked ids): they
// are gone for good, like members that left.
func (v *view) reject(now time.Time, ids []string) change {
	var ch change
	for _, id := range ids {
		if id == v.self.ID {
			continue
		}
		v.kill(id)
		for _, p := range v.peers {
			if p.node.ID == id && p.alive {
				v.down(now, p, &ch) // every endpoint of the member, once
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
		if now.Sub(c.last) > v.rules.clientTTL {
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

// suspect reports whether the member at addr is alive but its last probe
// failed fast: one more failure may take it down.
func (v *view) suspect(addr string) bool {
	p, ok := v.peers[addr]
	return ok && p.alive && p.failures > 0
}
