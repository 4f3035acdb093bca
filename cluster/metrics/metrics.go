package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/foreman-actors/foreman/actors/master"
)

// Namespace prefixes every Foreman metric.
const Namespace = "foreman"

// maxTracked bounds the acceptance times kept to measure submit -> result
// latency: past it, new works are not timed (the counters still count them).
const maxTracked = 100_000

// Metrics is one node's registry and the instruments Foreman feeds. It is
// safe for concurrent use. Make one per node with New.
type Metrics struct {
	reg *prometheus.Registry

	accepted, completed, failed, dead, cancelled *prometheus.CounterVec // job_type
	resultsConsumed                              *prometheus.CounterVec // job_type
	queue                                        *prometheus.GaugeVec   // state
	workers                                      *prometheus.GaugeVec   // state
	epoch                                        prometheus.Gauge
	activations                                  prometheus.Counter
	submitAck                                    *prometheus.HistogramVec // outcome
	submitResult                                 prometheus.Histogram
	commitEvents                                 prometheus.Histogram
	commitSeconds                                prometheus.Histogram
	commitErrors                                 prometheus.Counter
	permits                                      *prometheus.CounterVec // job_type, outcome
	handoutsHeld                                 *prometheus.CounterVec // reason
	keysHeld                                     prometheus.Gauge

	mu         sync.Mutex
	acceptedAt map[string]int64 // work id -> acceptance (Unix ns), see maxTracked
	mailboxes  map[string]*mailboxStats
	// byStream holds each master's last counts on this node: with shards a
	// node hosts several masters, and the queue gauges are their sums.
	byStream map[string]streamCounts
	// meterProvider exports OpenTelemetry instruments into reg (actors.go).
	meterProvider *sdkmetric.MeterProvider
}

// streamCounts is one master's last Counts report.
type streamCounts struct {
	c          master.Counts
	idle, busy int
}

// New returns a node's metrics on a registry of their own, with the Go
// runtime and process collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{reg: reg, acceptedAt: make(map[string]int64), mailboxes: make(map[string]*mailboxStats), byStream: make(map[string]streamCounts)}
	f := factory{reg}
	jobs := func(name, help string) *prometheus.CounterVec {
		return f.counterVec(name, help, "job_type")
	}
	m.accepted = jobs("jobs_accepted_total", "Jobs whose acceptance is durable in the journal, by job type (re-submissions count again).")
	m.completed = jobs("jobs_completed_total", "Jobs whose completion is durable, by job type.")
	m.failed = jobs("jobs_failed_total", "Failed or timed-out attempts whose record is durable, by job type (a job may fail several times).")
	m.dead = jobs("jobs_dead_total", "Jobs that became dead (out of attempts, a permanent failure or past their deadline), by job type.")
	m.cancelled = jobs("jobs_cancelled_total", "Jobs cancelled because their caller went away (not retried), by job type.")
	m.resultsConsumed = jobs("results_consumed_total", "Results this frontend node consumed from the cluster, by job type.")
	m.queue = f.gaugeVec("queue_jobs", "Jobs the master holds, by state: pending, running, done, dead and cancelled (ended jobs are retained for a while); delayed counts the pending ones that wait for their run_at or a retry backoff.", "state")
	m.handoutsHeld = f.counterVec("handouts_held_total", "Hand-outs the masters on this node held back by their concurrency key, by reason: concurrency_limit or key_rate (no per-key label: keys are unbounded; GET /limits and the job list show them). Counted as of each master's latest group commit.", "reason")
	m.handoutsHeld.WithLabelValues("concurrency_limit") // present at 0 from the start
	m.handoutsHeld.WithLabelValues("key_rate")
	m.keysHeld = f.gauge("keys_held", "Concurrency keys with jobs held back now by their limit or rate, summed over the masters on this node, as of their latest group commit.")
	m.workers = f.gaugeVec("workers", "Workers registered with the master, by state: idle or busy (holding work).", "state")
	m.epoch = f.gauge("master_epoch", "The journal epoch of the master this node hosts (0: none yet); a new epoch means a new activation.")
	m.activations = f.counter("master_activations_total", "Times a master recovered and served on this node (first start, failovers, re-syncs).")
	m.submitAck = f.histogramVec("submit_ack_seconds", "HTTP submission to durable acknowledgement (or error), on the frontend's API, by outcome: ok or error.",
		prometheus.ExponentialBuckets(0.0005, 2, 16), "outcome")
	m.submitResult = f.histogram("submit_result_seconds", "Acceptance to durable completion of a job, measured on the master's node from the events' times.",
		prometheus.ExponentialBuckets(0.001, 2, 20))
	m.commitEvents = f.histogram("journal_commit_batch_events", "Events written per journal group-commit transaction.",
		prometheus.ExponentialBuckets(1, 2, 12))
	m.commitSeconds = f.histogram("journal_commit_seconds", "Duration of a journal group-commit transaction.",
		prometheus.ExponentialBuckets(0.0001, 2, 16))
	m.commitErrors = f.counter("journal_commit_errors_total", "Journal group-commit transactions that failed with a store error.")
	m.permits = f.counterVec("throttler_permits_total", "Answers of the master's dispatch rate limiters, by job type and outcome: granted or refused (the job waits).",
		"job_type", "outcome")
	reg.MustRegister(&funcCollector{
		desc: prometheus.NewDesc(Namespace+"_actor_mailbox_messages",
			"Messages in the mailboxes of this node's long-lived actors (master, worker, frontend), by actor kind: waiting, plus the one being received.", []string{"actor"}, nil),
		read: m.mailboxLengths,
	})
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the node's registry, for collectors of your own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// ObserveSubmit records one HTTP submission's time to its answer.
func (m *Metrics) ObserveSubmit(ok bool, d time.Duration) {
	outcome := "ok"
	if !ok {
		outcome = "error"
	}
	m.submitAck.WithLabelValues(outcome).Observe(d.Seconds())
}

// ResultConsumed counts one result this node consumed.
func (m *Metrics) ResultConsumed(jobType string) {
	m.resultsConsumed.WithLabelValues(jobLabel(jobType)).Inc()
}

// jobLabel keeps the job_type label non-empty.
func jobLabel(t string) string {
	if t == "" {
		return "unknown"
	}
	return t
}

// factory registers instruments under the namespace.
type factory struct{ reg *prometheus.Registry }

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help})
	f.reg.MustRegister(g)
	return g
}

func (f factory) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	f.reg.MustRegister(g)
	return g
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets})
	f.reg.MustRegister(h)
	return h
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(h)
	return h
}
