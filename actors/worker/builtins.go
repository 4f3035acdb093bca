package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/foreman-actors/foreman/actors/clock"
)

// Names of the built-in job types.
const (
	// JobSquare squares a JSON integer after a simulated delay (the sample's job).
	JobSquare = "square"
	// JobFactorize factorizes a JSON integer by trial division (seed 004's
	// CPU-bound job).
	JobFactorize = "factorize"
	// JobSleep sleeps for a duration: a JSON string such as "250ms" or a
	// JSON integer of milliseconds.
	JobSleep = "sleep"
	// JobLong runs for a duration given as JobSleep's is, reporting its
	// progress (Progress) every half second or tenth of the duration,
	// whichever is shorter: a long job that heartbeats (docs/long-jobs.md).
	// It is registered with DefaultLongHeartbeatTimeout.
	JobLong = "long"
)

// Defaults of the built-in jobs.
const (
	// DefaultMinSquareDelay and DefaultMaxSquareDelay bound the square job's
	// random simulated work time, as in the sample (1-2 s).
	DefaultMinSquareDelay = time.Second
	// DefaultMaxSquareDelay: see DefaultMinSquareDelay.
	DefaultMaxSquareDelay = 2 * time.Second
	// DefaultLongHeartbeatTimeout is the long job's heartbeat timeout: it
	// beats at least every half second.
	DefaultLongHeartbeatTimeout = 5 * time.Second
)

// BuiltinOption configures RegisterBuiltins.
type BuiltinOption func(*builtinConfig)

type builtinConfig struct {
	delayMin, delayMax time.Duration
	clock              clock.Clock
}

// WithSquareDelay sets the square job's simulated work time: a uniform random
// duration in [lo, hi]. WithSquareDelay(0, 0) removes the delay; lo == hi
// gives a fixed delay.
func WithSquareDelay(lo, hi time.Duration) BuiltinOption {
	return func(c *builtinConfig) { c.delayMin, c.delayMax = lo, hi }
}

// WithBuiltinClock sets the clock the square and sleep jobs wait on (default
// the wall clock). Tests pass a clock.Manual.
func WithBuiltinClock(c clock.Clock) BuiltinOption {
	return func(cfg *builtinConfig) { cfg.clock = c }
}

// RegisterBuiltins registers the built-in job types square, factorize, long and
// sleep in r. It fails if an option is out of range or a name is taken.
func RegisterBuiltins(r *Registry, opts ...BuiltinOption) error {
	cfg := builtinConfig{delayMin: DefaultMinSquareDelay, delayMax: DefaultMaxSquareDelay}
	for _, o := range opts {
		o(&cfg)
	}
	cfg.clock = clock.OrReal(cfg.clock)
	if cfg.delayMin < 0 || cfg.delayMax < cfg.delayMin {
		return fmt.Errorf("%w: square delay [%v, %v]: need 0 <= min <= max", ErrInvalidOption, cfg.delayMin, cfg.delayMax)
	}
	for _, j := range []struct {
		name string
		fn   JobFunc
		opts []JobOption
	}{
		{JobSquare, squareJob(cfg), nil},
		{JobFactorize, Factorize, nil},
		{JobSleep, sleepJob(cfg.clock), nil},
		{JobLong, longJob(cfg.clock), []JobOption{WithHeartbeatTimeout(DefaultLongHeartbeatTimeout)}},
	} {
		if err := r.Register(j.name, j.fn, j.opts...); err != nil {
			return err
		}
	}
	return nil
}

func squareJob(cfg builtinConfig) JobFunc {
	return func(ctx context.Context, payload []byte) ([]byte, error) {
		n, err := parseInt(JobSquare, payload)
		if err != nil {
			return nil, err
		}
		if n > math.MaxInt32*2 || n < -math.MaxInt32*2 {
			// |n| <= 2^32 keeps n*n inside int64.
			return nil, fmt.Errorf("%w: square: %d is too large; |n| must be at most %d", ErrBadPayload, n, int64(math.MaxInt32)*2)
		}
		d := cfg.delayMin
		if cfg.delayMax > cfg.delayMin {
			d += rand.N(cfg.delayMax - cfg.delayMin + 1)
		}
		if err := sleepCtx(ctx, cfg.clock, d); err != nil {
			return nil, err
		}
		return strconv.AppendInt(nil, n*n, 10), nil
	}
}

// Factorize is the factorize job: it decodes a JSON integer n >= 2 and
// returns its prime factors in ascending order as a JSON array (60 ->
// [2,2,3,5]). It uses seed 004's deliberately naive trial division by every
// integer up to the remaining cofactor, so a large prime such as 2130093701
// keeps one CPU busy for seconds; it stops early with ctx.Err() when ctx is
// cancelled. (The seed's F# version also lists the factor 1 and returns the
// factors in descending order.)
func Factorize(ctx context.Context, payload []byte) ([]byte, error) {
	n, err := parseInt(JobFactorize, payload)
	if err != nil {
		return nil, err
	}
	if n < 2 {
		return nil, fmt.Errorf("%w: factorize: %d has no prime factors; send an integer >= 2", ErrBadPayload, n)
	}
	var factors []int64
	rest := n
	var steps uint32
	for f := int64(2); f <= rest; {
		if steps++; steps&0xFFFF == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if rest%f == 0 {
			factors = append(factors, f)
			rest /= f
			continue
		}
		f++
	}
	return json.Marshal(factors)
}

func sleepJob(c clock.Clock) JobFunc {
	return func(ctx context.Context, payload []byte) ([]byte, error) {
		d, err := parseSleep(payload)
		if err != nil {
			return nil, err
		}
		if err := sleepCtx(ctx, c, d); err != nil {
			return nil, err
		}
		return json.Marshal(d.String())
	}
}

func longJob(c clock.Clock) JobFunc {
	return func(ctx context.Context, payload []byte) ([]byte, error) {
		d, err := parseSleep(payload)
		if err != nil {
			return nil, fmt.Errorf("%w (long takes the sleep job's payload)", err)
		}
		step := max(min(500*time.Millisecond, d/10), time.Millisecond)
		for done := time.Duration(0); done < d; {
			Progress(ctx, float64(done)/float64(d), fmt.Sprintf("%v of %v", done, d))
			s := min(step, d-done)
			if err := sleepCtx(ctx, c, s); err != nil {
				return nil, err
			}
			done += s
		}
		Progress(ctx, 1, fmt.Sprintf("%v of %v", d, d))
		return json.Marshal(d.String())
	}
}

func parseSleep(payload []byte) (time.Duration, error) {
	p := bytes.TrimSpace(payload)
	if len(p) > 0 && p[0] == '"' {
		var s string
		if err := json.Unmarshal(p, &s); err != nil {
			return 0, fmt.Errorf("%w: sleep: %q is not a JSON string: %w", ErrBadPayload, p, err)
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("%w: sleep: %q is not a non-negative Go duration; send e.g. \"250ms\" or 250 (milliseconds)", ErrBadPayload, s)
		}
		return d, nil
	}
	ms, err := parseInt(JobSleep, payload)
	if err != nil {
		return 0, err
	}
	if ms < 0 || ms > math.MaxInt64/int64(time.Millisecond) {
		return 0, fmt.Errorf("%w: sleep: %d ms is out of range; send 0 or more milliseconds", ErrBadPayload, ms)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// parseInt decodes a JSON integer payload (a bare number, e.g. 7).
func parseInt(job string, payload []byte) (int64, error) {
	p := bytes.TrimSpace(payload)
	if len(p) == 0 {
		return 0, fmt.Errorf("%w: %s: empty payload; send a JSON integer, e.g. 7", ErrBadPayload, job)
	}
	n, err := strconv.ParseInt(string(p), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %q is not a JSON integer; send e.g. 7", ErrBadPayload, job, truncate(p, 40))
	}
	return n, nil
}

func truncate(p []byte, n int) string {
	if len(p) <= n {
		return string(p)
	}
	return string(p[:n]) + "..."
}

// sleepCtx waits d on c, or returns ctx.Err() when ctx ends first.
func sleepCtx(ctx context.Context, c clock.Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
