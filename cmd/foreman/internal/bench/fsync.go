package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// FsyncResult is the disk's rate of small durable writes: what bounds
// every journal commit on this machine at the time of a benchmark.
type FsyncResult struct {
	// Dir is the directory the file was written in (its file system is
	// the one measured).
	Dir string
	// Writes is the number of write+fsync pairs done in Elapsed.
	Writes  int
	Elapsed time.Duration
	// PerSecond is Writes / Elapsed.
	PerSecond float64
	// P50, P99 and Max are the latencies of one write+fsync.
	P50, P99, Max time.Duration
}

// String formats the result for people.
func (r FsyncResult) String() string {
	return fmt.Sprintf("fsync in %s: %d writes of 4 KiB, each followed by fsync, in %v = %.0f/s; write+fsync p50 %v p99 %v max %v\n",
		r.Dir, r.Writes, r.Elapsed.Round(time.Millisecond), r.PerSecond, r.P50, r.P99, r.Max)
}

// fsyncBlock is the size of each write: one page, like a small journal
// commit.
const fsyncBlock = 4096

// Fsync measures the disk under dir: it appends 4 KiB and fsyncs, one at a
// time, for d, in a temporary file it removes afterwards. This is the
// bound on serial journal commits (group commit puts many jobs in each).
func Fsync(ctx context.Context, dir string, d time.Duration) (res FsyncResult, err error) {
	if d <= 0 {
		return res, fmt.Errorf("fsync measurement needs a positive duration (got %v)", d)
	}
	f, err := os.CreateTemp(dir, "foreman-fsync-*")
	if err != nil {
		return res, fmt.Errorf("fsync measurement: %w", err)
	}
	defer func() {
		err = errors.Join(err, f.Close(), os.Remove(f.Name()))
	}()
	block := make([]byte, fsyncBlock)
	var lats []time.Duration
	t0 := time.Now()
	for time.Since(t0) < d && ctx.Err() == nil {
		t := time.Now()
		if _, err := f.Write(block); err != nil {
			return res, fmt.Errorf("fsync measurement: %w", err)
		}
		if err := f.Sync(); err != nil {
			return res, fmt.Errorf("fsync measurement: %w", err)
		}
		lats = append(lats, time.Since(t))
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	res = FsyncResult{Dir: dir, Writes: len(lats), Elapsed: time.Since(t0)}
	res.PerSecond = float64(res.Writes) / res.Elapsed.Seconds()
	res.P50, res.P99, res.Max = percentile(lats, 50), percentile(lats, 99), percentile(lats, 100)
	return res, nil
}
