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

func (o masterObserver) Counts(_ string, c master.Counts, idle, busy int) {
	q := o.m.queue
	q.WithLabelValues("pending").Set(float64(c.Pending))
	q.WithLabelValues("running").Set(float64(c.InProgress))
	q.WithLabelValues("done").Set(float64(c.Done))
	q.WithLabelValues("dead").Set(float64(c.Dead))
	q.WithLabelValues("cancelled").Set(float64(c.Cancelled))
	o.m.workers.WithLabelValues("idle").Set(float64(idle))
	o.m.workers.WithLabelValues("busy").Set(float64(busy))
}

func (o masterObserver) Permit(jobType string, granted bool) {
	outcome := "granted"
	if !granted {
		outcome = "refused"
	}
	o.m.permits.WithLabelValues(jobLabel(jobType), outcome).Inc()
}
