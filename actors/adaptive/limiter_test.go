package adaptive_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/adaptive"
	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/testkit"
)

// waitQueued spins (yielding, not sleeping) until n callers wait in Acquire.
func waitQueued(t *testing.T, l *adaptive.Limiter, n int) {
	t.Helper()
	deadline := time.Now().Add(testkit.Timeout())
	for l.Stats().Queue != n {
		require.True(t, time.Now().Before(deadline), "expected %d waiting, have %d", n, l.Stats().Queue)
		runtime.Gosched()
	}
}

func TestLimiter(t *testing.T) {
	t.Parallel()

	t.Run("AcquireWaitsForAFreeSlot", func(t *testing.T) {
		t.Parallel()
		l, err := adaptive.NewLimiter(adaptive.WithCustomPolicy(adaptive.Fixed(2)))
		require.NoError(t, err)
		ctx := context.Background()
		p1, err := l.Acquire(ctx)
		require.NoError(t, err)
		_, err = l.Acquire(ctx)
		require.NoError(t, err)
		got := make(chan *adaptive.Permit)
		go func() {
			p, err := l.Acquire(ctx)
			if err == nil {
				got <- p
			}
		}()
		waitQueued(t, l, 1)
		require.Equal(t, 2, l.Stats().InFlight)
		p1.Release()
		select {
		case p := <-got:
			p.Release()
		case <-time.After(testkit.Timeout()):
			t.Fatal("the waiting Acquire did not get the freed slot")
		}
		p1.Release() // extra release: no effect
		require.Equal(t, adaptive.Stats{InFlight: 1, Limit: 2, Completed: 2}, l.Stats())
	})

	t.Run("ReleaseTeachesThePolicy", func(t *testing.T) {
		t.Parallel()
		clk := clock.NewManual(epoch)
		r := &recorder{level: 1}
		l, err := adaptive.NewLimiter(adaptive.WithCustomPolicy(r), adaptive.WithClock(clk), adaptive.WithCPU(func() float64 { return 0.25 }))
		require.NoError(t, err)
		p, err := l.Acquire(context.Background())
		require.NoError(t, err)
		clk.Advance(3 * time.Second)
		p.Release()
		require.Equal(t, []adaptive.Observation{{Arrival: epoch, Started: epoch, InFlight: 1, Limit: 1, CPU: 0.25}}, r.obs)
		require.Equal(t, []time.Time{epoch.Add(3 * time.Second)}, r.at)
		p, err = l.Acquire(context.Background())
		require.NoError(t, err)
		p.Abandon()
		require.Len(t, r.obs, 1, "an abandoned permit teaches nothing")
		require.Equal(t, 1, l.Limit())
	})

	t.Run("CancelledAcquireLeavesTheQueue", func(t *testing.T) {
		t.Parallel()
		l, err := adaptive.NewLimiter(adaptive.WithCustomPolicy(adaptive.Fixed(1)))
		require.NoError(t, err)
		_, err = l.Acquire(context.Background())
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error)
		go func() {
			_, err := l.Acquire(ctx)
			errc <- err
		}()
		waitQueued(t, l, 1)
		cancel()
		require.ErrorIs(t, <-errc, context.Canceled)
		require.Equal(t, 0, l.Stats().Queue)
		_, err = l.Acquire(ctx)
		require.ErrorIs(t, err, context.Canceled, "a done context fails at once")
	})

	t.Run("CloseFailsWaitersAndLaterCalls", func(t *testing.T) {
		t.Parallel()
		l, err := adaptive.NewLimiter(adaptive.WithCustomPolicy(adaptive.Fixed(1)))
		require.NoError(t, err)
		held, err := l.Acquire(context.Background())
		require.NoError(t, err)
		errc := make(chan error)
		go func() {
			_, err := l.Acquire(context.Background())
			errc <- err
		}()
		waitQueued(t, l, 1)
		l.Close()
		l.Close()
		require.ErrorIs(t, <-errc, adaptive.ErrClosed)
		_, err = l.Acquire(context.Background())
		require.ErrorIs(t, err, adaptive.ErrClosed)
		held.Release()
		require.Equal(t, 0, l.Stats().InFlight)
	})

	t.Run("NeverMoreThanTheLimitConcurrently", func(t *testing.T) {
		t.Parallel()
		l, err := adaptive.NewLimiter(adaptive.WithCustomPolicy(adaptive.Fixed(3)))
		require.NoError(t, err)
		var inside, peak atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 200 {
					p, err := l.Acquire(context.Background())
					if err != nil {
						t.Error(err)
						return
					}
					n := inside.Add(1)
					for {
						m := peak.Load()
						if n <= m || peak.CompareAndSwap(m, n) {
							break
						}
					}
					runtime.Gosched()
					inside.Add(-1)
					p.Release()
				}
			})
		}
		wg.Wait()
		require.LessOrEqual(t, peak.Load(), int32(3))
		require.Equal(t, uint64(1600), l.Stats().Completed)
	})
}
