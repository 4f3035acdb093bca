package core

// ring is a FIFO queue on a growable ring buffer: push at the back, pop at
// the front, both O(1) amortised, with no allocation in steady state.
type ring[M any] struct {
	buf  []M
	head int // index of the front element
	n    int // number of elements
}

func (r *ring[M]) len() int { return r.n }

func (r *ring[M]) push(m M) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)%len(r.buf)] = m
	r.n++
}

func (r *ring[M]) pop() M {
	var zero M
	m := r.buf[r.head]
	r.buf[r.head] = zero // let the garbage collector have it
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return m
}

func (r *ring[M]) grow() {
	size := max(8, 2*len(r.buf))
	buf := make([]M, size)
	for i := range r.n {
		buf[i] = r.buf[(r.head+i)%len(r.buf)]
	}
	r.buf, r.head = buf, 0
}

// removeIf drops the elements drop reports, keeping the others in order,
// and returns how many it dropped.
func (r *ring[M]) removeIf(drop func(M) bool) int {
	kept, gone := 0, 0
	var zero M
	for i := range r.n {
		m := r.buf[(r.head+i)%len(r.buf)]
		if drop(m) {
			gone++
			continue
		}
		r.buf[(r.head+kept)%len(r.buf)] = m
		kept++
	}
	for i := kept; i < r.n; i++ {
		r.buf[(r.head+i)%len(r.buf)] = zero
	}
	r.n = kept
	return gone
}
