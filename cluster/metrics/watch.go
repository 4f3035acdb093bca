package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/foreman-actors/foreman/actors/adaptive"
)

// funcCollector reports one gauge family read at scrape time: read returns
// the value for each label value.
type funcCollector struct {
	desc *prometheus.Desc
	read func() map[string]float64
}

func (c *funcCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *funcCollector) Collect(ch chan<- prometheus.Metric) {
	for label, v := range c.read() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, label)
	}
}

func (m *Metrics) mailboxLengths() map[string]float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]float64, len(m.mailboxes))
	for kind, s := range m.mailboxes {
		out[kind] = s.value()
	}
	return out
}

// WatchMembers reports foreman_cluster_members{role}, read from members at
// each scrape (members returns how many members have each role; a member
// with two roles counts in both). Call it once per Metrics.
func (m *Metrics) WatchMembers(members func() map[string]int) error {
	return m.reg.Register(&funcCollector{
		desc: prometheus.NewDesc(Namespace+"_cluster_members", "Cluster members this node sees, by role.", []string{"role"}, nil),
		read: func() map[string]float64 {
			out := make(map[string]float64)
			for role, n := range members() {
				out[role] = float64(n)
			}
			return out
		},
	})
}

// WatchAdaptive reports the adaptive executor pool's level, jobs in flight
// and jobs waiting, read from lim at each scrape. Call it once per Metrics.
func (m *Metrics) WatchAdaptive(lim *adaptive.Limiter) error {
	gauge := func(name, help string, read func(adaptive.Stats) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help},
			func() float64 { return float64(read(lim.Stats())) })
	}
	for _, c := range []prometheus.Collector{
		gauge("adaptive_pool_level", "The adaptive executor pool's current level: jobs it lets run at once.", func(s adaptive.Stats) int { return s.Limit }),
		gauge("adaptive_pool_in_flight", "Jobs the adaptive pool has started and not yet seen finish.", func(s adaptive.Stats) int { return s.InFlight }),
		gauge("adaptive_pool_queue", "Jobs waiting for a permit of the adaptive pool.", func(s adaptive.Stats) int { return s.Queue }),
	} {
		if err := m.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
