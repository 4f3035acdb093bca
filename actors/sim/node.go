package sim

import (
	"time"
)

// nodeKind is what a node runs.
type nodeKind int

const (
	kindBackend nodeKind = iota
	kindFrontend
	kindWorker
	kindJournal
)

// node is one simulated process: its clock, whether it runs, and its
// incarnation, which a crash bumps so that everything addressed to the old
// process (deliveries, timers, journal answers) is dropped.
type node struct {
	idx  int
	name string
	kind nodeKind

	up          bool
	pausedUntil time.Duration // true time; the node runs nothing before it
	inc         int

	// The node's clock reads epoch0 + offset + t*(1+drift) at true time t:
	// bounded drift, as NTP keeps real hosts' rates.
	offset time.Duration
	drift  float64
}

// local is the node's clock reading at true time t.
func (n *node) local(t time.Duration) time.Time {
	return epoch0.Add(n.offset + t + time.Duration(float64(t)*n.drift))
}

// trueAt is the first true time at which the node's clock reads l or
// later (rounded up: a timer must never fire before its time on the
// node's clock, or a core re-arms it for the same instant forever).
func (n *node) trueAt(l time.Time) time.Duration {
	d := l.Sub(epoch0) - n.offset
	t := time.Duration(float64(d) / (1 + n.drift))
	for n.local(t).Before(l) {
		t++
	}
	for t > 0 && !n.local(t-1).Before(l) {
		t--
	}
	return t
}

// onNode schedules fn to run on n at true time t, if the incarnation that
// scheduled it is still the one running then; a paused node runs it once
// the pause ends, in the order the events were due.
func (w *world) onNode(n *node, t time.Duration, fn func()) {
	inc := n.inc
	var run func()
	run = func() {
		if !n.up || n.inc != inc {
			return
		}
		if n.pausedUntil > w.e.now {
			w.e.at(n.pausedUntil, run)
			return
		}
		fn()
	}
	w.e.at(t, run)
}
