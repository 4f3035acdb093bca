package cronexpr_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/foreman-actors/foreman/actors/schedule/cronexpr"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestNext(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		expr  string
		loc   *time.Location
		after string
		want  []string // successive ticks, UTC
	}{
		{name: "SixFieldsEveryTenSeconds", expr: "*/10 * * * * *", after: "2026-11-28T10:00:03Z",
			want: []string{"2026-11-28T10:00:10Z", "2026-11-28T10:00:20Z"}},
		{name: "FiveFieldsSecondZero", expr: "*/15 * * * *", after: "2026-11-28T10:07:30Z",
			want: []string{"2026-11-28T10:15:00Z", "2026-11-28T10:30:00Z"}},
		{name: "ExactTickIsNotAfterItself", expr: "0 * * * * *", after: "2026-11-28T10:07:00Z",
			want: []string{"2026-11-28T10:08:00Z"}},
		{name: "EveryAlignedToEpoch", expr: "@every 10s", after: "2026-11-28T10:00:03Z",
			want: []string{"2026-11-28T10:00:10Z", "2026-11-28T10:00:20Z"}},
		{name: "EveryNinetySeconds", expr: "@every 90s", after: "1970-01-01T00:00:00Z",
			want: []string{"1970-01-01T00:01:30Z", "1970-01-01T00:03:00Z"}},
		{name: "Hourly", expr: "@hourly", after: "2026-11-28T10:07:30Z",
			want: []string{"2026-11-28T11:00:00Z", "2026-11-28T12:00:00Z"}},
		{name: "Daily", expr: "@daily", after: "2026-11-28T10:07:30Z",
			want: []string{"2026-11-29T00:00:00Z"}},
		{name: "WeeklyIsSunday", expr: "@weekly", after: "2026-11-28T10:00:00Z", // a Saturday
			want: []string{"2026-11-29T00:00:00Z", "2026-12-06T00:00:00Z"}},
		{name: "Monthly", expr: "@monthly", after: "2026-11-28T10:00:00Z",
			want: []string{"2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"}},
		{name: "Yearly", expr: "@yearly", after: "2026-11-28T10:00:00Z",
			want: []string{"2027-01-01T00:00:00Z"}},
		{name: "LeapDay", expr: "0 0 0 29 2 *", after: "2026-01-01T00:00:00Z",
			want: []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{name: "DomOrDow", expr: "0 0 0 13 * FRI", after: "2026-11-01T00:00:00Z",
			want: []string{"2026-11-06T00:00:00Z", "2026-11-13T00:00:00Z", "2026-11-20T00:00:00Z"}},
		{name: "DowSevenIsSunday", expr: "0 0 12 * * 7", after: "2026-11-28T00:00:00Z",
			want: []string{"2026-11-29T12:00:00Z"}},
		{name: "Names", expr: "0 0 12 1 jan,JUL *", after: "2026-11-28T00:00:00Z",
			want: []string{"2027-01-01T12:00:00Z", "2027-07-01T12:00:00Z"}},
		{name: "RangeWithStep", expr: "0 0 8-18/5 * * MON-FRI", after: "2026-11-27T12:00:00Z", // a Friday
			want: []string{"2026-11-27T13:00:00Z", "2026-11-27T18:00:00Z", "2026-11-30T08:00:00Z"}},
		{name: "TimeZonePrefix", expr: "TZ=America/New_York 0 0 9 * * MON-FRI", after: "2026-11-28T12:00:00Z",
			want: []string{"2026-11-30T14:00:00Z"}},
		{name: "TimeZoneArgument", expr: "0 0 9 * * *", loc: berlin, after: "2026-11-28T12:00:00Z",
			want: []string{"2026-11-29T08:00:00Z"}},
		// Spring forward in Berlin: 2026-03-29 02:00 CET becomes 03:00 CEST
		// (01:00 UTC); 02:30 does not exist and fires at 03:00 CEST.
		{name: "BerlinGapFiresAtGapEnd", expr: "TZ=Europe/Berlin 0 30 2 * * *", after: "2026-03-28T12:00:00Z",
			want: []string{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{name: "BerlinGapCollapsesToOneTick", expr: "TZ=Europe/Berlin */15 2 * * *", after: "2026-03-29T00:00:00Z",
			want: []string{"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z", "2026-03-30T00:15:00Z"}},
		{name: "BerlinGapHourly", expr: "TZ=Europe/Berlin 0 0 * * * *", after: "2026-03-28T23:30:00Z",
			want: []string{"2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"}},
		// Fall back: 2026-10-25 03:00 CEST becomes 02:00 CET (01:00 UTC);
		// 02:30 exists twice and fires once, at its first occurrence.
		{name: "BerlinOverlapDailyOnce", expr: "TZ=Europe/Berlin 0 30 2 * * *", after: "2026-10-24T12:00:00Z",
			want: []string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{name: "BerlinOverlapSecondPassSkipped", expr: "TZ=Europe/Berlin 0 */30 * * * *", after: "2026-10-25T00:00:00Z",
			want: []string{"2026-10-25T00:30:00Z", "2026-10-25T02:00:00Z", "2026-10-25T02:30:00Z"}},
		{name: "BerlinOverlapStartingInSecondPass", expr: "TZ=Europe/Berlin 0 */30 * * * *", after: "2026-10-25T01:10:00Z",
			want: []string{"2026-10-25T02:00:00Z"}},
		{name: "EveryIgnoresDST", expr: "TZ=Europe/Berlin @every 1h", after: "2026-10-25T00:30:00Z",
			want: []string{"2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := cronexpr.Parse(tc.expr, tc.loc)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.expr, err)
			}
			at := utc(tc.after)
			for i, w := range tc.want {
				got := s.Next(at)
				if !got.Equal(utc(w)) {
					t.Fatalf("tick %d of %q after %s: got %s, want %s", i, tc.expr, at.Format(time.RFC3339), got.UTC().Format(time.RFC3339), w)
				}
				at = got
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, expr, field string
	}{
		{name: "Empty", expr: "", field: "expression"},
		{name: "FourFields", expr: "* * * *", field: "expression"},
		{name: "SevenFields", expr: "* * * * * * *", field: "expression"},
		{name: "SecondOutOfRange", expr: "60 * * * * *", field: "second"},
		{name: "MinuteNotNumber", expr: "0 x * * * *", field: "minute"},
		{name: "HourOutOfRange", expr: "0 0 24 * * *", field: "hour"},
		{name: "DomZero", expr: "0 0 0 0 * *", field: "day of month"},
		{name: "MonthName", expr: "0 0 0 1 FOO *", field: "month"},
		{name: "DowOutOfRange", expr: "0 0 0 * * 8", field: "day of week"},
		{name: "BackwardsRange", expr: "0 0 5-3 * * *", field: "hour"},
		{name: "ZeroStep", expr: "*/0 * * * * *", field: "second"},
		{name: "EmptyListItem", expr: "0 1,,2 * * * *", field: "minute"},
		{name: "FebruaryThirtieth", expr: "0 0 0 30 2 *", field: "day of month"},
		{name: "BadZone", expr: "TZ=Mars/Olympus 0 0 * * * *", field: "time zone"},
		{name: "ZoneOnly", expr: "TZ=UTC", field: "expression"},
		{name: "EveryBad", expr: "@every soon", field: "@every"},
		{name: "EveryTooShort", expr: "@every 500ms", field: "@every"},
		{name: "EveryFraction", expr: "@every 1500ms", field: "@every"},
		{name: "UnknownShorthand", expr: "@fortnightly", field: "expression"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := cronexpr.Parse(tc.expr, nil)
			var perr *cronexpr.Error
			if !errors.As(err, &perr) || !errors.Is(err, cronexpr.ErrSyntax) {
				t.Fatalf("Parse(%q) = %v, want a *cronexpr.Error", tc.expr, err)
			}
			if perr.Field != tc.field {
				t.Fatalf("Parse(%q) blames %q, want %q (%v)", tc.expr, perr.Field, tc.field, err)
			}
			if !strings.Contains(err.Error(), "examples:") {
				t.Fatalf("error %q has no example", err)
			}
		})
	}
}

// TestNextAgainstBruteForce checks Next against a second-by-second scan of
// every instant in UTC, where no DST applies.
func TestNextAgainstBruteForce(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{"*/7 */3 * * * *", "30 59 23 * * SAT", "0 0 1-2 1,15 * *", "15 */20 4 * * *"} {
		s, err := cronexpr.Parse(expr, nil)
		if err != nil {
			t.Fatal(err)
		}
		at := utc("2026-11-28T00:00:00Z")
		end := at.Add(72 * time.Hour)
		next := s.Next(at)
		for c := at.Add(time.Second); c.Before(end); c = c.Add(time.Second) {
			if matchesUTC(t, expr, c) {
				if !next.Equal(c) {
					t.Fatalf("%q: Next gave %s, brute force %s", expr, next, c)
				}
				next = s.Next(c)
			}
		}
	}
}

// matchesUTC is the dumb model: a direct reading of each field.
func matchesUTC(t *testing.T, expr string, c time.Time) bool {
	t.Helper()
	f := strings.Fields(expr)
	vals := []int{c.Second(), c.Minute(), c.Hour(), c.Day(), int(c.Month()), int(c.Weekday())}
	for i, spec := range f {
		if !fieldMatches(spec, vals[i]) {
			return false
		}
	}
	return true
}

func fieldMatches(spec string, v int) bool {
	names := map[string]int{"SAT": 6}
	for part := range strings.SplitSeq(spec, ",") {
		rng, step, _ := strings.Cut(part, "/")
		st := 1
		if step != "" {
			st = atoi(step)
		}
		lo, hi := 0, 59
		switch {
		case rng == "*":
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			lo, hi = atoi(a), atoi(b)
		default:
			if n, ok := names[rng]; ok {
				lo, hi = n, n
			} else {
				lo, hi = atoi(rng), atoi(rng)
			}
		}
		if v >= lo && v <= hi && (v-lo)%st == 0 {
			return true
		}
	}
	return false
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}
