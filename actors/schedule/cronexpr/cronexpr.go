// Package cronexpr parses the schedule expressions of Foreman's periodic
// jobs and computes their ticks. It is pure: no clock, no goroutine; the
// caller passes the time.
//
// An expression is one of
//
//   - six fields, with seconds: "SEC MIN HOUR DOM MONTH DOW"
//     ("*/10 * * * * *" every ten seconds);
//   - five fields, the classic crontab: "MIN HOUR DOM MONTH DOW" (second 0);
//   - a shorthand: @yearly (@annually), @monthly, @weekly, @daily
//     (@midnight), @hourly;
//   - "@every D" with D a Go duration of whole seconds, at least 1s
//     ("@every 90s"): ticks at the multiples of D since the Unix epoch, so
//     every node computes the same ticks.
//
// Each field takes "*", "?" (DOM and DOW only, same as "*"), a number, a
// range "A-B", a list "A,B,C" and a step "*/N" or "A-B/N" or "A/N" (A to
// the field's maximum). Months take JAN-DEC, days of the week SUN-SAT, and
// day of the week 7 is Sunday too. When both DOM and DOW are restricted, a
// day matches if either matches (as in Vixie cron).
//
// A time zone comes as a prefix, "TZ=Europe/Berlin 0 30 2 * * *" (CRON_TZ=
// is accepted too), or from the caller (Parse's loc); the default is UTC.
//
// Daylight saving time. Cron fields describe wall-clock times in the zone.
// A wall-clock time that does not exist (the spring-forward gap, 02:30 in
// Berlin on the last Sunday of March) fires at the first instant after the
// gap (03:00 CEST); several such times collapse into that one tick. A
// wall-clock time that exists twice (the fall-back overlap, 02:30 on the
// last Sunday of October) fires once, at its first occurrence (CEST): a
// daily job runs once a day, and a job every N minutes pauses during the
// repeated hour. Use @every for a strict interval across DST changes.
package cronexpr

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrSyntax is wrapped by every error of Parse; the *Error says which field.
var ErrSyntax = errors.New("cronexpr: invalid expression")

// Error is a parse error: the field at fault and why.
type Error struct {
	// Field is the part of the expression at fault: "second", "minute",
	// "hour", "day of month", "month", "day of week", "time zone",
	// "@every" or "expression".
	Field string
	// Value is the text of that part.
	Value string
	// Reason says what is wrong.
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("cron expression: %s %q: %s (examples: \"0 30 2 * * *\" daily at 02:30:00, \"*/15 * * * *\" every 15 minutes, \"TZ=Europe/Berlin 0 9 * * MON-FRI\", \"@every 10s\", \"@hourly\")", e.Field, e.Value, e.Reason)
}

// Unwrap makes errors.Is(err, ErrSyntax) true.
func (e *Error) Unwrap() error { return ErrSyntax }

// Schedule is a parsed expression. It is immutable and safe for concurrent
// use.
type Schedule struct {
	every time.Duration // > 0: @every; the fields are unused
	sec   uint64        // bit i: second i matches
	min   uint64
	hour  uint64
	dom   uint64 // bits 1..31
	month uint64 // bits 1..12
	dow   uint64 // bits 0..6, Sunday 0
	// domStar and dowStar: the field was "*" or "?" (for the OR rule).
	domStar, dowStar bool
	loc              *time.Location
}

// Every returns the interval of an @every schedule, 0 otherwise.
func (s *Schedule) Every() time.Duration { return s.every }

// Location returns the schedule's time zone.
func (s *Schedule) Location() *time.Location { return s.loc }

type field struct {
	name     string
	min, max int
	names    map[string]int
}

var (
	fSecond = field{name: "second", max: 59}
	fMinute = field{name: "minute", max: 59}
	fHour   = field{name: "hour", max: 23}
	fDom    = field{name: "day of month", min: 1, max: 31}
	fMonth  = field{name: "month", min: 1, max: 12, names: map[string]int{
		"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
		"JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12,
	}}
	// Day of week allows 7 (Sunday), folded onto 0 after parsing.
	fDow = field{name: "day of week", max: 7, names: map[string]int{
		"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6,
	}}
)

var shorthands = map[string]string{
	"@yearly":   "0 0 0 1 1 *",
	"@annually": "0 0 0 1 1 *",
	"@monthly":  "0 0 0 1 * *",
	"@weekly":   "0 0 0 * * 0",
	"@daily":    "0 0 0 * * *",
	"@midnight": "0 0 0 * * *",
	"@hourly":   "0 0 * * * *",
}

// Parse parses expr (see the package doc). loc is the time zone unless expr
// starts with TZ=; nil means UTC.
func Parse(expr string, loc *time.Location) (*Schedule, error) {
	if loc == nil {
		loc = time.UTC
	}
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, &Error{Field: "expression", Value: expr, Reason: "is empty"}
	}
	if rest, ok := cutTZ(expr); ok {
		tz, after, _ := strings.Cut(rest, " ")
		l, err := time.LoadLocation(tz)
		if err != nil || tz == "" || strings.EqualFold(tz, "local") {
			return nil, &Error{Field: "time zone", Value: tz, Reason: "is not an IANA time zone name such as Europe/Berlin or UTC"}
		}
		loc = l
		expr = strings.TrimSpace(after)
		if expr == "" {
			return nil, &Error{Field: "expression", Value: "", Reason: "has a time zone but no schedule after it"}
		}
	}
	s := &Schedule{loc: loc}
	if strings.HasPrefix(expr, "@") {
		word, arg, _ := strings.Cut(expr, " ")
		word = strings.ToLower(word)
		if word == "@every" {
			arg = strings.TrimSpace(arg)
			d, err := time.ParseDuration(arg)
			switch {
			case err != nil:
				return nil, &Error{Field: "@every", Value: arg, Reason: "is not a Go duration such as 10s, 5m or 1h30m"}
			case d < time.Second:
				return nil, &Error{Field: "@every", Value: arg, Reason: "must be at least 1s"}
			case d%time.Second != 0:
				return nil, &Error{Field: "@every", Value: arg, Reason: "must be whole seconds (ticks are named by their Unix second)"}
			}
			s.every = d
			return s, nil
		}
		full, ok := shorthands[word]
		if !ok || strings.TrimSpace(arg) != "" {
			return nil, &Error{Field: "expression", Value: expr, Reason: "is not a known shorthand (@yearly, @monthly, @weekly, @daily, @hourly, @every D)"}
		}
		expr = full
	}
	parts := strings.Fields(expr)
	switch len(parts) {
	case 5:
		parts = append([]string{"0"}, parts...)
	case 6:
	default:
		return nil, &Error{Field: "expression", Value: expr, Reason: fmt.Sprintf("has %d fields; want 6 (second minute hour day-of-month month day-of-week) or 5 (minute hour day-of-month month day-of-week)", len(parts))}
	}
	var err error
	fields := []field{fSecond, fMinute, fHour, fDom, fMonth, fDow}
	bits := []*uint64{&s.sec, &s.min, &s.hour, &s.dom, &s.month, &s.dow}
	for i, f := range fields {
		if *bits[i], err = f.parse(parts[i]); err != nil {
			return nil, err
		}
	}
	if s.dow&(1<<7) != 0 {
		s.dow = s.dow&^(1<<7) | 1
	}
	s.domStar = parts[3] == "*" || parts[3] == "?"
	s.dowStar = parts[5] == "*" || parts[5] == "?"
	if !s.possible() {
		return nil, &Error{Field: "day of month", Value: parts[3], Reason: "never occurs in the months " + parts[4] + " allow"}
	}
	return s, nil
}

// cutTZ strips a "TZ=" or "CRON_TZ=" prefix.
func cutTZ(expr string) (string, bool) {
	for _, p := range []string{"TZ=", "CRON_TZ="} {
		if len(expr) >= len(p) && strings.EqualFold(expr[:len(p)], p) {
			return expr[len(p):], true
		}
	}
	return "", false
}

// possible reports whether some day of some month can match: "0 0 30 2 *"
// (February 30th) never does, and Next would search in vain.
func (s *Schedule) possible() bool {
	if !s.dowStar && !s.domStar {
		return true // the day of week matches on some day of every month
	}
	if s.domStar {
		return true
	}
	days := [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	for m := 1; m <= 12; m++ {
		if s.month&(1<<m) == 0 {
			continue
		}
		for d := 1; d <= days[m]; d++ {
			if s.dom&(1<<d) != 0 {
				return true
			}
		}
	}
	return false
}

func (f field) parse(text string) (uint64, error) {
	if text == "?" && (f.name == fDom.name || f.name == fDow.name) {
		text = "*"
	}
	var bits uint64
	for part := range strings.SplitSeq(text, ",") {
		b, err := f.parsePart(part)
		if err != nil {
			return 0, &Error{Field: f.name, Value: text, Reason: err.Error()}
		}
		bits |= b
	}
	return bits, nil
}

func (f field) parsePart(part string) (uint64, error) {
	if part == "" {
		return 0, errors.New("has an empty list item")
	}
	rng, stepText, hasStep := strings.Cut(part, "/")
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 || n > f.max-f.min+1 {
			return 0, fmt.Errorf("step %q must be a number from 1 to %d", stepText, f.max-f.min+1)
		}
		step = n
	}
	lo, hi := f.min, f.max
	switch {
	case rng == "*":
	case strings.Contains(rng, "-"):
		a, b, _ := strings.Cut(rng, "-")
		var err error
		if lo, err = f.value(a); err != nil {
			return 0, err
		}
		if hi, err = f.value(b); err != nil {
			return 0, err
		}
		if hi < lo {
			return 0, fmt.Errorf("range %s runs backwards", rng)
		}
	default:
		v, err := f.value(rng)
		if err != nil {
			return 0, err
		}
		lo = v
		if !hasStep {
			hi = v
		}
	}
	var bits uint64
	for v := lo; v <= hi; v += step {
		bits |= 1 << v
	}
	return bits, nil
}

func (f field) value(text string) (int, error) {
	if v, ok := f.names[strings.ToUpper(text)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(text)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number from %d to %d", text, f.min, f.max)
	}
	if v < f.min || v > f.max {
		return 0, fmt.Errorf("%d is out of range %d-%d", v, f.min, f.max)
	}
	return v, nil
}

// searchYears bounds the search for the next match (a schedule for 29
// February matches at least once in 8 years).
const searchYears = 9

// Next returns the first tick strictly after t, or the zero time if there is
// none within searchYears years (impossible for a parsed expression, kept as
// a guard). Ticks are whole seconds.
func (s *Schedule) Next(t time.Time) time.Time {
	if s.every > 0 {
		step := int64(s.every / time.Second)
		u := t.Unix()
		if t.Before(time.Unix(u, 0)) { // negative times round towards zero
			u--
		}
		return time.Unix((u/step+1)*step, 0).In(s.loc)
	}
	// Walk the wall clock: a wall time whose instant is not after t (its
	// first occurrence passed: t is in an overlap's second pass; or a gap
	// collapsed onto a tick at or before t) is skipped. At most an hour of
	// seconds is skipped that way.
	w := wallOf(t.In(s.loc)).Add(time.Second)
	for range 2 * 3600 {
		var ok bool
		if w, ok = s.nextWall(w); !ok {
			return time.Time{}
		}
		if at := s.instant(w); at.After(t) {
			return at
		}
		w = w.Add(time.Second)
	}
	return time.Time{}
}

// wallOf returns t's wall clock as a UTC time: calendar arithmetic without
// zone transitions.
func wallOf(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, sec := t.Clock()
	return time.Date(y, mo, d, h, mi, sec, 0, time.UTC)
}

// instant maps a wall-clock time in s.loc to the instant it fires at: its
// only or first occurrence, or for a time in a gap the end of the gap.
func (s *Schedule) instant(w time.Time) time.Time {
	y, mo, d := w.Date()
	h, mi, sec := w.Clock()
	t := time.Date(y, mo, d, h, mi, sec, 0, s.loc)
	got := wallOf(t)
	switch {
	case got.Equal(w):
		// Exists; if it exists twice, take the first occurrence: the zone
		// that began at start shifted the clock back by back.
		start, _ := t.ZoneBounds()
		if start.IsZero() {
			return t
		}
		_, offNow := t.Zone()
		_, offBefore := start.Add(-time.Second).Zone()
		if back := offBefore - offNow; back > 0 {
			if earlier := t.Add(-time.Duration(back) * time.Second); earlier.Before(start) && wallOf(earlier).Equal(w) {
				return earlier
			}
		}
		return t
	case got.Before(w):
		// Go placed it before the transition: the gap ends where this
		// zone ends.
		_, end := t.ZoneBounds()
		return end
	default:
		// Placed after the transition: the gap ends where this zone began.
		start, _ := t.ZoneBounds()
		return start
	}
}

// nextWall returns the first wall-clock time at or after w (a UTC carrier)
// that matches every field.
func (s *Schedule) nextWall(w time.Time) (time.Time, bool) {
	limit := w.AddDate(searchYears, 0, 0)
	for w.Before(limit) {
		if s.month&(1<<uint(w.Month())) == 0 {
			w = time.Date(w.Year(), w.Month()+1, 1, 0, 0, 0, 0, time.UTC)
			continue
		}
		if !s.dayMatches(w) {
			w = time.Date(w.Year(), w.Month(), w.Day()+1, 0, 0, 0, 0, time.UTC)
			continue
		}
		if s.hour&(1<<uint(w.Hour())) == 0 {
			w = time.Date(w.Year(), w.Month(), w.Day(), w.Hour()+1, 0, 0, 0, time.UTC)
			continue
		}
		if s.min&(1<<uint(w.Minute())) == 0 {
			w = time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute()+1, 0, 0, time.UTC)
			continue
		}
		if s.sec&(1<<uint(w.Second())) == 0 {
			w = w.Add(time.Second)
			continue
		}
		return w, true
	}
	return time.Time{}, false
}

func (s *Schedule) dayMatches(w time.Time) bool {
	dom := s.dom&(1<<uint(w.Day())) != 0
	dow := s.dow&(1<<uint(w.Weekday())) != 0
	if s.domStar || s.dowStar {
		return dom && dow
	}
	return dom || dow
}
