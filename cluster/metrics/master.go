package metrics

import (
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/messages"
)

// MasterObserver returns the master.Observer that feeds these metrics; give
// it to the node's master with master.WithObserver.
func (m *Metrics) MasterObserver() master.Observer { return masterObserver{m} }

type masterObserver struct{ m *Metrics }

var _ master.Observer = masterObserver{}

func (o masterObserver) Recovered(_ string, epoch int64) {
	o.m.epoch.Set(float64(epoch))
	o.m.activations.Inc()
	// Acceptance times of an earlier activation may belong to works that
	// finished elsewhere meanwhile: start afresh.
	o.m.mu.Lock()
	clear(o.m.acceptedAt)
	o.m.mu.Unlock()
}

func (o masterObserver) Durable(_ string, ev proto.Message, jobType string) {
	m, jt := o.m, jobLabel(jobType)
	switch ev := ev.(type) {
	case *messages.WorkAccepted:
		m.accepted.WithLabelValues(jt).Inc()
		m.mu.Lock()
		if len(m.acceptedAt) < maxTracked {
			m.acceptedAt[ev.GetWork().GetWorkId()] = ev.GetAtUnixNano()
		}
		m.mu.Unlock()
	case *messages.WorkCompleted:
		m.completed.WithLabelValues(jt).Inc()
		if at, ok := m.takeAccepted(ev.GetWorkId()); ok && ev.GetAtUnixNano() >= at {
			m.submitResult.Observe(float64(ev.GetAtUnixNano()-at) / 1e9)
		}
	case *messages.WorkerFailed:
		if ev.GetCancelled() {
			// The caller went away: not a failure of the job.
			m.cancelled.WithLabelValues(jt).Inc()
			m.takeAccepted(ev.GetWorkId())
			break
		}
		m.failed.WithLabelValues(jt).Inc()
		if ev.GetDead() {
			m.died(jt, ev.GetWorkId())
		}
	case *messages.WorkerTimedOut:
		m.failed.WithLabelValues(jt).Inc()
		if ev.GetDead() {
			m.died(jt, ev.GetWorkId())
		}
	case *messages.WorkExpired:
		m.died(jt, ev.GetWorkId())
	}
}

func (m *Metrics) died(jobType, id string) {
	m.dead.WithLabelValues(jobType).Inc()
	m.takeAccepted(id)
}

func (m *Metrics) takeAccepted(id string) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.acceptedAt[id]
	delete(m.acceptedAt, id)
	return at, ok
}

// Counts records a master's counts. The queue and worker gauges cover every
// master this node hosts (one per shard): a job is in exactly one shard, so
// the queue is the sum; every worker registers with every shard, so the
// workers are those of the master that knows most, and busy is the sum of
// the shards' busy workers, capped at that (a worker holding work of two
// shards counts twice below the cap).
func (o masterObserver) Counts(stream string, c master.Counts, idle, busy int) {
	o.m.mu.Lock()
	last, seen := o.m.byStream[stream]
	o.m.byStream[stream] = streamCounts{c: c, idle: idle, busy: busy}
	o.m.mu.Unlock()
	// The master's hold counts are cumulative per activation: add what
	// grew, or all of it when a new activation started afresh.
	grown := func(now, before uint64) float64 {
		if !seen || now < before {
			return float64(now)
		}
		return float64(now - before)
	}
	o.m.handoutsHeld.WithLabelValues("concurrency_limit").Add(grown(c.HeldByLimit, last.c.HeldByLimit))
	o.m.handoutsHeld.WithLabelValues("key_rate").Add(grown(c.HeldByRate, last.c.HeldByRate))
	o.m.setQueue()
}

// Stopped forgets the counts of a master that no longer runs on this node.
func (o masterObserver) Stopped(stream string) {
	o.m.mu.Lock()
	delete(o.m.byStream, stream)
	o.m.mu.Unlock()
	o.m.setQueue()
}

// setQueue sets the queue and worker gauges from byStream.
func (m *Metrics) setQueue() {
	m.mu.Lock()
	var sum master.Counts
	total, busyAll := 0, 0
	for _, sc := range m.byStream {
		sum.Pending += sc.c.Pending
		sum.Delayed += sc.c.Delayed
		sum.InProgress += sc.c.InProgress
		sum.Done += sc.c.Done
		sum.Dead += sc.c.Dead
		sum.Cancelled += sc.c.Cancelled
		sum.KeysHeld += sc.c.KeysHeld
		total = max(total, sc.idle+sc.busy)
		busyAll += sc.busy
	}
	m.mu.Unlock()
	busyAll = min(busyAll, total)
	q := m.queue
	q.WithLabelValues("pending").Set(float64(sum.Pending))
	q.WithLabelValues("delayed").Set(float64(sum.Delayed)) // of pending
	q.WithLabelValues("running").Set(float64(sum.InProgress))
	q.WithLabelValues("done").Set(float64(sum.Done))
	q.WithLabelValues("dead").Set(float64(sum.Dead))
	q.WithLabelValues("cancelled").Set(float64(sum.Cancelled))
	m.keysHeld.Set(float64(sum.KeysHeld))
	m.workers.WithLabelValues("idle").Set(float64(total - busyAll))
	m.workers.WithLabelValues("busy").Set(float64(busyAll))
}

func (o masterObserver) Permit(jobType string, granted bool) {
	outcome := "granted"
	if !granted {
		outcome = "refused"
	}
	o.m.permits.WithLabelValues(jobLabel(jobType), outcome).Inc()
}
