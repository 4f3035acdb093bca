package sim

import "time"

// membership is each node's view of which nodes are up: a crash or a long
// pause is noticed by each observer after its own detection delay, a
// restarted node is re-admitted after another, and a false suspicion marks
// a live node down in one observer's view for a while. Views are what the
// cores route and place by, so during a change two nodes may disagree.
type membership struct {
	w        *world
	n        int
	up       []bool // [observer*n+subject]
	version  []int  // per subject: bumped by each change of its true state
	min, max time.Duration
}

func newMembership(w *world, n int) *membership {
	m := &membership{w: w, n: n, up: make([]bool, n*n), version: make([]int, n),
		min: 20 * time.Millisecond, max: 300 * time.Millisecond}
	for i := range m.up {
		m.up[i] = true
	}
	return m
}

// sees reports whether o's view has x up.
func (m *membership) sees(o, x *node) bool { return o == x || m.up[o.idx*m.n+x.idx] }

// set changes o's view of x and tells o's roles.
func (m *membership) set(o, x *node, up bool) {
	i := o.idx*m.n + x.idx
	if m.up[i] == up {
		return
	}
	m.up[i] = up
	if m.w.e.tracing() {
		m.w.e.tracef(o.name, "view %s up=%v", x.name, up)
	}
	m.w.viewChanged(o)
}

// changed is called when x went down (crash, long pause) or came back:
// every observer updates its view after its own delay, unless x changed
// again meanwhile.
func (m *membership) changed(x *node, up bool) {
	m.version[x.idx]++
	v := m.version[x.idx]
	for _, o := range m.w.nodes {
		if o == x || o.kind == kindJournal {
			continue
		}
		m.w.e.after(m.w.e.between(m.min, m.max), func() {
			if m.version[x.idx] == v {
				m.set(o, x, up)
			}
		})
	}
}

// suspect marks x down in o's view for d, then re-admits it if its true
// state did not change meanwhile.
func (m *membership) suspect(o, x *node, d time.Duration) {
	v := m.version[x.idx]
	m.set(o, x, false)
	m.w.e.after(d, func() {
		if m.version[x.idx] == v {
			m.set(o, x, true)
		}
	})
}

// healAll makes every view true at once (the end of the faults).
func (m *membership) healAll() {
	for _, o := range m.w.nodes {
		if o.kind == kindJournal {
			continue
		}
		for _, x := range m.w.nodes {
			if x != o {
				m.set(o, x, x.up)
			}
		}
	}
}
