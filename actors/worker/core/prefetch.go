package core

import "time"

// readAhead is the worker's pure read-ahead policy: how many works it holds
// beyond its window, queued locally, so that its executors do not idle
// while a request for more travels to the master and back. It has no
// actors and no clock: the shell passes the times in.
//
// A slot that turns a job over every job seconds needs rtt/job more works
// to stay busy while a request is answered in rtt seconds, and the window's
// slots together need window*rtt/job. So jobs longer than window round
// trips get none, which keeps the sample's pull (work goes to a free slot,
// never waits behind a busy worker while another one is idle), and jobs
// far shorter than the round trip get up to max. Until both times have
// been seen the depth is 0: the worker pulls as the sample does.
type readAhead struct {
	max    int // upper bound on the depth; 0 = never read ahead
	window int
	job    ewma  // how long a slot is taken per job (gates included)
	rtt    ewma  // from a request to the first work after it
	asked  int64 // when the oldest unanswered request left (Unix ns); 0 = none
}

// Bounds of one sample. A request answered after a master's failover says
// little about the next one and would take many samples to forget; a
// job's time is kept as measured up to an hour, because a long job taken
// for a short one would park works behind it (and the average forgets it
// within a few dozen short jobs).
const (
	maxRTTSample = int64(time.Second)
	maxJobSample = int64(time.Hour)
)

// ewma is an exponentially weighted moving average of durations in ns, a
// new sample weighing 1/8.
type ewma struct {
	v  int64
	ok bool
}

func (e *ewma) add(d, limit int64) {
	d = min(max(d, 0), limit)
	if !e.ok {
		e.v, e.ok = d, true
		return
	}
	e.v += (d - e.v) / 8
}

// depth returns how many works to hold beyond the window now.
func (r *readAhead) depth() int {
	if r.max == 0 || !r.job.ok || !r.rtt.ok {
		return 0
	}
	job := max(r.job.v, 1)
	// window*rtt/job, rounded down: a fraction of a work is no reason to
	// park one behind a busy slot. Compared before multiplying, so that
	// no product overflows.
	if r.rtt.v >= job*int64(r.max) {
		return r.max
	}
	return min(int(int64(r.window)*r.rtt.v/job), r.max)
}

// threshold is how much room the worker waits for before it asks again
// while it still holds work: a depth's worth, so that a request asks for
// many works at once instead of one per finished job. It is 1 without
// read-ahead, where the worker asks as soon as a slot is free.
func (r *readAhead) threshold() int { return max(r.depth(), 1) }

// jobDone records that a slot was taken for d ns by one job.
func (r *readAhead) jobDone(d int64) { r.job.add(d, maxJobSample) }

// requested records a request sent at now. Only the oldest unanswered one
// is timed: a later one is answered no sooner.
func (r *readAhead) requested(now int64) {
	if r.asked == 0 {
		r.asked = now
	}
}

// delivered records work received at now, the answer to the oldest
// unanswered request.
func (r *readAhead) delivered(now int64) {
	if r.asked != 0 {
		r.rtt.add(now-r.asked, maxRTTSample)
		r.asked = 0
	}
}

// nothingReady forgets the unanswered request: the master had no work for
// it (it says WorkIsReady once it has), so the wait was not a round trip.
func (r *readAhead) nothingReady() { r.asked = 0 }
