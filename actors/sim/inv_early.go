package sim

import (
	"hash/fnv"
	"time"
)

// NeverEarly checks issue 37's delayed jobs: a work with a run_at reaches
// a worker only once the clock of some node reads its run_at (the master
// that handed it out reads its own clock; nodes' clocks differ by their
// offsets and drifts, so the check takes the one furthest ahead: a
// violation is a hand-out before its time on every clock).
type NeverEarly struct{}

// Name identifies the invariant.
func (NeverEarly) Name() string { return "never_early" }

func (i NeverEarly) handOut(h *history, j *jobRec, sw sentWork) {
	w := sw.work
	ra := w.GetRunAtUnixNano()
	if ra == 0 {
		return
	}
	var latest time.Time
	for _, n := range h.w.nodes {
		if l := n.local(h.w.e.now); l.After(latest) {
			latest = l
		}
	}
	if latest.UnixNano() < ra {
		h.violate(i, j.id, "", "handed out %v before its run_at on every node's clock", time.Duration(ra-latest.UnixNano()))
	}
}

// delayOf is the delay the simulated callers give work id: one work in
// five waits 10 ms to 2 s. Derived from the id, not drawn from the run's
// random source, so that the other choices of a seed stay as they were.
func delayOf(id string) time.Duration {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	v := h.Sum32()
	if v%5 != 0 {
		return 0
	}
	return 10*time.Millisecond + time.Duration(v/5%1990)*time.Millisecond
}
