package sim

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"
)

// epoch0 is virtual time zero on the true (journal) clock: a fixed instant,
// so that a seed's trace does not depend on when it runs.
var epoch0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// event is one scheduled happening. Events fire in (at, seq) order: seq is
// the insertion order, so two events at one instant keep the order in which
// they were scheduled and the schedule never depends on the heap's layout.
type event struct {
	at  time.Duration // true virtual time since epoch0
	seq uint64
	fn  func()
}

// eventQueue is a binary min-heap of events by value (no allocation per
// event beyond its closure).
type eventQueue []event

func (q eventQueue) less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}

func (q *eventQueue) push(ev event) {
	*q = append(*q, ev)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *eventQueue) pop() event {
	h := *q
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = event{}
	h = h[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

// engine is the simulator's loop: one goroutine, virtual time, one seeded
// random source from which every random choice is drawn in the order the
// events ask for them, so a seed fixes the whole schedule.
type engine struct {
	now    time.Duration
	seq    uint64
	q      eventQueue
	rng    *rand.Rand
	trace  io.Writer // nil: tracing is off and costs one nil check per line
	events int       // events fired so far
	buf    []byte    // the trace line being built
}

func newEngine(seed uint64, trace io.Writer) *engine {
	return &engine{
		rng:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		trace: trace,
	}
}

// at schedules fn at true virtual time t (never before now).
func (e *engine) at(t time.Duration, fn func()) {
	if t < e.now {
		t = e.now
	}
	e.seq++
	e.q.push(event{at: t, seq: e.seq, fn: fn})
}

// after schedules fn d after now.
func (e *engine) after(d time.Duration, fn func()) { e.at(e.now+d, fn) }

// step fires the next event; it reports false when none is left or the
// next is later than until.
func (e *engine) step(until time.Duration) bool {
	if len(e.q) == 0 || e.q[0].at > until {
		return false
	}
	ev := e.q.pop()
	e.now = ev.at
	e.events++
	ev.fn()
	return true
}

// tracing reports whether trace lines are wanted: callers skip building
// their arguments when not.
func (e *engine) tracing() bool { return e.trace != nil }

// tracef writes one trace line: the virtual time, the node and the text.
func (e *engine) tracef(node, format string, args ...any) {
	if e.trace == nil {
		return
	}
	b := e.buf[:0]
	b = strconv.AppendInt(b, int64(e.now/time.Microsecond), 10)
	b = append(b, "us "...)
	b = append(b, node...)
	b = append(b, ' ')
	b = fmt.Appendf(b, format, args...)
	b = append(b, '\n')
	e.buf = b
	_, _ = e.trace.Write(b)
}

// chance draws one Bernoulli trial with probability p. A zero p draws
// nothing, so that turning a fault off does not shift the other draws of
// the schedule more than it must.
func (e *engine) chance(p float64) bool {
	if p <= 0 {
		return false
	}
	return e.rng.Float64() < p
}

// between draws a duration uniformly in [lo, hi].
func (e *engine) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(e.rng.Int64N(int64(hi-lo)+1))
}

// intn draws an int in [0, n).
func (e *engine) intn(n int) int {
	if n <= 1 {
		return 0
	}
	return e.rng.IntN(n)
}
