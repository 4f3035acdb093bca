package clock_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/clock"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestManual(t *testing.T) {
	t.Parallel()

	t.Run("AfterFuncFiresOnlyWhenDue", func(t *testing.T) {
		t.Parallel()
		c := clock.NewManual(epoch)
		var fired atomic.Int32
		var at time.Time
		c.AfterFunc(time.Second, func() { fired.Add(1); at = c.Now() })
		c.Advance(999 * time.Millisecond)
		require.Equal(t, int32(0), fired.Load())
		c.Advance(time.Millisecond)
		require.Equal(t, int32(1), fired.Load())
		require.Equal(t, epoch.Add(time.Second), at)
		c.Advance(time.Hour)
		require.Equal(t, int32(1), fired.Load(), "a timer fires once")
	})

	t.Run("StopPreventsFiring", func(t *testing.T) {
		t.Parallel()
		c := clock.NewManual(epoch)
		var fired atomic.Int32
		tm := c.AfterFunc(time.Second, func() { fired.Add(1) })
		require.True(t, tm.Stop())
		require.False(t, tm.Stop())
		c.Advance(2 * time.Second)
		require.Equal(t, int32(0), fired.Load())
		require.Equal(t, 0, c.Pending())
	})

	t.Run("ResetMovesDueTime", func(t *testing.T) {
		t.Parallel()
		c := clock.NewManual(epoch)
		tm := c.NewTimer(time.Second)
		c.Advance(500 * time.Millisecond)
		require.True(t, tm.Reset(time.Second))
		c.Advance(600 * time.Millisecond)
		select {
		case <-tm.C():
			t.Fatal("timer fired before its reset due time")
		default:
		}
		c.Advance(400 * time.Millisecond)
		require.Equal(t, epoch.Add(1500*time.Millisecond), <-tm.C())
	})

	t.Run("TickerTicksEachPeriodInOrder", func(t *testing.T) {
		t.Parallel()
		c := clock.NewManual(epoch)
		var order []string
		tk := c.NewTicker(300 * time.Millisecond)
		c.AfterFunc(500*time.Millisecond, func() { order = append(order, "timer") })
		c.Advance(300 * time.Millisecond)
		require.Equal(t, epoch.Add(300*time.Millisecond), <-tk.C())
		c.Advance(300 * time.Millisecond)
		require.Equal(t, []string{"timer"}, order)
		require.Equal(t, epoch.Add(600*time.Millisecond), <-tk.C())
		tk.Stop()
		c.Advance(time.Second)
		select {
		case <-tk.C():
			t.Fatal("stopped ticker ticked")
		default:
		}
	})

	t.Run("WaitForPending", func(t *testing.T) {
		t.Parallel()
		c := clock.NewManual(epoch)
		go c.AfterFunc(time.Second, func() {})
		done := make(chan struct{})
		time.AfterFunc(10*time.Second, func() { close(done) })
		require.True(t, c.WaitForPending(done, 1))
		require.Equal(t, []time.Time{epoch.Add(time.Second)}, c.NextDue())
	})

	t.Run("OrReal", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, clock.Real, clock.OrReal(nil))
		c := clock.NewManual(epoch)
		require.Equal(t, clock.Clock(c), clock.OrReal(c))
	})
}
