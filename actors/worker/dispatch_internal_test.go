package worker

import (
	"bytes"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
)

// goid is the calling goroutine's id, read from its stack's first line
// ("goroutine 12 [running]:").
func goid() int {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf = bytes.TrimPrefix(buf, []byte("goroutine "))
	id, _ := strconv.Atoi(string(buf[:bytes.IndexByte(buf, ' ')]))
	return id
}

// TestExecDispatcher checks where runs go: to a goroutine waiting in the
// pool, or to a new one when the pool is busy, never waiting; and that the
// pool's goroutines end when idle or closed.
func TestExecDispatcher(t *testing.T) {
	t.Parallel()
	// schedule runs fn through d; the channel gives, before fn runs, the
	// id of the goroutine it runs on.
	schedule := func(d *execDispatcher, fn func()) <-chan int {
		on := make(chan int, 1)
		d.Schedule(func() {
			on <- goid()
			fn()
		})
		return on
	}
	wait := func(t *testing.T, on <-chan int) int {
		t.Helper()
		select {
		case id := <-on:
			return id
		case <-time.After(testkit.Timeout()):
			t.Fatal("a scheduled run never ran")
			return 0
		}
	}

	t.Run("ReusesAndNeverWaits", func(t *testing.T) {
		t.Parallel()
		d := newExecDispatcher(1, time.Hour)
		defer d.close()
		first := wait(t, schedule(d, func() {}))
		require.Eventually(t, func() bool { return d.members.Load() == 1 }, testkit.Timeout(), time.Millisecond,
			"after its run the goroutine joins the pool")
		// It may not be waiting yet: a run it misses gets a goroutine of
		// its own, which finds the pool full and ends.
		release := make(chan struct{})
		require.Eventually(t, func() bool {
			mine := make(chan struct{})
			if wait(t, schedule(d, func() { <-mine })) == first {
				go func() { <-release; close(mine) }()
				return true
			}
			close(mine)
			return false
		}, testkit.Timeout(), time.Millisecond, "the pool's goroutine takes the next run")

		// The pool's one goroutine is held: the next run must not wait.
		other := wait(t, schedule(d, func() {}))
		require.NotEqual(t, first, other, "with the pool busy, a run gets a goroutine of its own")
		close(release)
		require.Eventually(t, func() bool { return wait(t, schedule(d, func() {})) == first }, testkit.Timeout(), time.Millisecond,
			"the released goroutine takes runs again")
		require.LessOrEqual(t, d.members.Load(), int32(1), "the pool never holds more than its size")
	})

	t.Run("IdleGoroutinesEnd", func(t *testing.T) {
		t.Parallel()
		d := newExecDispatcher(4, 10*time.Millisecond)
		defer d.close()
		for range 8 {
			wait(t, schedule(d, func() {}))
		}
		require.Eventually(t, func() bool { return d.members.Load() == 0 }, testkit.Timeout(), time.Millisecond,
			"a worker nobody stops must not keep goroutines")
	})

	t.Run("CloseEndsThePool", func(t *testing.T) {
		t.Parallel()
		d := newExecDispatcher(4, time.Hour)
		wait(t, schedule(d, func() {}))
		require.Eventually(t, func() bool { return d.members.Load() == 1 }, testkit.Timeout(), time.Millisecond)
		d.close()
		require.Eventually(t, func() bool { return d.members.Load() == 0 }, testkit.Timeout(), time.Millisecond)
		wait(t, schedule(d, func() {})) // a later run still runs
		require.Eventually(t, func() bool { return d.members.Load() == 0 }, testkit.Timeout(), time.Millisecond)
	})
}
