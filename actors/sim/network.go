package sim

import "time"

// network models the links between nodes: a base delay per directed link
// (drawn at the start), jitter, loss, duplication, reordering (a message
// held back long enough to arrive after later ones) and partitions, which
// cut directed links: both ways for a symmetric one, one way for a
// one-way one.
type network struct {
	n    int
	base []time.Duration // [from*n+to]
	cut  []bool          // [from*n+to]: messages from -> to are lost

	fifo []time.Duration // [from*n+to]: the last arrival of a connection's call

	loss, dup, reorder             float64
	dropped, duplicated, reordered int
}

func newNetwork(e *engine, n int, f FaultMix) *network {
	nw := &network{n: n, base: make([]time.Duration, n*n), cut: make([]bool, n*n), fifo: make([]time.Duration, n*n),
		loss: f.Loss, dup: f.Duplicate, reorder: f.Reorder}
	for i := range nw.base {
		nw.base[i] = e.between(200*time.Microsecond, 2*time.Millisecond)
	}
	return nw
}

// transmit carries something from one node to another: deliver runs on to
// after the link's delay, unless the link is cut or the message is lost;
// a duplicated message is delivered twice.
func (w *world) transmit(from, to *node, deliver func()) bool {
	nw := w.net
	i := from.idx*nw.n + to.idx
	if nw.cut[i] {
		nw.dropped++
		return false
	}
	if w.e.chance(nw.loss) {
		nw.dropped++
		return false
	}
	copies := 1
	if w.e.chance(nw.dup) {
		nw.duplicated++
		copies = 2
	}
	for range copies {
		d := nw.base[i] + w.e.between(0, nw.base[i])
		if w.e.chance(nw.reorder) {
			nw.reordered++
			d += w.e.between(nw.base[i], 20*nw.base[i])
		}
		w.onNode(to, w.e.now+d, deliver)
	}
	return true
}

// partition cuts the links between the two sides: both ways, or only
// from a to b when oneWay.
func (nw *network) partition(a, b []int, oneWay bool) {
	for _, x := range a {
		for _, y := range b {
			nw.cut[x*nw.n+y] = true
			if !oneWay {
				nw.cut[y*nw.n+x] = true
			}
		}
	}
}

// heal restores every link.
func (nw *network) heal() { clear(nw.cut) }

// rpc carries a call over a connection (to or from the journal): never
// lost, duplicated or reordered, but cut by a partition (it reports false
// and the caller times out).
func (w *world) rpc(from, to *node, deliver func()) bool {
	nw := w.net
	i := from.idx*nw.n + to.idx
	if nw.cut[i] {
		return false
	}
	t := max(w.e.now+nw.base[i]+w.e.between(0, nw.base[i]/2), nw.fifo[i])
	nw.fifo[i] = t
	w.onNode(to, t, deliver)
	return true
}
