package adaptive

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Sentinel errors. Wrapped errors name the field and its bound; match them
// with errors.Is.
var (
	// ErrInvalidConfig reports a Config field outside its documented range.
	ErrInvalidConfig = errors.New("adaptive: invalid config")
	// ErrUnknownPolicy reports a policy name that ParsePolicyKind does not know.
	ErrUnknownPolicy = errors.New("adaptive: unknown policy")
	// ErrClosed is returned by Limiter.Acquire once the limiter is closed.
	ErrClosed = errors.New("adaptive: limiter closed")
)

// Defaults for Config. A zero field in Config means "use the default".
const (
	// DefaultLearningRate is the weight of a new measurement in the
	// exponential moving average of a level's throughput (alpha).
	DefaultLearningRate = 0.2
	// DefaultExplorationRate is the seed policy's probability of trying a
	// random neighbouring level at a decision (epsilon); it decides on every
	// completion and every arrival. The default policy does not explore at
	// random: it re-measures neighbours whose estimate went stale.
	DefaultExplorationRate = 0.1
	// DefaultInitialLimit is the level a tuner starts at (the seed starts at 1).
	DefaultInitialLimit = 1
	// DefaultMinLimit is the lowest level a tuner may choose.
	DefaultMinLimit = 1
	// DefaultMaxLimit is the highest level a tuner may choose.
	DefaultMaxLimit = 1024
	// DefaultPenalty is the exponent of the default policy's concurrency
	// penalty: a level's score is throughput / level^Penalty, so going from
	// level l to h must raise throughput by more than (h/l)^Penalty (with
	// 0.15: +0.7% from 20 to 21, +6.3% from 2 to 3, +11% for a doubling).
	// Levels that do not pay for themselves are given back. It was 0.3 until
	// issue 34 item 12: on a broad top that stops the climber where the
	// throughput's elasticity falls to 0.3 (15 for a best level of 23 on
	// usl-rise, 92.5% of the gap); 0.15 stops it near 19 (about 97%), and
	// still walks a flat plateau down to its knee.
	DefaultPenalty = 0.15
	// DefaultSampleInterval is the nominal length of a sample window.
	DefaultSampleInterval = 500 * time.Millisecond
	// DefaultMinSamples is the number of completions a sample window needs
	// before it is judged.
	DefaultMinSamples = 20
	// DefaultJitter is the relative jitter of a window's length (0.2 = ±20%),
	// so that windows do not lock onto a periodic load.
	DefaultJitter = 0.2
	// DefaultStaleAfter is the age after which a level's estimate is
	// forgotten and must be measured again.
	DefaultStaleAfter = 30 * time.Second
	// DefaultCPUSaturation is the CPU utilisation (0..1) at and above which
	// the default policy does not increase the level.
	DefaultCPUSaturation = 0.95
	// DefaultSeed seeds the tuner's random source.
	DefaultSeed = 1
)

// Config tunes a policy. The seed's configuration is {LearningRate,
// ExplorationRate}; the other fields bound the level and parameterise the
// default policy. Every zero field takes its Default constant.
type Config struct {
	// LearningRate is alpha in (0, 1]: the weight of a new measurement in a
	// level's moving average.
	LearningRate float64
	// ExplorationRate (seed policy) is epsilon in [0, 1): the probability of
	// moving to a random neighbour instead of the best one. Use a negative
	// value for 0 (no exploration), since 0 means "default".
	ExplorationRate float64
	// InitialLimit is the level to start at, in [MinLimit, MaxLimit].
	InitialLimit int
	// MinLimit is the lowest level, at least 1.
	MinLimit int
	// MaxLimit is the highest level, at least MinLimit.
	MaxLimit int
	// Penalty (default policy) in [0, 1) is the exponent of the concurrency
	// penalty (see DefaultPenalty). Use a negative value for 0.
	Penalty float64
	// SampleInterval (default and latency policies) is the nominal window.
	SampleInterval time.Duration
	// MinSamples (default and latency policies) is the completions a window needs.
	MinSamples int
	// Jitter (default policy) is the relative window jitter in [0, 1). Use a
	// negative value for 0.
	Jitter float64
	// StaleAfter (default policy) is when an unrefreshed estimate is dropped.
	StaleAfter time.Duration
	// CPUSaturation (default policy) is the utilisation in (0, 1] above which
	// the level is not increased; it only acts when observations carry CPU.
	CPUSaturation float64
	// Seed seeds the random source; the same seed and inputs give the same
	// levels.
	Seed uint64
}

// DefaultConfig returns a Config with every field set to its default.
func DefaultConfig() Config {
	return Config{}.withDefaults()
}

func negZero(v float64) float64 {
	if v < 0 {
		return 0
	}
	return v
}

func (c Config) withDefaults() Config {
	if c.LearningRate == 0 {
		c.LearningRate = DefaultLearningRate
	}
	if c.ExplorationRate == 0 {
		c.ExplorationRate = DefaultExplorationRate
	} else {
		c.ExplorationRate = negZero(c.ExplorationRate)
	}
	if c.MinLimit == 0 {
		c.MinLimit = DefaultMinLimit
	}
	if c.MaxLimit == 0 {
		c.MaxLimit = max(DefaultMaxLimit, c.MinLimit)
	}
	if c.InitialLimit == 0 {
		c.InitialLimit = max(DefaultInitialLimit, c.MinLimit)
	}
	if c.Penalty == 0 {
		c.Penalty = DefaultPenalty
	} else {
		c.Penalty = negZero(c.Penalty)
	}
	if c.SampleInterval == 0 {
		c.SampleInterval = DefaultSampleInterval
	}
	if c.MinSamples == 0 {
		c.MinSamples = DefaultMinSamples
	}
	if c.Jitter == 0 {
		c.Jitter = DefaultJitter
	} else {
		c.Jitter = negZero(c.Jitter)
	}
	if c.StaleAfter == 0 {
		c.StaleAfter = DefaultStaleAfter
	}
	if c.CPUSaturation == 0 {
		c.CPUSaturation = DefaultCPUSaturation
	}
	if c.Seed == 0 {
		c.Seed = DefaultSeed
	}
	return c
}

// Validate fills defaults and reports the first field out of range, wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	_, err := c.normalized()
	return err
}

func (c Config) normalized() (Config, error) {
	c = c.withDefaults()
	bad := func(format string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case !(c.LearningRate > 0 && c.LearningRate <= 1):
		return bad("LearningRate %v must be in (0, 1]", c.LearningRate)
	case !(c.ExplorationRate < 1) || math.IsNaN(c.ExplorationRate):
		return bad("ExplorationRate %v must be in [0, 1)", c.ExplorationRate)
	case c.MinLimit < 1:
		return bad("MinLimit %d must be at least 1", c.MinLimit)
	case c.MaxLimit < c.MinLimit:
		return bad("MaxLimit %d must be at least MinLimit %d", c.MaxLimit, c.MinLimit)
	case c.InitialLimit < c.MinLimit || c.InitialLimit > c.MaxLimit:
		return bad("InitialLimit %d must be in [MinLimit %d, MaxLimit %d]", c.InitialLimit, c.MinLimit, c.MaxLimit)
	case !(c.Penalty < 1) || math.IsNaN(c.Penalty):
		return bad("Penalty %v must be in [0, 1)", c.Penalty)
	case c.SampleInterval < 0:
		return bad("SampleInterval %v must be positive", c.SampleInterval)
	case c.MinSamples < 1:
		return bad("MinSamples %d must be at least 1", c.MinSamples)
	case !(c.Jitter < 1) || math.IsNaN(c.Jitter):
		return bad("Jitter %v must be in [0, 1)", c.Jitter)
	case c.StaleAfter < 0:
		return bad("StaleAfter %v must be positive", c.StaleAfter)
	case !(c.CPUSaturation > 0 && c.CPUSaturation <= 1):
		return bad("CPUSaturation %v must be in (0, 1]", c.CPUSaturation)
	}
	return c, nil
}

// PolicyKind names a tuning policy.
type PolicyKind int

// The policies. The zero value is invalid.
const (
	// PolicyDefault is the hill climber without upward drift: windowed
	// throughput, no increase while app-limited or CPU-saturated, a penalty
	// per extra level, stale estimates forgotten, jittered windows, and a
	// fresh start (halving on a drop, a new slow start on a rise) when the
	// service changes. It is the default because it wins or ties on all
	// seven services of the evaluation (examples/santa/eval,
	// actors/adaptive/BENCH.md); that evaluation also says where a fixed
	// level beats it (the flat CPU service, by up to 1.1 points of the gap).
	PolicyDefault PolicyKind = iota + 1
	// PolicySeed is the seed's rule exactly: per completion, an EMA of
	// in-flight/elapsed for the current level, a move to a better neighbour,
	// and a random neighbour with probability ExplorationRate.
	PolicySeed
	// PolicyVegas is latency based, after TCP Vegas as Netflix's
	// concurrency-limits uses it: it estimates the queue inside the resource
	// from the no-load latency and keeps it between alpha and beta.
	PolicyVegas
)

var policyNames = map[PolicyKind]string{
	PolicyDefault: "default",
	PolicySeed:    "seed",
	PolicyVegas:   "vegas",
}

// String returns the policy's name as ParsePolicyKind accepts it.
func (k PolicyKind) String() string {
	if n, ok := policyNames[k]; ok {
		return n
	}
	return fmt.Sprintf("PolicyKind(%d)", int(k))
}

// PolicyKinds lists every policy, default first.
func PolicyKinds() []PolicyKind { return []PolicyKind{PolicyDefault, PolicySeed, PolicyVegas} }

// ParsePolicyKind maps "default", "seed" or "vegas" (any case) to its kind.
func ParsePolicyKind(s string) (PolicyKind, error) {
	for _, k := range PolicyKinds() {
		if strings.EqualFold(strings.TrimSpace(s), k.String()) {
			return k, nil
		}
	}
	return 0, fmt.Errorf("%w: %q (want one of default, seed, vegas)", ErrUnknownPolicy, s)
}

// NewPolicy returns a fresh policy of the given kind, or an error wrapping
// ErrUnknownPolicy or ErrInvalidConfig.
func NewPolicy(kind PolicyKind, cfg Config) (Policy, error) {
	switch kind {
	case PolicyDefault:
		return NewHillClimb(cfg)
	case PolicySeed:
		return NewSeed(cfg)
	case PolicyVegas:
		return NewVegas(cfg)
	}
	return nil, fmt.Errorf("%w: %v", ErrUnknownPolicy, kind)
}
