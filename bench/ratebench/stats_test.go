package main

import (
	"math"
	"testing"
	"time"
)

func at(ms ...int) []time.Time {
	t0 := time.Unix(1000, 0)
	out := make([]time.Time, len(ms))
	for i, m := range ms {
		out[i] = t0.Add(time.Duration(m) * time.Millisecond)
	}
	return out
}

// TestStats: the figures the harness reports, on hand-out times made up to
// show each rule (half-open windows, gaps clipped to the window asked).
func TestStats(t *testing.T) {
	ts := at(0, 100, 999, 1000, 1500, 4000, 4100)
	// [0, 1000) holds 0, 100, 999; 1000 is outside it (half-open), and
	// no later window holds more than 3.
	if got, start := mostInWindow(ts, time.Second); got != 3 || !start.Equal(ts[0]) {
		t.Errorf("mostInWindow = %d from %v, want 3 from 0", got, start.Sub(ts[0]))
	}
	if got, _ := mostInWindow(ts, 1001*time.Millisecond); got != 4 {
		t.Errorf("mostInWindow 1001ms = %d, want 4", got)
	}
	if got := overallRate(ts); math.Abs(got-6/4.1) > 1e-9 {
		t.Errorf("overallRate = %v, want %v", got, 6/4.1)
	}
	if got := longestGap(ts, time.Time{}, time.Time{}); got != 2500*time.Millisecond {
		t.Errorf("longestGap = %v, want 2.5s", got)
	}
	// From 2 s: the 1500-4000 gap counts from 2000, so 2 s, ending at 4000.
	gap, end := longestGapEnd(ts, ts[0].Add(2*time.Second), ts[0].Add(10*time.Second))
	if gap != 2*time.Second || !end.Equal(ts[5]) {
		t.Errorf("longestGapEnd from 2s = %v ending %v, want 2s ending at 4s", gap, end.Sub(ts[0]))
	}
	if got := len(between(ts, ts[0].Add(time.Second), ts[0].Add(4*time.Second))); got != 2 {
		t.Errorf("between = %d, want 2", got)
	}
	if med, lo, hi := spread([]float64{3, 1, 2, 10}); med != 2.5 || lo != 1 || hi != 10 {
		t.Errorf("spread = %v %v %v", med, lo, hi)
	}
}
