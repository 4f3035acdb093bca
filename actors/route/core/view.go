package core

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/foreman-actors/foreman/actors/effect"
)

// ProbeResult is what one probe of a member's endpoint gave.
type ProbeResult uint8

const (
	// ProbeOK is a good answer from the incarnation in Probed.Member.
	ProbeOK ProbeResult = iota + 1
	// ProbeFailed is a fast failure (connection refused or reset): only a
	// live host answers so, for a dead process. Rules.Failures in a row
	// take a member down.
	ProbeFailed
	// ProbeSilent is no answer within the probe timeout: a paused,
	// overloaded or cut-off member. It counts only through Rules.Silence.
	ProbeSilent
	// ProbeLeaving is a member leaving gracefully: down at once, for good.
	ProbeLeaving
)

// String returns the result's name.
func (r ProbeResult) String() string {
	switch r {
	case ProbeOK:
		return "ok"
	case ProbeFailed:
		return "failed"
	case ProbeSilent:
		return "silent"
	case ProbeLeaving:
		return "leaving"
	}
	return fmt.Sprintf("ProbeResult(%d)", uint8(r))
}

// Rules are a view's thresholds: cluster/membership's defaults by
// [DefaultRules].
type Rules struct {
	// Refresh is how often every endpoint is probed.
	Refresh time.Duration
	// FollowUp is how soon a member whose probe failed fast is probed
	// again, before the next refresh.
	FollowUp time.Duration
	// Failures is how many fast failures in a row take a member down.
	Failures int
	// Silence is how long without a good answer takes a member down: the
	// detection delay of a paused or cut-off member.
	Silence time.Duration
}

// DefaultRules are cluster/membership's: probe every 100 ms, follow a
// fast failure up after 25 ms, down after 2 fast failures or 1 s of
// silence.
func DefaultRules() Rules {
	return Rules{Refresh: 100 * time.Millisecond, FollowUp: 25 * time.Millisecond, Failures: 2, Silence: time.Second}
}

// TimerRefresh is the name of the view's refresh timer.
const TimerRefresh = "refresh"

// followUpPrefix names the timer of a follow-up probe: the prefix then the
// endpoint's address.
const followUpPrefix = "followup:"

// Inputs of [View.Step] (besides effect.Fired).
type (
	// Start arms the refresh timer and probes every endpoint.
	Start struct{}
	// Probed is a probe's answer from the endpoint at Addr; Member is the
	// incarnation that answered (for ProbeOK, and ProbeLeaving when known).
	Probed struct {
		Addr   string
		Result ProbeResult
		Member Member
	}
	// ProbedBy records a probe this node received from member m: it has
	// heard from the cluster (see [View.CutOff]).
	ProbedBy struct{ Member Member }
)

// Effects of [View.Step] (besides effect.Timer).
type (
	// Probe asks the runner to probe the endpoint at Addr and step the
	// view with its Probed (or nothing, for a probe lost).
	Probe struct{ Addr string }
	// Changed is the new topology as this node sees it: the alive members
	// sorted by id (self included when a member), and who joined and left
	// in this step, each sorted by id.
	Changed struct {
		Members      []Member
		Joined, Left []Member
	}
)

// IsEffect marks Probe as an effect.Effect.
func (Probe) IsEffect() {}

// IsEffect marks Changed as an effect.Effect.
func (Changed) IsEffect() {}

// peer is an endpoint the view probes.
type peer struct {
	addr     string
	node     Member    // the incarnation that last answered there
	alive    bool      // in this node's view
	failures int       // consecutive fast failures
	lastOK   time.Time // last good answer
}

// View is one node's membership view: which members are alive as this
// node's own probes say. Create it with NewView; it is not safe for
// concurrent use.
type View struct {
	self   Member
	member bool
	rules  Rules
	peers  []*peer             // sorted by address
	dead   map[string]struct{} // incarnations gone for good (lookups only)

	contacted   bool
	lastContact time.Time
}

// NewView returns the view of node self (a member when member is true:
// it is in its own topology; a client is not) that probes endpoints (the
// backends' addresses; self's own is skipped).
func NewView(self Member, member bool, endpoints []string, r Rules) *View {
	v := &View{self: self, member: member, rules: r, dead: make(map[string]struct{})}
	for _, a := range endpoints {
		if a != self.Address && v.find(a) == nil {
			v.peers = append(v.peers, &peer{addr: a})
		}
	}
	slices.SortFunc(v.peers, func(a, b *peer) int { return strings.Compare(a.addr, b.addr) })
	return v
}

func (v *View) find(addr string) *peer {
	for _, p := range v.peers {
		if p.addr == addr {
			return p
		}
	}
	return nil
}

// Step takes one input (Start, Probed, ProbedBy, effect.Fired) at now and
// returns the effects: Probe, effect.Timer, and Changed when the alive
// members changed.
func (v *View) Step(now time.Time, in any) []effect.Effect {
	var out []effect.Effect
	var ch change
	switch m := in.(type) {
	case Start:
		out = v.probeAll(now, out)
	case ProbedBy:
		if m.Member.ID != "" && m.Member.ID != v.self.ID {
			v.contacted, v.lastContact = true, now
		}
	case Probed:
		out = v.probed(now, m, &ch, out)
	case effect.Fired:
		if m.Name == TimerRefresh {
			v.expire(now, &ch)
			out = v.probeAll(now, out)
		} else if addr, ok := strings.CutPrefix(m.Name, followUpPrefix); ok && v.find(addr) != nil {
			out = append(out, Probe{Addr: addr})
		}
	}
	if ch.changed() {
		out = append(out, Changed{Members: v.Members(), Joined: sortMembers(ch.joined), Left: sortMembers(ch.left)})
	}
	return out
}

func (v *View) probeAll(now time.Time, out []effect.Effect) []effect.Effect {
	for _, p := range v.peers {
		out = append(out, Probe{Addr: p.addr})
	}
	return append(out, effect.Timer{Name: TimerRefresh, At: now.Add(v.rules.Refresh)})
}

type change struct{ joined, left []Member }

func (c change) changed() bool { return len(c.joined) > 0 || len(c.left) > 0 }

func (v *View) probed(now time.Time, r Probed, ch *change, out []effect.Effect) []effect.Effect {
	p := v.find(r.Addr)
	if p == nil {
		return out
	}
	switch r.Result {
	case ProbeOK:
		v.answered(now, p, r.Member, ch)
	case ProbeLeaving:
		v.kill(r.Member.ID)
		v.kill(p.node.ID)
		v.down(p, ch)
	case ProbeFailed:
		p.failures++
		if p.alive && p.failures >= v.rules.Failures {
			v.down(p, ch)
		} else if p.alive {
			out = append(out, effect.Timer{Name: followUpPrefix + p.addr, At: now.Add(v.rules.FollowUp)})
		}
	case ProbeSilent:
		// Counted through silence only.
	}
	v.expire(now, ch)
	return out
}

func (v *View) answered(now time.Time, p *peer, m Member, ch *change) {
	if m.ID == "" || m.ID == v.self.ID {
		return
	}
	v.contacted, v.lastContact = true, now
	if p.node.ID != "" && p.node.ID != m.ID {
		// A new incarnation on the same endpoint: the old one is gone for
		// good.
		v.down(p, ch)
		v.kill(p.node.ID)
	}
	p.failures, p.lastOK, p.node = 0, now, m
	if _, dead := v.dead[m.ID]; dead {
		if p.alive {
			v.down(p, ch)
		}
		return
	}
	if !p.alive {
		p.alive = true
		ch.joined = append(ch.joined, m)
	}
}

func (v *View) kill(id string) {
	if id != "" && id != v.self.ID {
		v.dead[id] = struct{}{}
	}
}

func (v *View) down(p *peer, ch *change) {
	if p.alive {
		p.alive = false
		ch.left = append(ch.left, p.node)
	}
}

// expire takes down the members silent for Rules.Silence.
func (v *View) expire(now time.Time, ch *change) {
	for _, p := range v.peers {
		if p.alive && now.Sub(p.lastOK) >= v.rules.Silence {
			v.down(p, ch)
		}
	}
}

// Members returns the alive members sorted by id, self first included
// when this node is a member.
func (v *View) Members() []Member {
	out := make([]Member, 0, len(v.peers)+1)
	if v.member {
		out = append(out, v.self)
	}
	for _, p := range v.peers {
		if p.alive && !slices.ContainsFunc(out, func(m Member) bool { return m.ID == p.node.ID }) {
			out = append(out, p.node)
		}
	}
	return sortMembers(out)
}

// Alive reports whether the member at addr is in the view (self: when a
// member).
func (v *View) Alive(addr string) bool {
	if addr == v.self.Address {
		return v.member
	}
	p := v.find(addr)
	return p != nil && p.alive
}

// Owner returns where this node's view places kind/identity ([Owner] over
// [View.Members]).
func (v *View) Owner(kind, identity string) string { return Owner(v.Members(), kind, identity) }

// Owns reports whether this node's view places kind/identity on itself:
// the master's lease guard (cluster/node's masterOwnership).
func (v *View) Owns(kind, identity string) bool {
	o := v.Owner(kind, identity)
	return o != "" && o == v.self.Address
}

// CutOff reports whether this node has heard from no other node for
// Rules.Silence although it did before: the others have taken it down by
// now, and it lets go of what only one node may hold.
func (v *View) CutOff(now time.Time) bool {
	return v.contacted && now.Sub(v.lastContact) >= v.rules.Silence
}

func sortMembers(ms []Member) []Member {
	slices.SortFunc(ms, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return ms
}
