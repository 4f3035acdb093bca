package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// percentile returns the p-th percentile (0..1) of sorted ds in ms.
func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	i := min(int(float64(len(ds))*p), len(ds)-1)
	return float64(ds[i].Microseconds()) / 1000
}

// BenchmarkSubmitWait measures POST /work?wait=10s end to end at light load:
// one client, one job at a time, a no-op job (square without delay), the
// real master on a SQLite journal and one worker: HTTP, the durable accept,
// the hand-out, the worker's interest question to the caller's waiter, the
// run, the durable completion and the outcome sent to the waiter.
func BenchmarkSubmitWait(b *testing.B) {
	if testing.Short() {
		b.Skip("starts a node and a server")
	}
	s := startStack(b, withWorkers(1), withSQLite())
	ab, err := httpapi.NewActorBackend(s.node.Client(), nil)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := httpapi.New(ab, httpapi.WithAddr("127.0.0.1:0"))
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	c, err := httpapi.NewClient(srv.Addr())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.CloseIdleConnections)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		info, done, err := c.SubmitWait(b.Context(), httpapi.SubmitRequest{ID: fmt.Sprintf("w-%d", i), Type: "square", Payload: json.RawMessage("7")}, 10*time.Second)
		if err != nil || !done || info.Status != httpapi.StatusDone {
			b.Fatalf("job %d: done=%v info=%+v err=%v", i, done, info, err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(percentile(lat, 0.50), "p50-ms")
	b.ReportMetric(percentile(lat, 0.99), "p99-ms")
}

// BenchmarkResultFeed measures one consumer of GET /results?wait= while b.N
// jobs run (32 HTTP submitters, 4 workers, SQLite journal): the results it
// reads per second, and the lag from the master recording a job's
// completion to the consumer reading its line.
func BenchmarkResultFeed(b *testing.B) {
	if testing.Short() {
		b.Skip("starts a node and a server")
	}
	s := startStack(b, withWorkers(4), withSQLite())
	ab, err := httpapi.NewActorBackend(s.node.Client(), nil)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := httpapi.New(ab, httpapi.WithAddr("127.0.0.1:0"))
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	c, err := httpapi.NewClient(srv.Addr())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.CloseIdleConnections)
	_, cursor, err := c.ReadResults(b.Context(), "", 0, httpapi.MaxResultsLimit) // start after what is there
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
	defer cancel()
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if _, err := c.Submit(ctx, httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage("7")}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	lag := make([]time.Duration, 0, b.N)
	for len(lag) < b.N && ctx.Err() == nil {
		lines, n, err := c.ReadResults(ctx, cursor, 5*time.Second, 1000)
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		for _, l := range lines {
			lag = append(lag, now.Sub(l.FinishedAt))
		}
		cursor = n
	}
	b.StopTimer()
	wg.Wait()
	slices.Sort(lag)
	b.ReportMetric(float64(len(lag))/b.Elapsed().Seconds(), "results/s")
	b.ReportMetric(percentile(lag, 0.50), "lag-p50-ms")
	b.ReportMetric(percentile(lag, 0.99), "lag-p99-ms")
}
