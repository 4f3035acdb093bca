package core

import (
	"fmt"
	"strconv"
	"strings"
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

// RateSyntax is the text form ParseRate reads; its errors end with it.
const RateSyntax = `COUNT/PERIOD, e.g. "10/s", "100/m" or "5/500ms" (PERIOD s, m, h or a Go duration)`

// ParseRate reads a rate's text form, COUNT/PERIOD: "10/s", "100/m",
// "1000/h" or a Go duration as the period, "5/500ms". It is the one parser
// of rates: the node's --rate and --key-rate, PUT /rates and PUT /limits
// all read rates with it. COUNT is at most MaxStrictCalls (a strict rate
// keeps one time per call; a caller may bound it further). Errors say
// what was wrong and end with RateSyntax.
func ParseRate(s string) (Rate, error) {
	bad := func(why string, args ...any) (Rate, error) {
		return Rate{}, fmt.Errorf("rate %q: %s; want %s", s, fmt.Sprintf(why, args...), RateSyntax)
	}
	calls, per, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return bad("no '/' between the count and the period")
	}
	calls = strings.TrimSpace(calls)
	n, err := strconv.Atoi(calls)
	if err == nil && n > MaxStrictCalls {
		return bad("count %d is above %d; use a shorter period with proportionally fewer calls", n, MaxStrictCalls)
	}
	if err != nil || n < 1 {
		return bad("count %q is not a whole number from 1 to %d", calls, MaxStrictCalls)
	}
	d, err := ParsePeriod(per)
	if err != nil {
		return bad("%v", err)
	}
	return Rate{Calls: n, Per: d}, nil
}

// ParsePeriod reads a rate's period: s, m or h (also sec, second, min,
// minute, hour) or a positive Go duration such as 500ms.
func ParsePeriod(s string) (time.Duration, error) {
	switch p := strings.ToLower(strings.TrimSpace(s)); p {
	case "s", "sec", "second":
		return time.Second, nil
	case "m", "min", "minute":
		return time.Minute, nil
	case "h", "hour":
		return time.Hour, nil
	case "":
		return 0, fmt.Errorf("the period is missing")
	default:
		d, err := time.ParseDuration(p)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("period %q is neither s, m, h nor a positive Go duration", strings.TrimSpace(s))
		}
		return d, nil
	}
}

// FormatRate writes r as ParseRate reads it: "10/s", "100/m", "5/500ms".
func FormatRate(r Rate) string {
	return strconv.Itoa(r.Calls) + "/" + FormatPeriod(r.Per)
}

// FormatPeriod writes a period as ParsePeriod reads it: "s", "m", "h" or
// a Go duration.
func FormatPeriod(d time.Duration) string {
	switch d {
	case time.Second:
		return "s"
	case time.Minute:
		return "m"
	case time.Hour:
		return "h"
	}
	return d.String()
}
