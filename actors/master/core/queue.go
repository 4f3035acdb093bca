package core

// queue is a min-heap of pending entries by (key, order): a type's timer
// heap (key: readyAt) or one of its lanes (key: readyAt less the priority's
// head start, see WorkState.laneKey). Each item carries its entry's key, so that sifting
// compares keys in the heap's own array rather than loading an entry per
// comparison (a pop from a queue of a million works otherwise touches about
// forty scattered entries); only the entries that move are written, to keep
// their heapIdx. A queued entry's readyAt and order never change.
type queue []qitem

type qitem struct {
	key, order int64
	e          *entry
}

// before reports whether a is handed out before b.
func (a qitem) before(b qitem) bool {
	return a.key < b.key || a.key == b.key && a.order < b.order
}

// heapOf returns the queue of es keyed by key, built bottom-up: a restore
// adds a snapshot's pending works in no useful order, and sifting each one
// in as it comes cost more than the rest of decoding them.
func heapOf(es []*entry, key func(e *entry) int64) queue {
	q := make(queue, len(es))
	for i, e := range es {
		q[i] = qitem{key: key(e), order: e.order, e: e}
		e.heapIdx = int32(i)
	}
	for i := len(q)/2 - 1; i >= 0; i-- {
		q.down(i, q[i])
	}
	return q
}

// push adds e by its ready time (the timer heap's order).
func (q *queue) push(e *entry) { q.pushKey(e, e.readyAt) }

// pushKey adds e by key.
func (q *queue) pushKey(e *entry, key int64) {
	*q = append(*q, qitem{key: key, order: e.order, e: e})
	q.up(len(*q)-1, (*q)[len(*q)-1])
}

// remove takes out the item at i (an entry's heapIdx).
func (q *queue) remove(i int) {
	h := *q
	n := len(h) - 1
	h[i].e.heapIdx = -1
	last := h[n]
	h[n] = qitem{}
	*q = h[:n]
	if i == n {
		return
	}
	if i > 0 && last.before(h[(i-1)/2]) {
		q.up(i, last)
	} else {
		q.down(i, last)
	}
}

// up places it, bound for the hole at i, where the heap order allows on
// the way to the root.
func (q queue) up(i int, it qitem) {
	for i > 0 {
		p := (i - 1) / 2
		if !it.before(q[p]) {
			break
		}
		q.set(i, q[p])
		i = p
	}
	q.set(i, it)
}

// down places it, bound for the hole at i, where the heap order allows on
// the way to the leaves.
func (q queue) down(i int, it qitem) {
	n := len(q)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && q[r].before(q[c]) {
			c = r
		}
		if !q[c].before(it) {
			break
		}
		q.set(i, q[c])
		i = c
	}
	q.set(i, it)
}

func (q queue) set(i int, it qitem) {
	q[i] = it
	it.e.heapIdx = int32(i)
}
