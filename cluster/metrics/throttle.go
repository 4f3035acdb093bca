package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/foreman-actors/foreman/actors/throttler"
)

// ThrottleObserver returns the observer of the throttlers (--rate) this node
// hosts: foreman_throttler_grants_total{job_type,outcome} (permits granted
// or refused), foreman_throttler_queue_permits{job_type} (permits waiting in
// the throttler's queue), foreman_throttler_rate_per_second{job_type} (its
// current rate) and foreman_throttler_strict{job_type} (1 in the strict
// sliding-window mode). A type's gauges are those of the last activation
// this node hosted. Calling it again returns an observer on the same
// instruments.
func (m *Metrics) ThrottleObserver() (throttler.PermitObserver, error) {
	var err error
	o := throttleObserver{}
	o.grants, err = registerOnce(m.reg, prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "throttler_grants_total",
		Help: "Permits the job type's throttler on this node granted (sent to a master shard once durable) or refused (its queue was full), by job type and outcome."},
		[]string{"job_type", "outcome"}))
	if err != nil {
		return nil, err
	}
	gauge := func(name, help string) (*prometheus.GaugeVec, error) {
		return registerOnce(m.reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, []string{"job_type"}))
	}
	if o.queue, err = gauge("throttler_queue_permits", "Permits the master shards asked for that wait in the job type's throttler on this node."); err != nil {
		return nil, err
	}
	if o.rate, err = gauge("throttler_rate_per_second", "The current rate of the job type's throttler on this node, in permits per second."); err != nil {
		return nil, err
	}
	if o.strict, err = gauge("throttler_strict", "1 if the job type's throttler on this node runs in the strict sliding-window mode, 0 in the timer mode."); err != nil {
		return nil, err
	}
	return o, nil
}

// registerOnce registers c, or returns the collector registered before it.
func registerOnce[C prometheus.Collector](reg *prometheus.Registry, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if prev, ok := are.ExistingCollector.(C); ok {
				return prev, nil
			}
		}
		return c, err
	}
	return c, nil
}

type throttleObserver struct {
	grants              *prometheus.CounterVec
	queue, rate, strict *prometheus.GaugeVec
}

func (o throttleObserver) Granted(jobType string, n int) {
	o.grants.WithLabelValues(jobType, "granted").Add(float64(n))
}

func (o throttleObserver) Refused(jobType string, n int) {
	o.grants.WithLabelValues(jobType, "refused").Add(float64(n))
}

func (o throttleObserver) Shape(jobType string, r throttler.Rate, strict bool, queued int) {
	o.queue.WithLabelValues(jobType).Set(float64(queued))
	o.rate.WithLabelValues(jobType).Set(float64(r.Calls) / r.Per.Seconds())
	s := 0.0
	if strict {
		s = 1
	}
	o.strict.WithLabelValues(jobType).Set(s)
}
