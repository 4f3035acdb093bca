package worker

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
)

// TestExecDispatcher checks where runs go: to an idle pool goroutine, or
// to a goroutine of their own when the pool is busy, never waiting.
func TestExecDispatcher(t *testing.T) {
	t.Parallel()
	// schedule runs fn through d; the channel tells, before fn runs,
	// whether the run is on one of d's pool goroutines (runtime.Stack
	// names the goroutine's creator).
	schedule := func(d *execDispatcher, fn func()) <-chan bool {
		where := make(chan bool, 1)
		d.Schedule(func() {
			buf := make([]byte, 8<<10)
			stack := string(buf[:runtime.Stack(buf, false)])
			where <- strings.Contains(stack, "created by github.com/foreman-actors/foreman/actors/worker.newExecDispatcher")
			fn()
		})
		return where
	}
	onPool := func(t *testing.T, where <-chan bool) bool {
		t.Helper()
		select {
		case p := <-where:
			return p
		case <-time.After(testkit.Timeout()):
			t.Fatal("a scheduled run never ran")
			return false
		}
	}

	d := newExecDispatcher(1)
	// The pool goroutine may not be waiting yet when a run comes: then the
	// run gets a goroutine of its own, and the test tries again.
	release := make(chan struct{})
	require.Eventually(t, func() bool {
		mine := make(chan struct{})
		if onPool(t, schedule(d, func() { <-mine })) {
			go func() { <-release; close(mine) }()
			return true
		}
		close(mine)
		return false
	}, testkit.Timeout(), time.Millisecond, "an idle pool goroutine takes the run")

	// The pool's one goroutine is held: the next run must not wait for it.
	done := make(chan struct{})
	require.False(t, onPool(t, schedule(d, func() { close(done) })), "with the pool busy, a run gets a goroutine of its own")
	<-done
	close(release)

	require.Eventually(t, func() bool { return onPool(t, schedule(d, func() {})) }, testkit.Timeout(), time.Millisecond,
		"the released pool goroutine takes runs again")

	// After close a run still runs (on a pool goroutine that has not seen
	// the close yet, or on its own); the pool goroutines end, which the
	// package's leak check (TestMain) verifies.
	d.close()
	for range 10 {
		onPool(t, schedule(d, func() {}))
	}
}
