package sim

import (
	"math"
	"slices"
)

// Throughput returns completions per second between from and to (seconds).
func (r Result) Throughput(from, to float64) float64 {
	if to <= from {
		return 0
	}
	n := 0
	for _, c := range r.Done {
		if c.T >= from && c.T < to {
			n++
		}
	}
	return float64(n) / (to - from)
}

// Percentile returns the p-th percentile (0..100) of the end-to-end time
// (service=false) or of the service time (service=true) of the jobs that
// completed between from and to, in seconds; NaN if none did.
func (r Result) Percentile(p float64, service bool, from, to float64) float64 {
	var v []float64
	for _, c := range r.Done {
		if c.T >= from && c.T < to {
			if service {
				v = append(v, c.Service)
			} else {
				v = append(v, c.E2E)
			}
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	i := int(math.Ceil(p/100*float64(len(v)))) - 1
	return v[min(max(i, 0), len(v)-1)]
}

// MeanLimit returns the mean level over the samples between from and to.
func (r Result) MeanLimit(from, to float64) float64 {
	sum, n := 0.0, 0
	for _, p := range r.Series {
		if p.T > from && p.T <= to {
			sum += float64(p.Limit)
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// MaxLimitBetween returns the highest sampled level between from and to.
func (r Result) MaxLimitBetween(from, to float64) int {
	m := 0
	for _, p := range r.Series {
		if p.T > from && p.T <= to {
			m = max(m, p.Limit)
		}
	}
	return m
}

// ConvergedAt returns the first time t (on the sample grid) from which the
// throughput over [t, t+window] reaches frac of target, or NaN if never.
func (r Result) ConvergedAt(target, frac, window float64) float64 {
	for _, p := range r.Series {
		start := p.T - (r.Series[0].T)
		if start+window > r.Series[len(r.Series)-1].T {
			break
		}
		if r.Throughput(start, start+window) >= frac*target {
			return start
		}
	}
	return math.NaN()
}
