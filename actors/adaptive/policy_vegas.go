package adaptive

import (
	"math"
	"time"
)

// Vegas is the latency-based policy, after TCP Vegas as Netflix's
// concurrency-limits applies it to request concurrency. It never looks at
// throughput: it compares the service time (start to completion, queueing
// excluded) with the lowest service time seen, and reads the difference as
// the number of jobs queued inside the resource:
//
//	queue = limit * (1 - rttNoLoad/rtt)
//
// With alpha = 3*log10(limit), beta = 6*log10(limit) and threshold =
// log10(limit) (each at least 1, 2 and 1):
// queue <= threshold: limit += beta (far below the knee, grow fast);
// queue < alpha: limit += log10(limit); queue > beta: limit -= log10(limit);
// otherwise hold.
//
// This port measures per sample window (the mean service time of at least
// MinSamples completions over SampleInterval) instead of per sample, which
// tames noisy job sizes. Like Netflix's, it does not grow when fewer than
// half the limit were in flight; unlike it, it also does not grow when no
// job waited during the window (app-limited), so it does not drift either.
// It does not periodically reset rttNoLoad (Netflix's probe), which would
// ratchet the limit upwards under steady load.
type Vegas struct {
	cfg       Config
	limit     float64
	noLoad    float64 // seconds; 0 until the first window
	winStart  time.Time
	winOpen   bool
	n         int
	rttSum    float64
	maxFlight int
	busy      int
}

// NewVegas returns the latency-based policy, starting at cfg.InitialLimit.
func NewVegas(cfg Config) (*Vegas, error) {
	cfg, err := cfg.normalized()
	if err != nil {
		return nil, err
	}
	return &Vegas{cfg: cfg, limit: float64(cfg.InitialLimit)}, nil
}

// Limit returns the current level.
func (v *Vegas) Limit() int { return int(math.Round(v.limit)) }

// Observe folds one service time into the window and adjusts the limit when
// the window closes.
func (v *Vegas) Observe(obs Observation, now time.Time) int {
	if !v.winOpen {
		v.winOpen, v.winStart = true, now
	}
	v.n++
	v.rttSum += now.Sub(obs.Started).Seconds()
	v.maxFlight = max(v.maxFlight, obs.InFlight)
	if obs.Queued > 0 {
		v.busy++
	}
	if now.Sub(v.winStart) < v.cfg.SampleInterval || v.n < v.cfg.MinSamples {
		return v.Limit()
	}
	rtt := v.rttSum / float64(v.n)
	appLimited := 2*v.maxFlight < v.Limit() || v.busy == 0
	v.winOpen, v.n, v.rttSum, v.maxFlight, v.busy = false, 0, 0, 0, 0
	if rtt <= 0 {
		return v.Limit()
	}
	if v.noLoad == 0 || rtt < v.noLoad {
		v.noLoad = rtt
	}
	l := v.limit
	lg := math.Log10(l)
	alpha, beta, threshold := math.Max(1, 3*lg), math.Max(2, 6*lg), math.Max(1, lg)
	step := math.Max(1, lg)
	queue := l * (1 - v.noLoad/rtt)
	switch {
	case queue > beta:
		l -= step
	case appLimited:
		// hold: the limit was not what the jobs were waiting on
	case queue <= threshold:
		l += beta
	case queue < alpha:
		l += step
	}
	v.limit = math.Min(math.Max(l, float64(v.cfg.MinLimit)), float64(v.cfg.MaxLimit))
	return v.Limit()
}
