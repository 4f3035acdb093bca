package main

import (
	"testing"
	"time"
)

// TestPct checks the nearest-rank percentile: of 100 samples p99 is the
// 99th smallest, the rank is rounded up, and one sample is every
// percentile.
func TestPct(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(100-i) * time.Millisecond // unsorted on purpose
	}
	tests := []struct {
		name string
		ds   []time.Duration
		p    int
		want time.Duration
	}{
		{"p99 of 100 is the 99th", hundred, 99, 99 * time.Millisecond},
		{"p50 of 100 is the 50th", hundred, 50, 50 * time.Millisecond},
		{"p100 is the largest", hundred, 100, 100 * time.Millisecond},
		{"p99 of 200 is the 198th", append(append([]time.Duration{}, hundred...), hundred...), 99, 99 * time.Millisecond},
		{"p99 of 3 rounds up to the 3rd", []time.Duration{3, 1, 2}, 99, 3},
		{"one sample", []time.Duration{7}, 1, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pct(tt.ds, tt.p); got != tt.want {
				t.Fatalf("pct(%d) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}
