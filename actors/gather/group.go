package gather

// Group decides which calls travel together, and when: the pure half of
// a [Gatherer]. The first call goes at once, alone; those that arrive
// while maxInFlight groups are on their way wait for one of them to be
// answered and then go together, the way a journal's group commit gathers
// the writes that arrive during the previous fsync. A call therefore
// never waits for a timer, and waits at all only when the receiver is
// busy.
//
// A Group holds items of type T with their encoded sizes. It is a value
// without goroutines or clocks; its user serialises the calls.
type Group[T any] struct {
	maxInFlight int
	maxItems    int
	maxBytes    int

	queue    []sized[T]
	inFlight int
}

type sized[T any] struct {
	item T
	size int
}

// NewGroup returns a Group that keeps at most maxInFlight groups on their
// way at once, each of at most maxItems items and maxBytes bytes (an item
// larger than maxBytes travels alone). Values below 1 are taken as 1.
func NewGroup[T any](maxInFlight, maxItems, maxBytes int) *Group[T] {
	return &Group[T]{maxInFlight: max(maxInFlight, 1), maxItems: max(maxItems, 1), maxBytes: max(maxBytes, 1)}
}

// Add queues item, of size encoded bytes. It returns the items to send now
// as one group (nil: the item waits for an answer to a group in flight).
// Every group returned must be reported with Answered once its answer
// came, or its ask failed.
func (g *Group[T]) Add(item T, size int) []T {
	g.queue = append(g.queue, sized[T]{item, size})
	return g.next()
}

// Answered reports that a group sent before was answered (or its ask
// failed): it returns the next group to send (nil: none waits), which
// must be reported the same way.
func (g *Group[T]) Answered() []T {
	if g.inFlight > 0 {
		g.inFlight--
	}
	return g.next()
}

// Remove takes out of the queue the waiting items for which drop is true
// (their callers left before they were sent) and returns how many it
// removed. Items already sent are out of the Group's hands.
func (g *Group[T]) Remove(drop func(T) bool) int {
	kept := g.queue[:0]
	n := 0
	for _, s := range g.queue {
		if drop(s.item) {
			n++
			continue
		}
		kept = append(kept, s)
	}
	clear(g.queue[len(kept):])
	g.queue = kept
	return n
}

// Waiting is how many items wait in the queue; InFlight how many groups
// are on their way.
func (g *Group[T]) Waiting() int { return len(g.queue) }

// InFlight is how many groups were sent and not yet answered.
func (g *Group[T]) InFlight() int { return g.inFlight }

// next takes the next group off the queue when one may go.
func (g *Group[T]) next() []T {
	if len(g.queue) == 0 || g.inFlight >= g.maxInFlight {
		return nil
	}
	n, bytes := 0, 0
	for n < len(g.queue) && n < g.maxItems {
		s := g.queue[n].size
		if n > 0 && bytes+s > g.maxBytes {
			break
		}
		bytes += s
		n++
	}
	out := make([]T, n)
	for i := range n {
		out[i] = g.queue[i].item
	}
	rest := copy(g.queue, g.queue[n:])
	clear(g.queue[rest:])
	g.queue = g.queue[:rest]
	g.inFlight++
	return out
}
