package journal_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/journal"
)

// benchEvent is about the size of a WorkAccepted event.
func benchEvent(seq int64) []persistence.Event {
	return []persistence.Event{{Seq: seq, Msg: wrapperspb.String(fmt.Sprintf("work-%012d/square/payload-0123456789", seq))}}
}

// BenchmarkSQLiteAppend measures durable single-event appends per second
// (fsync on) with N concurrent appenders, each waiting for its own ack on
// its own stream, with group commit and with one transaction per append.
func BenchmarkSQLiteAppend(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts []journal.Option
	}{
		{"commit=group", nil},
		{"commit=per-append", []journal.Option{journal.WithMaxBatch(1)}},
	} {
		for _, n := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("%s/appenders=%d", mode.name, n), func(b *testing.B) {
				j, err := journal.OpenSQLite(filepath.Join(b.TempDir(), "bench.db"), mode.opts...)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { require.NoError(b, j.Close()) })
				benchAppenders(b, j, n)
			})
		}
	}
}

func benchAppenders(b *testing.B, j persistence.Journal, n int) {
	ctx := context.Background()
	run := time.Now().UnixNano() // fresh streams in a database that persists
	epochs := make([]int64, n)
	for i := range n {
		var err error
		if epochs[i], _, err = j.AcquireEpoch(ctx, fmt.Sprintf("bench-%d-%d", run, i)); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([][]time.Duration, n)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i := range n {
		per := b.N / n
		if i < b.N%n {
			per++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := fmt.Sprintf("bench-%d-%d", run, i)
			ls := make([]time.Duration, 0, per)
			for k := 1; k <= per; k++ {
				t0 := time.Now()
				if err := j.Append(ctx, stream, epochs[i], benchEvent(int64(k))); err != nil {
					b.Error(err)
					return
				}
				ls = append(ls, time.Since(t0))
			}
			lat[i] = ls
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	reportLatency(b, slices.Concat(lat...), elapsed)
}

// BenchmarkSQLiteAppendAsync is the master's pattern: one stream, one
// caller issuing AppendAsync with up to window appends outstanding.
func BenchmarkSQLiteAppendAsync(b *testing.B) {
	for _, window := range []int{1, 8, 64, 1024} {
		b.Run(fmt.Sprintf("window=%d", window), func(b *testing.B) {
			j, err := journal.OpenSQLite(filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { require.NoError(b, j.Close()) })
			benchAsync(b, j, window)
		})
	}
}

func benchAsync(b *testing.B, j persistence.Journal, window int) {
	ctx := context.Background()
	stream := fmt.Sprintf("master-%d", time.Now().UnixNano())
	epoch, _, err := j.AcquireEpoch(ctx, stream)
	if err != nil {
		b.Fatal(err)
	}
	sem := make(chan struct{}, window)
	lat := make([]time.Duration, b.N)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for k := range b.N {
		sem <- struct{}{}
		wg.Add(1)
		t0 := time.Now()
		j.AppendAsync(stream, epoch, benchEvent(int64(k+1)), func(err error) {
			lat[k] = time.Since(t0)
			if err != nil {
				b.Error(err)
			}
			<-sem
			wg.Done()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	reportLatency(b, lat, elapsed)
}

func reportLatency(b *testing.B, lat []time.Duration, elapsed time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "appends/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkMemoryAppend is the in-memory journal, for scale.
func BenchmarkMemoryAppend(b *testing.B) {
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("appenders=%d", n), func(b *testing.B) {
			j := journal.NewMemory()
			b.Cleanup(func() { require.NoError(b, j.Close()) })
			benchAppenders(b, j, n)
		})
	}
}

// BenchmarkPostgresAppend runs when FOREMAN_TEST_POSTGRES_DSN is set.
func BenchmarkPostgresAppend(b *testing.B) {
	dsn := os.Getenv("FOREMAN_TEST_POSTGRES_DSN")
	if dsn == "" {
		b.Skip("FOREMAN_TEST_POSTGRES_DSN is not set")
	}
	open := func(b *testing.B) persistence.Journal {
		j, err := journal.OpenPostgres(context.Background(), dsn)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { require.NoError(b, j.Close()) })
		return j
	}
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("appenders=%d", n), func(b *testing.B) {
			j := open(b)
			benchAppenders(b, j, n)
		})
	}
	for _, window := range []int{64, 1024} {
		b.Run(fmt.Sprintf("async/window=%d", window), func(b *testing.B) {
			j := open(b)
			benchAsync(b, j, window)
		})
	}
}

// BenchmarkSQLiteLease measures one Lease call: a serving activation's
// renewal (its holder renews, which writes the lease row and commits with
// an fsync) and a waiting activation's look (another holder is refused,
// which writes nothing).
func BenchmarkSQLiteLease(b *testing.B) {
	j, err := journal.OpenSQLite(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { require.NoError(b, j.Close()) })
	benchLease(b, j)
}

// BenchmarkPostgresLease runs when FOREMAN_TEST_POSTGRES_DSN is set.
func BenchmarkPostgresLease(b *testing.B) {
	dsn := os.Getenv("FOREMAN_TEST_POSTGRES_DSN")
	if dsn == "" {
		b.Skip("FOREMAN_TEST_POSTGRES_DSN is not set")
	}
	j, err := journal.OpenPostgres(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { require.NoError(b, j.Close()) })
	benchLease(b, j)
}

func benchLease(b *testing.B, j persistence.Journal) {
	ctx := context.Background()
	stream := fmt.Sprintf("lease-%d", time.Now().UnixNano()) // fresh in a database that persists
	if _, err := j.Lease(ctx, stream, "holder", time.Hour); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name, holder string
		want         error
	}{
		{"op=renew", "holder", nil},
		{"op=refused", "waiter", persistence.ErrLeaseHeld},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			lat := make([]time.Duration, 0, b.N)
			start := time.Now()
			for b.Loop() {
				t0 := time.Now()
				if _, err := j.Lease(ctx, stream, c.holder, time.Hour); !errors.Is(err, c.want) {
					b.Fatalf("Lease as %s: %v, want %v", c.holder, err, c.want)
				}
				lat = append(lat, time.Since(t0))
			}
			elapsed := time.Since(start)
			slices.Sort(lat)
			b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "leases/s")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}
