package sim

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// BenchmarkSchedule runs one schedule of the default cluster and fault
// mix per iteration (seeds 1, 2, ...): ns/op is the cost of a schedule on
// one core.
func BenchmarkSchedule(b *testing.B) {
	var events int
	seed := uint64(0)
	for b.Loop() {
		seed++
		cfg := DefaultConfig()
		cfg.Seed = seed
		rep, err := Run(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Failed() {
			b.Fatalf("seed %d: %v", seed, rep.Violation)
		}
		events += rep.Events
	}
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}

// BenchmarkSearch runs schedules with Search on every core: the
// schedules/s a CI search gets.
func BenchmarkSearch(b *testing.B) {
	seeds := make([]uint64, b.N)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	start := time.Now()
	b.ResetTimer()
	rep, err := Search(context.Background(), DefaultConfig(), seeds, runtime.GOMAXPROCS(0), nil)
	if err != nil {
		b.Fatal(err)
	}
	if rep != nil {
		b.Fatalf("seed %d: %v", rep.Seed, rep.Violation)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "schedules/s")
}
