package throttler

import (
	"fmt"
	"time"
)

// Rate is a number of calls per period: at most Calls messages are
// delivered per Per. It is seed 002's Rate(numberOfCalls, duration).
type Rate struct {
	// Calls is how many deliveries a period allows; must be positive.
	Calls int
	// Per is the length of the period; must be positive.
	Per time.Duration
}

// PerSecond returns a rate of calls messages per second.
func PerSecond(calls int) Rate { return Rate{Calls: calls, Per: time.Second} }

// PerMinute returns a rate of calls messages per minute.
func PerMinute(calls int) Rate { return Rate{Calls: calls, Per: time.Minute} }

// PerHour returns a rate of calls messages per hour.
func PerHour(calls int) Rate { return Rate{Calls: calls, Per: time.Hour} }

// String formats the rate as "3/1s".
func (r Rate) String() string { return fmt.Sprintf("%d/%s", r.Calls, r.Per) }

// Interval is the average time between deliveries at this rate, rounded up
// to the nanosecond (Per/Calls), so that pacing by Interval never exceeds
// the rate.
func (r Rate) Interval() time.Duration {
	return (r.Per + time.Duration(r.Calls) - 1) / time.Duration(r.Calls)
}

// Validate reports, wrapping ErrInvalidRate, why r cannot be used.
func (r Rate) Validate() error {
	switch {
	case r.Calls <= 0:
		return fmt.Errorf("%w: Calls is %d, want at least 1 (to pause delivery, set the target to nil)", ErrInvalidRate, r.Calls)
	case r.Per <= 0:
		return fmt.Errorf("%w: Per is %s, want a positive duration", ErrInvalidRate, r.Per)
	}
	return nil
}

// validateStrict also bounds Calls, because strict modes keep one timestamp
// per allowed call.
func (r Rate) validateStrict() error {
	if err := r.Validate(); err != nil {
		return err
	}
	if r.Calls > MaxStrictCalls {
		return fmt.Errorf("%w: Calls is %d, strict modes allow at most %d (use a shorter Per with proportionally fewer Calls)",
			ErrInvalidRate, r.Calls, MaxStrictCalls)
	}
	return nil
}
