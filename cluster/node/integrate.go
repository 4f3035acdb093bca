package node

import (
	"fmt"
	"slices"
	"strings"

	"github.com/foreman-actors/foreman/actors/adaptive"
	"github.com/foreman-actors/foreman/actors/throttler"
	throttlecore "github.com/foreman-actors/foreman/actors/throttler/core"
)

// This file wires the seeds' patterns into the distributed workers (see
// docs/library.md, "The seeds working together"): per-job-type rate limits enforced
// where the master hands work out (seed 002) and a worker node's executor
// pool sized by the self-tuning limiter (seed 004). The caller's deadline
// and interest (seed 003) need no wiring here: a Work carrying a waiter PID
// is checked by every worker (see actors/worker).

// RateSpecSyntax describes what ParseRateLimits accepts; error messages
// quote it.
const RateSpecSyntax = `TYPE=N/PERIOD[:strict][,TYPE=N/PERIOD...], N a positive integer, ` +
	`PERIOD one of s, m, h (also sec, min, hour) or a Go duration such as 500ms or 10s; ` +
	`e.g. "square=10/s,factorize=100/m:strict"`

// RateLimit is the dispatch rate of one job type: the master hands out at
// most Rate.Calls works of JobType in any window of Rate.Per.
type RateLimit struct {
	// JobType is the job type the limit applies to.
	JobType string
	// Rate is the limit.
	Rate throttler.Rate
	// Strict (":strict" in a spec) makes the limit hold in every window
	// of Rate.Per, wherever it starts (the throttler's sliding window),
	// not only in its timer periods (the seed's vouchers, the default), on
	// a cluster and on the all-in-one node alike.
	Strict bool
}

// String formats the limit as ParseRateLimits accepts it.
func (l RateLimit) String() string {
	s := fmt.Sprintf("%s=%d/%s", l.JobType, l.Rate.Calls, throttlecore.FormatPeriod(l.Rate.Per))
	if l.Strict {
		s += ":" + strictSuffix
	}
	return s
}

// strictSuffix marks a strict limit in a rate spec.
const strictSuffix = "strict"

// ParseRateLimits parses a rate spec such as "square=10/s,factorize=100/m"
// (see RateSpecSyntax). White space around items is ignored; an empty spec
// means no limits (nil, nil). Each job type may appear once. Errors wrap
// ErrInvalidConfig and say which item is wrong and what is accepted.
func ParseRateLimits(spec string) ([]RateLimit, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	var out []RateLimit
	for i, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		bad := func(why string, args ...any) error {
			return fmt.Errorf("%w: rate limit %d %q: %s; want %s", ErrInvalidConfig, i+1, item, fmt.Sprintf(why, args...), RateSpecSyntax)
		}
		if item == "" {
			return nil, bad("empty item (a stray comma?)")
		}
		jobType, rate, ok := strings.Cut(item, "=")
		jobType, rate = strings.TrimSpace(jobType), strings.TrimSpace(rate)
		if !ok {
			return nil, bad("no '='")
		}
		if jobType == "" || strings.ContainsFunc(jobType, func(c rune) bool { return c <= ' ' }) {
			return nil, bad("job type %q must be a non-empty name without spaces", jobType)
		}
		rate, mode, hasMode := strings.Cut(rate, ":")
		if mode = strings.TrimSpace(mode); hasMode && mode != strictSuffix {
			return nil, bad("mode %q is not %q", mode, strictSuffix)
		}
		r, err := throttlecore.ParseRate(rate)
		if err != nil {
			return nil, fmt.Errorf("%w: rate limit %d %q: %w", ErrInvalidConfig, i+1, item, err)
		}
		if slices.ContainsFunc(out, func(l RateLimit) bool { return l.JobType == jobType }) {
			return nil, bad("job type %q is limited twice", jobType)
		}
		out = append(out, RateLimit{JobType: jobType, Rate: r, Strict: hasMode})
	}
	return out, nil
}

// NewAdaptivePool returns the limiter that sizes a worker node's executor
// pool with the self-tuning policy named by policy ("default", "seed" or
// "vegas"; see adaptive.ParsePolicyKind) between 1 and maxJobs jobs at once.
// Give it to every worker of the node with worker.WithLimiter, and Close it
// after the workers have stopped. "" or "off" returns (nil, nil): a fixed
// pool, each worker's window alone. opts come last and may set the clock,
// logger or CPU reader (adaptive.WithClock, WithLogger, WithCPU); a Config
// given with adaptive.WithConfig replaces the whole configuration, so set
// its MaxLimit yourself.
func NewAdaptivePool(policy string, maxJobs int, opts ...adaptive.Option) (*adaptive.Limiter, error) {
	p := strings.TrimSpace(policy)
	if p == "" || strings.EqualFold(p, "off") {
		return nil, nil
	}
	kind, err := adaptive.ParsePolicyKind(p)
	if err != nil {
		return nil, fmt.Errorf("%w: adaptive pool: %w (or off)", ErrInvalidConfig, err)
	}
	if maxJobs < 1 {
		return nil, fmt.Errorf("%w: adaptive pool: at most %d jobs at once; want at least 1 (workers x window)", ErrInvalidConfig, maxJobs)
	}
	all := append([]adaptive.Option{adaptive.WithPolicy(kind), adaptive.WithConfig(adaptive.Config{MaxLimit: maxJobs})}, opts...)
	lim, err := adaptive.NewLimiter(all...)
	if err != nil {
		return nil, fmt.Errorf("%w: adaptive pool: %w", ErrInvalidConfig, err)
	}
	return lim, nil
}
