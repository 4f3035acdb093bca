package bench_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/foreman-actors/foreman/cmd/foreman/internal/bench"
)

// BenchmarkLocalEndToEnd runs bench.Run (what `foreman bench` runs):
// b.N no-op jobs submitted by 64 goroutines, each acked once durable
// (SQLite, fsync on), handed out, executed and its result published.
func BenchmarkLocalEndToEnd(b *testing.B) {
	if testing.Short() {
		b.Skip("end-to-end benchmark")
	}
	for _, window := range []int{1, 16} {
		b.Run(fmt.Sprintf("workers=8/window=%d", window), func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			b.ResetTimer()
			res, err := bench.Run(ctx, bench.Config{
				Jobs: max(b.N, 1), Submitters: 64, Workers: 8, Window: window, DataDir: b.TempDir(),
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(res.JobsPerSecond, "jobs/s")
			b.ReportMetric(float64(res.AckP50.Microseconds()), "ack-p50-µs")
			b.ReportMetric(float64(res.ResultP50.Microseconds()), "result-p50-µs")
		})
	}
}
