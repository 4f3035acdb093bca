package metrics

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/foreman-actors/foreman/actors/schedule"
	"github.com/foreman-actors/foreman/actors/schedule/core"
)

// SchedulerObserver returns the scheduler's observer (schedule.Observer):
// ticks fired, missed (found due more than core.MissedAfter late, run or
// not), skipped (missed and not run), and the lateness of each fired tick's
// submission. Asking twice returns observers of the same instruments.
func (m *Metrics) SchedulerObserver() schedule.Observer {
	return schedulerObserver{
		fired:   register(m.reg, prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "schedule_ticks_fired_total", Help: "Ticks of periodic schedules whose job the master acknowledged."})),
		missed:  register(m.reg, prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "schedule_ticks_missed_total", Help: "Ticks found due more than a second late (run late, or skipped by the schedule's missed policy)."})),
		skipped: register(m.reg, prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "schedule_ticks_skipped_total", Help: "Missed ticks not run, by the schedule's missed policy."})),
		late: register(m.reg, prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "schedule_tick_lateness_seconds",
			Help:    "How long after a tick's time its job's submission started.",
			Buckets: []float64{.001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10, 60}})),
	}
}

// register registers c, or returns the collector already registered under
// its name.
func register[C prometheus.Collector](reg *prometheus.Registry, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err) // a name clash with another kind of metric: a programming error
	}
	return c
}

type schedulerObserver struct {
	fired, missed, skipped prometheus.Counter
	late                   prometheus.Histogram
}

func (o schedulerObserver) TickFired(_ string, late time.Duration) {
	o.fired.Inc()
	o.late.Observe(max(late, 0).Seconds())
	if late > core.MissedAfter {
		o.missed.Inc()
	}
}

func (o schedulerObserver) TicksSkipped(_ string, n int64) {
	o.skipped.Add(float64(n))
	o.missed.Add(float64(n))
}
