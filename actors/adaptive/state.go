package adaptive

import (
	"math"
	"time"
)

// Observation is what a policy learns from one completed job. The caller
// fills it at completion time, before the job leaves the in-flight count.
type Observation struct {
	// Arrival is when the job entered the queue (the seed's Arrival).
	Arrival time.Time
	// Started is when the job left the queue and began to run.
	Started time.Time
	// InFlight is the number of jobs running at completion, this one
	// included (the seed reads its counter before decrementing it).
	InFlight int
	// Limit is the level in force when the job completed.
	Limit int
	// Queued is the number of jobs waiting for a slot at completion. Zero
	// means nobody waited: the work is app-limited, not limit-bound.
	Queued int
	// CPU is the CPU utilisation in [0, 1] if the caller measures it, or a
	// negative number (or NaN) when unknown.
	CPU float64
}

// cpuKnown reports whether the observation carries a CPU reading.
func (o Observation) cpuKnown() bool { return o.CPU >= 0 && !math.IsNaN(o.CPU) }

// Policy is a pure tuner: it folds one observation at time now into its state
// and returns the level (the number of jobs allowed in flight) to use next.
// It reads no clock and no global random source, starts no goroutine and is
// not safe for concurrent use; the scheduler actor and the Limiter own one
// each. The same configuration, seed and inputs always give the same levels.
type Policy interface {
	// Observe records a completion and returns the new level, within the
	// configured [MinLimit, MaxLimit].
	Observe(obs Observation, now time.Time) int
	// Limit returns the current level without changing it.
	Limit() int
}

// ArrivalObserver is implemented by policies that also decide when jobs
// arrive. The seed adjusts its level on every message, batches included; its
// policy implements this so the port behaves exactly like the seed.
type ArrivalObserver interface {
	// Arrived is called once per batch pushed and returns the new level.
	Arrived(now time.Time) int
}

// Ticket identifies a started job to its Core. Keep it and hand it back to
// Core.Done (or Core.Abort) when the job finishes.
type Ticket struct {
	// Seq is the job's sequence number, unique per Core.
	Seq uint64
	// Arrival is when the job was pushed.
	Arrival time.Time
	// Started is when the job was started.
	Started time.Time
}

// Start is a job the caller must start now.
type Start[J any] struct {
	// Job is the pushed value.
	Job J
	// Ticket goes back to Done when the job finishes.
	Ticket Ticket
}

// Stats is a snapshot of a Core.
type Stats struct {
	// Queue is the number of jobs waiting.
	Queue int
	// InFlight is the number of jobs started and not yet done.
	InFlight int
	// Limit is the current level (the seed's Parallelism).
	Limit int
	// Completed counts Done calls.
	Completed uint64
}

type queued[J any] struct {
	job     J
	seq     uint64
	arrival time.Time
}

// Core is the scheduler's pure state: a FIFO queue of jobs, the count in
// flight and the policy. Push and Done return the jobs to start now; the
// caller runs them and reports each completion with Done. Core reads no clock
// (every method takes now) and is not safe for concurrent use.
//
// The returned slices are reused by the next call: consume them first.
type Core[J any] struct {
	policy    Policy
	arrivals  ArrivalObserver // nil unless policy implements it
	queue     []queued[J]
	head      int
	inFlight  int
	limit     int
	seq       uint64
	completed uint64
	out       []Start[J]
}

// NewCore returns an empty Core driven by p.
func NewCore[J any](p Policy) *Core[J] {
	c := &Core[J]{policy: p, limit: max(1, p.Limit())}
	c.arrivals, _ = p.(ArrivalObserver)
	return c
}

// Push queues one job at time now and returns its sequence number and the
// jobs to start now (possibly including it).
func (c *Core[J]) Push(now time.Time, job J) (uint64, []Start[J]) {
	c.enqueue(now, job)
	seq := c.seq
	c.arrived(now)
	return seq, c.dispatch(now)
}

// PushBatch queues jobs in order, as one arrival, and returns the jobs to
// start now.
func (c *Core[J]) PushBatch(now time.Time, jobs []J) []Start[J] {
	for _, j := range jobs {
		c.enqueue(now, j)
	}
	c.arrived(now)
	return c.dispatch(now)
}

func (c *Core[J]) enqueue(now time.Time, job J) {
	c.seq++
	c.queue = append(c.queue, queued[J]{job: job, seq: c.seq, arrival: now})
}

func (c *Core[J]) arrived(now time.Time) {
	if c.arrivals != nil {
		c.limit = max(1, c.arrivals.Arrived(now))
	}
}

// Done records the completion of the job with ticket t at time now, with the
// CPU utilisation if known (negative otherwise), asks the policy for the next
// level and returns the jobs to start now.
func (c *Core[J]) Done(now time.Time, t Ticket, cpu float64) []Start[J] {
	obs := Observation{
		Arrival:  t.Arrival,
		Started:  t.Started,
		InFlight: c.inFlight,
		Limit:    c.limit,
		Queued:   c.Len(),
		CPU:      cpu,
	}
	c.limit = max(1, c.policy.Observe(obs, now))
	c.completed++
	if c.inFlight > 0 {
		c.inFlight--
	}
	return c.dispatch(now)
}

// Abort frees the slot of a started job without teaching the policy
// anything (the job was cancelled before it ran) and returns the jobs to
// start now.
func (c *Core[J]) Abort(now time.Time, _ Ticket) []Start[J] {
	if c.inFlight > 0 {
		c.inFlight--
	}
	return c.dispatch(now)
}

// Cancel removes the queued job with sequence number seq. It reports false
// when the job is not queued (it has started or was never pushed).
func (c *Core[J]) Cancel(seq uint64) bool {
	for i := c.head; i < len(c.queue); i++ {
		if c.queue[i].seq == seq {
			copy(c.queue[i:], c.queue[i+1:])
			var zero queued[J]
			c.queue[len(c.queue)-1] = zero
			c.queue = c.queue[:len(c.queue)-1]
			return true
		}
	}
	return false
}

// Drain removes every queued job and returns them in order.
func (c *Core[J]) Drain() []J {
	out := make([]J, 0, c.Len())
	for i := c.head; i < len(c.queue); i++ {
		out = append(out, c.queue[i].job)
	}
	clear(c.queue)
	c.queue, c.head = c.queue[:0], 0
	return out
}

// Len returns the number of queued jobs.
func (c *Core[J]) Len() int { return len(c.queue) - c.head }

// Stats returns the queue length, the count in flight and the level.
func (c *Core[J]) Stats() Stats {
	return Stats{Queue: c.Len(), InFlight: c.inFlight, Limit: c.limit, Completed: c.completed}
}

func (c *Core[J]) dispatch(now time.Time) []Start[J] {
	c.out = c.out[:0]
	for c.inFlight < c.limit && c.head < len(c.queue) {
		q := c.queue[c.head]
		var zero queued[J]
		c.queue[c.head] = zero
		c.head++
		c.inFlight++
		c.out = append(c.out, Start[J]{Job: q.job, Ticket: Ticket{Seq: q.seq, Arrival: q.arrival, Started: now}})
	}
	if c.head == len(c.queue) {
		c.queue, c.head = c.queue[:0], 0
	} else if c.head > 1024 && c.head*2 > len(c.queue) {
		n := copy(c.queue, c.queue[c.head:])
		c.queue, c.head = c.queue[:n], 0
	}
	return c.out
}
