package throttler

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestIssuerGrant(t *testing.T) {
	type step struct {
		at     time.Duration // since t0
		want   int
		got    int
		again  time.Duration // since t0
		before time.Duration // NotBefore of the first permit, since t0; -1: unchecked
	}
	cases := []struct {
		name  string
		rate  Rate
		opts  []IssuerOption
		steps []step
	}{
		{
			name: "TimerHoldsOffOnePeriodThenGrantsCallsPerPeriod",
			rate: PerSecond(10),
			opts: []IssuerOption{WithMaxBatch(4)},
			steps: []step{
				{at: 0, want: 4, got: 0, again: time.Second, before: -1},
				{at: 999 * time.Millisecond, want: 4, got: 0, again: time.Second, before: -1},
				{at: time.Second, want: 9, got: 4, again: time.Second, before: time.Second},
				{at: 1100 * time.Millisecond, want: 4, got: 4, again: 1100 * time.Millisecond, before: 1100 * time.Millisecond},
				{at: 1200 * time.Millisecond, want: 4, got: 2, again: 1200 * time.Millisecond, before: -1},
				{at: 1300 * time.Millisecond, want: 4, got: 0, again: 2 * time.Second, before: -1},
				{at: 2500 * time.Millisecond, want: 4, got: 4, again: 2500 * time.Millisecond, before: -1},
			},
		},
		{
			name: "WindowHoldsOffPeriodHorizonLease",
			rate: PerSecond(10),
			opts: []IssuerOption{WithIssuerMode(ModeSlidingWindow), WithLease(10 * time.Millisecond), WithHorizon(200 * time.Millisecond), WithMaxBatch(20)},
			steps: []step{
				{at: 0, want: 5, got: 0, again: 1210 * time.Millisecond, before: -1},
				// Ten at once at open, then the window of 1.01 s is full and
				// the next start lies beyond the horizon.
				{at: 1210 * time.Millisecond, want: 20, got: 10, again: 2220*time.Millisecond - 200*time.Millisecond, before: 1210 * time.Millisecond},
				// Within the horizon of the window's end: future permits.
				{at: 2020 * time.Millisecond, want: 3, got: 3, again: 2020 * time.Millisecond, before: 2220 * time.Millisecond},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is, err := NewIssuer(tc.rate, t0, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			for k, s := range tc.steps {
				ps, again := is.Grant(t0.Add(s.at), s.want)
				if len(ps) != s.got || !again.Equal(t0.Add(s.again)) {
					t.Fatalf("step %d: Grant(+%s, %d) = %d permits, again +%s; want %d, +%s", k, s.at, s.want, len(ps), again.Sub(t0), s.got, s.again)
				}
				if s.before >= 0 && len(ps) > 0 && !ps[0].NotBefore.Equal(t0.Add(s.before)) {
					t.Fatalf("step %d: first NotBefore +%s, want +%s", k, ps[0].NotBefore.Sub(t0), s.before)
				}
			}
		})
	}
}

func TestNewIssuerRejectsBadInput(t *testing.T) {
	cases := []struct {
		name string
		rate Rate
		opts []IssuerOption
		want error
	}{
		{"ZeroCalls", Rate{Per: time.Second}, nil, ErrInvalidRate},
		{"TooManyCalls", Rate{Calls: MaxStrictCalls + 1, Per: time.Second}, nil, ErrInvalidRate},
		{"TokenBucket", PerSecond(1), []IssuerOption{WithIssuerMode(ModeTokenBucket)}, ErrInvalidOption},
		{"ZeroLease", PerSecond(1), []IssuerOption{WithLease(0)}, ErrInvalidOption},
		{"NegativeHorizon", PerSecond(1), []IssuerOption{WithHorizon(-1)}, ErrInvalidOption},
		{"ZeroBatch", PerSecond(1), []IssuerOption{WithMaxBatch(0)}, ErrInvalidOption},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewIssuer(tc.rate, t0, tc.opts...); !errors.Is(err, tc.want) {
				t.Fatalf("NewIssuer: %v, want %v", err, tc.want)
			}
		})
	}
}

func TestIssuerSetRate(t *testing.T) {
	is, err := NewIssuer(PerSecond(10), t0, WithMaxBatch(100))
	if err != nil {
		t.Fatal(err)
	}
	open := is.Open()
	if ps, _ := is.Grant(open, 6); len(ps) != 6 {
		t.Fatalf("got %d, want 6", len(ps))
	}
	if err := is.SetRate(PerSecond(4), open); err != nil {
		t.Fatal(err)
	}
	if ps, _ := is.Grant(open, 6); len(ps) != 0 {
		t.Fatalf("after lowering below the period's grants: got %d, want 0", len(ps))
	}
	if ps, _ := is.Grant(open.Add(time.Second), 6); len(ps) != 4 {
		t.Fatalf("next period: got %d, want 4", len(ps))
	}
	if err := is.SetRate(Rate{}, open); !errors.Is(err, ErrInvalidRate) || is.Rate() != PerSecond(4) {
		t.Fatalf("SetRate(invalid) = %v, rate %s; want ErrInvalidRate and the old rate", err, is.Rate())
	}
}
