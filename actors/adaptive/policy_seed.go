package adaptive

import (
	"math/rand/v2"
	"time"
)

// Seed is the seed's tuner, ported rule for rule (seed 004, module
// Throughput):
//
//   - on a completion, measure = inFlight / elapsed, elapsed in seconds from
//     the job's arrival in the queue, and the estimate keyed by that in-flight
//     count becomes alpha*measure + (1-alpha)*estimate (the measure itself
//     when there is none yet);
//   - then, with probability epsilon, move to a random neighbour (up or down
//     with equal odds, never below 1); otherwise move down when the level
//     below has a better estimate than the current level and the level above,
//     up when the level above is better than the current one, else stay. A
//     level without an estimate stays.
//
// The seed takes that decision on every message, arrivals included, so Seed
// implements ArrivalObserver. Its estimates are keyed by the in-flight count,
// not the limit: with few jobs in flight, a higher count always looks better
// (n jobs of one duration complete n/duration per second), exploration is a
// random walk reflected at 1, and the level drifts upwards. That is the drift
// the seed's author saw; the default policy (HillClimb) is built not to.
type Seed struct {
	cfg        Config
	rng        *rand.Rand
	level      int
	throughput map[int]float64
}

var _ ArrivalObserver = (*Seed)(nil)

// NewSeed returns the seed's policy, starting at cfg.InitialLimit.
func NewSeed(cfg Config) (*Seed, error) {
	cfg, err := cfg.normalized()
	if err != nil {
		return nil, err
	}
	return &Seed{
		cfg:        cfg,
		rng:        rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed)),
		level:      cfg.InitialLimit,
		throughput: make(map[int]float64),
	}, nil
}

// Limit returns the current level.
func (s *Seed) Limit() int { return s.level }

// Estimate returns the throughput estimate for an in-flight count, if any.
func (s *Seed) Estimate(concurrency int) (float64, bool) {
	v, ok := s.throughput[concurrency]
	return v, ok
}

// Observe updates the estimate for obs.InFlight and sets the level.
func (s *Seed) Observe(obs Observation, now time.Time) int {
	elapsed := now.Sub(obs.Arrival).Seconds()
	if elapsed > 0 {
		measure := float64(obs.InFlight) / elapsed
		if v, ok := s.throughput[obs.InFlight]; ok {
			s.throughput[obs.InFlight] = (1-s.cfg.LearningRate)*v + s.cfg.LearningRate*measure
		} else {
			s.throughput[obs.InFlight] = measure
		}
	}
	return s.setLevel()
}

// Arrived sets the level as the seed does on a Batch message.
func (s *Seed) Arrived(time.Time) int { return s.setLevel() }

func (s *Seed) setLevel() int {
	level := s.level
	if s.rng.Float64() < s.cfg.ExplorationRate {
		if s.rng.Float64() < 0.5 {
			level--
		} else {
			level++
		}
	} else if current, ok := s.throughput[level]; ok {
		low, hasLow := s.throughput[level-1]
		high, hasHigh := s.throughput[level+1]
		switch {
		case hasLow && hasHigh:
			if low > current && low > high {
				level--
			} else if high > current {
				level++
			}
		case hasHigh:
			if high > current {
				level++
			}
		case hasLow:
			if low > current {
				level--
			}
		}
	}
	s.level = min(max(level, s.cfg.MinLimit), s.cfg.MaxLimit)
	return s.level
}
