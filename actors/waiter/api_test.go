package waiter_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/waiter"
)

// newAPI starts an API on a fresh test system and stops it (gracefully) in
// t.Cleanup, before the system shuts down.
func newAPI[W, R any](t *testing.T, fn func(context.Context, W) (R, error), opts ...waiter.Option) *waiter.API[W, R] {
	t.Helper()
	sys := testkit.NewSystem(t)
	a, err := waiter.New(sys, fn, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { stop(t, a) })
	return a
}

func stop[W, R any](t *testing.T, a *waiter.API[W, R]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer cancel()
	require.NoError(t, a.Stop(ctx))
}

// waitFor polls cond (a snapshot read, not a sleep to let things happen)
// until it holds or testkit.Timeout passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, testkit.Timeout(), time.Millisecond, "waiting for %s", what)
}

// gate is a work function that records which jobs started and blocks each
// until released (or until its context is cancelled, if it honours ctx).
type gate struct {
	honourCtx bool
	started   chan int
	release   chan struct{}
	cancelled chan int
	calls     atomic.Int64
}

func newGate(honourCtx bool) *gate {
	return &gate{honourCtx: honourCtx, started: make(chan int, 100), release: make(chan struct{}), cancelled: make(chan int, 100)}
}

func (g *gate) work(ctx context.Context, n int) (int, error) {
	g.calls.Add(1)
	g.started <- n
	if g.honourCtx {
		select {
		case <-g.release:
		case <-ctx.Done():
			g.cancelled <- n
			return 0, ctx.Err()
		}
	} else {
		<-g.release
	}
	return n * 10, nil
}

func (g *gate) expectStarted(t *testing.T, want int) {
	t.Helper()
	select {
	case got := <-g.started:
		require.Equal(t, want, got, "job started")
	case <-time.After(testkit.Timeout()):
		t.Fatalf("job %d did not start within %v", want, testkit.Timeout())
	}
}

type result struct {
	v   int
	err error
}

// goDo runs Do in a goroutine and returns the channel its result arrives on.
func goDo(ctx context.Context, a *waiter.API[int, int], n int) <-chan result {
	ch := make(chan result, 1)
	go func() {
		v, err := a.Do(ctx, n)
		ch <- result{v, err}
	}()
	return ch
}

func receive(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(testkit.Timeout()):
		t.Fatalf("Do did not return within %v", testkit.Timeout())
		return result{}
	}
}

func TestDo(t *testing.T) {
	t.Parallel()

	t.Run("ReturnsTheResult", func(t *testing.T) {
		t.Parallel()
		a := newAPI(t, func(_ context.Context, n int) (int, error) { return n * 2, nil })
		v, err := a.Do(context.Background(), 21)
		require.NoError(t, err)
		require.Equal(t, 42, v)
		stop(t, a)
		s := a.Stats()
		require.Equal(t, uint64(1), s.Submitted)
		require.Equal(t, uint64(1), s.Started)
		require.Equal(t, uint64(1), s.Completed)
		require.Zero(t, s.Running)
	})

	t.Run("CallerWithoutDeadlineWaitsForTheResult", func(t *testing.T) {
		t.Parallel()
		g := newGate(false)
		a := newAPI(t, g.work)
		res := goDo(context.Background(), a, 7)
		g.expectStarted(t, 7)
		select {
		case r := <-res:
			t.Fatalf("Do returned %+v before the work finished", r)
		default:
		}
		close(g.release)
		r := receive(t, res)
		require.NoError(t, r.err)
		require.Equal(t, 70, r.v)
	})

	t.Run("WorkErrorIsDoError", func(t *testing.T) {
		t.Parallel()
		boom := errors.New("boom")
		a := newAPI(t, func(context.Context, int) (int, error) { return 0, boom })
		_, err := a.Do(context.Background(), 1)
		require.ErrorIs(t, err, boom)
		stop(t, a)
		require.Equal(t, uint64(1), a.Stats().Failed)
	})

	t.Run("PanicIsAnErrorAndTheSchedulerKeepsGoing", func(t *testing.T) {
		t.Parallel()
		a := newAPI(t, func(_ context.Context, n int) (int, error) {
			if n == 0 {
				panic("division by zero")
			}
			return 100 / n, nil
		}, waiter.WithConcurrency(1))
		_, err := a.Do(context.Background(), 0)
		require.ErrorIs(t, err, waiter.ErrWorkPanicked)
		require.ErrorContains(t, err, "division by zero")
		v, err := a.Do(context.Background(), 4)
		require.NoError(t, err)
		require.Equal(t, 25, v)
		stop(t, a)
		s := a.Stats()
		require.Equal(t, uint64(1), s.Failed)
		require.Equal(t, uint64(1), s.Completed)
	})

	t.Run("AlreadyDoneContextSubmitsNothing", func(t *testing.T) {
		t.Parallel()
		g := newGate(false)
		a := newAPI(t, g.work)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := a.Do(ctx, 1)
		require.ErrorIs(t, err, waiter.ErrCancelled)
		require.ErrorIs(t, err, context.Canceled)
		stop(t, a)
		require.Zero(t, a.Stats().Submitted)
		require.Zero(t, g.calls.Load())
	})
}

// Reference: seed 003, "What this does is allows you to not start work that
// would be needless due to the caller's lack of interest in the result".
func TestCallerGivesUp(t *testing.T) {
	t.Parallel()

	t.Run("CancelWhileRunningCancelsTheWorkContext", func(t *testing.T) {
		t.Parallel()
		g := newGate(true)
		a := newAPI(t, g.work)
		ctx, cancel := context.WithCancel(context.Background())
		res := goDo(ctx, a, 1)
		g.expectStarted(t, 1)
		cancel()
		r := receive(t, res)
		require.ErrorIs(t, r.err, waiter.ErrCancelled)
		require.ErrorIs(t, r.err, context.Canceled)
		require.NotErrorIs(t, r.err, waiter.ErrTimeout)
		select {
		case n := <-g.cancelled:
			require.Equal(t, 1, n)
		case <-time.After(testkit.Timeout()):
			t.Fatal("the work function's context was not cancelled")
		}
		stop(t, a)
		s := a.Stats()
		require.Equal(t, uint64(1), s.Started)
		require.Equal(t, uint64(1), s.CancelledWhileRunning)
		require.Equal(t, s.BusyTime, s.WastedTime)
	})

	t.Run("CancelWhileQueuedIsNeverStarted", func(t *testing.T) {
		t.Parallel()
		g := newGate(false)
		a := newAPI(t, g.work, waiter.WithConcurrency(1))
		first := goDo(context.Background(), a, 1)
		g.expectStarted(t, 1)
		ctx, cancel := context.WithCancel(context.Background())
		second := goDo(ctx, a, 2)
		waitFor(t, "job 2 queued", func() bool { return a.Stats().Backlog == 1 })
		cancel()
		r := receive(t, second)
		require.ErrorIs(t, r.err, waiter.ErrCancelled)
		close(g.release)
		require.NoError(t, receive(t, first).err)
		stop(t, a)
		require.Equal(t, int64(1), g.calls.Load(), "job 2 must never run")
		s := a.Stats()
		require.Equal(t, uint64(1), s.Started)
		require.Equal(t, uint64(1), s.Skipped)
		require.Equal(t, uint64(2), s.Finished())
	})

	t.Run("TheWaitersOwnDeadlineFailsThePromise", func(t *testing.T) {
		t.Parallel()
		// The WorkWaiter reads the deadline against the API's clock: with a
		// clock already past the ctx deadline, the waiter gives up at once,
		// before ctx itself is done, and the job is skipped.
		g := newGate(false)
		manual := clock.NewManual(time.Now().Add(2 * time.Hour))
		a := newAPI(t, g.work, waiter.WithClock(manual))
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		_, err := a.Do(ctx, 1)
		require.ErrorIs(t, err, waiter.ErrTimeout)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NoError(t, ctx.Err(), "the caller's ctx is still live: the waiter gave up on its own")
		stop(t, a)
		require.Zero(t, g.calls.Load())
		require.Equal(t, uint64(1), a.Stats().Skipped)
	})
}

// Reference: seed 003, WorkWaiter: "We were interested, but didn't get the
// answer in time, so we're not interested any more" (ReceiveTimeout). The
// waiter's deadline timer runs on the API's clock, so a manual clock fires it
// deterministically, before the caller's (real-time) ctx is done.
func TestWaiterDeadlineOnManualClock(t *testing.T) {
	t.Parallel()
	g := newGate(true)
	manual := clock.NewManual(time.Now())
	a := newAPI(t, g.work, waiter.WithClock(manual))
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	res := goDo(ctx, a, 1)
	g.expectStarted(t, 1)
	// The worker's ask timer is stopped before the work starts, so the only
	// timer left is the waiter's deadline.
	require.True(t, manual.WaitForPending(ctx.Done(), 1))
	require.Equal(t, 1, manual.Pending())
	manual.Advance(2 * time.Hour) // past the deadline, which is a little over 1 h after manual.Now()
	r := receive(t, res)
	require.ErrorIs(t, r.err, waiter.ErrTimeout)
	require.ErrorIs(t, r.err, context.DeadlineExceeded)
	require.NoError(t, ctx.Err(), "the caller's own ctx is still live")
	select {
	case <-g.cancelled: // the running work was told: its ctx was cancelled
	case <-time.After(testkit.Timeout()):
		t.Fatal("the running work's context was not cancelled at the waiter's deadline")
	}
	stop(t, a)
	require.Equal(t, uint64(1), a.Stats().CancelledWhileRunning)
	require.Zero(t, manual.Pending(), "every timer is stopped")
}

func TestBacklog(t *testing.T) {
	t.Parallel()

	t.Run("FullBacklogRejects", func(t *testing.T) {
		t.Parallel()
		g := newGate(false)
		a := newAPI(t, g.work, waiter.WithConcurrency(1), waiter.WithMaxBacklog(1))
		first := goDo(context.Background(), a, 1)
		g.expectStarted(t, 1)
		second := goDo(context.Background(), a, 2)
		waitFor(t, "job 2 queued", func() bool { return a.Stats().Backlog == 1 })
		_, err := a.Do(context.Background(), 3)
		require.ErrorIs(t, err, waiter.ErrBacklogFull)
		require.ErrorContains(t, err, "WithMaxBacklog(1)")
		close(g.release)
		require.NoError(t, receive(t, first).err)
		require.NoError(t, receive(t, second).err)
		stop(t, a)
		s := a.Stats()
		require.Equal(t, uint64(1), s.Rejected)
		require.Equal(t, uint64(2), s.Completed)
		require.Equal(t, int64(2), g.calls.Load())
	})

	for _, tt := range []struct {
		name  string
		order waiter.Order
		want  []int
	}{
		{name: "FIFOServesOldestFirst", order: waiter.FIFO, want: []int{2, 3, 4}},
		{name: "LIFOServesNewestFirst", order: waiter.LIFO, want: []int{4, 3, 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newGate(false)
			a := newAPI(t, g.work, waiter.WithConcurrency(1), waiter.WithOrder(tt.order))
			results := []<-chan result{goDo(context.Background(), a, 1)}
			g.expectStarted(t, 1)
			for n := 2; n <= 4; n++ {
				results = append(results, goDo(context.Background(), a, n))
				waitFor(t, "job queued", func() bool { return a.Stats().Backlog == n-1 })
			}
			close(g.release)
			for _, want := range tt.want {
				g.expectStarted(t, want)
			}
			for _, r := range results {
				require.NoError(t, receive(t, r).err)
			}
		})
	}
}

func TestStop(t *testing.T) {
	t.Parallel()

	t.Run("GracefulStopFinishesQueuedWorkThenRefuses", func(t *testing.T) {
		t.Parallel()
		g := newGate(false)
		sys := testkit.NewSystem(t)
		a, err := waiter.New(sys, g.work, waiter.WithConcurrency(1))
		require.NoError(t, err)
		first := goDo(context.Background(), a, 1)
		g.expectStarted(t, 1)
		second := goDo(context.Background(), a, 2)
		waitFor(t, "job 2 queued", func() bool { return a.Stats().Backlog == 1 })

		stopped := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
			defer cancel()
			stopped <- a.Stop(ctx)
		}()
		waitFor(t, "Do refused", func() bool {
			// Before Stop has closed the API this job is queued, times out
			// and is skipped; after, Do fails fast.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
			defer cancel()
			_, err := a.Do(ctx, 3)
			return errors.Is(err, waiter.ErrClosed)
		})
		select {
		case err := <-stopped:
			t.Fatalf("Stop returned %v with work still running", err)
		default:
		}
		close(g.release)
		require.NoError(t, receive(t, first).err)
		require.NoError(t, receive(t, second).err)
		select {
		case err := <-stopped:
			require.NoError(t, err)
		case <-time.After(testkit.Timeout()):
			t.Fatal("Stop did not return")
		}
		require.NoError(t, a.Stop(context.Background()), "a second Stop is a no-op")
		_, err = a.Do(context.Background(), 4)
		require.ErrorIs(t, err, waiter.ErrClosed)
		s := a.Stats()
		require.Equal(t, uint64(2), s.Completed)
		require.Equal(t, int64(2), g.calls.Load())
		require.Equal(t, s.Submitted-2, s.Skipped, "probes queued before the close were skipped")
	})

	t.Run("ExpiredStopDropsQueuedAndCancelsRunning", func(t *testing.T) {
		t.Parallel()
		g := newGate(true)
		sys := testkit.NewSystem(t)
		a, err := waiter.New(sys, g.work, waiter.WithConcurrency(1))
		require.NoError(t, err)
		first := goDo(context.Background(), a, 1)
		g.expectStarted(t, 1)
		second := goDo(context.Background(), a, 2)
		waitFor(t, "job 2 queued", func() bool { return a.Stats().Backlog == 1 })

		expired, cancel := context.WithCancel(context.Background())
		cancel()
		err = a.Stop(expired)
		require.ErrorIs(t, err, context.Canceled)

		r1, r2 := receive(t, first), receive(t, second)
		require.ErrorIs(t, r1.err, waiter.ErrClosed, "running job cancelled by Stop")
		require.ErrorIs(t, r2.err, waiter.ErrClosed, "queued job dropped by Stop")
		stop(t, a) // now completes
		s := a.Stats()
		require.Equal(t, uint64(1), s.Dropped)
		require.Equal(t, uint64(1), s.CancelledWhileRunning)
		require.Equal(t, int64(1), g.calls.Load())
	})
}

func TestNewRejectsBadInput(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	fn := func(context.Context, int) (int, error) { return 0, nil }
	for _, tt := range []struct {
		name string
		opt  waiter.Option
		want string
	}{
		{name: "ZeroConcurrency", opt: waiter.WithConcurrency(0), want: "WithConcurrency(0)"},
		{name: "NegativeBacklog", opt: waiter.WithMaxBacklog(-1), want: "WithMaxBacklog(-1)"},
		{name: "UnknownOrder", opt: waiter.WithOrder(waiter.Order(0)), want: "WithOrder(Order(0))"},
		{name: "ZeroAskTimeout", opt: waiter.WithAskTimeout(0), want: "WithAskTimeout(0s)"},
		{name: "NilClock", opt: waiter.WithClock(nil), want: "WithClock(nil)"},
		{name: "NilLogger", opt: waiter.WithLogger(nil), want: "WithLogger(nil)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := waiter.New(sys, fn, tt.opt)
			require.ErrorIs(t, err, waiter.ErrInvalidOption)
			require.ErrorContains(t, err, tt.want)
		})
	}
	_, err := waiter.New[int, int](sys, nil)
	require.ErrorIs(t, err, waiter.ErrInvalidOption)
	_, err = waiter.New(nil, fn)
	require.ErrorIs(t, err, waiter.ErrInvalidOption)
}

// TestHundredJobs is the scenario, in real time: 100 jobs of 100 ms,
// concurrency 2, every caller's timeout 1 s. About 20 jobs run (2 slots x
// 10 per second) and the rest are never started.
func TestHundredJobs(t *testing.T) {
	t.Parallel()
	const (
		jobs        = 100
		workTime    = 100 * time.Millisecond
		timeout     = time.Second
		margin      = 500 * time.Millisecond // a loaded 2-core machine
		maxExpected = 2*int(timeout/workTime) + 4
		minExpected = 8
	)
	var invocations atomic.Int64
	a := newAPI(t, func(ctx context.Context, _ int) (int, error) {
		invocations.Add(1)
		// Simulated work that honours ctx (not a synchronisation sleep).
		tm := time.NewTimer(workTime)
		defer tm.Stop()
		select {
		case <-tm.C:
			return 1, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}, waiter.WithConcurrency(2))

	var wg sync.WaitGroup
	var ok, timedOut atomic.Int64
	late := make(chan time.Duration, jobs)
	for i := range jobs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			start := time.Now()
			_, err := a.Do(ctx, i)
			if took := time.Since(start); took > timeout+margin {
				late <- took
			}
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, waiter.ErrTimeout) && errors.Is(err, context.DeadlineExceeded):
				timedOut.Add(1)
			default:
				t.Errorf("job %d: unexpected error %v", i, err)
			}
		})
	}
	wg.Wait()
	close(late)
	for took := range late {
		t.Errorf("a Do returned %v after it started, over its 1 s deadline plus %v", took, margin)
	}
	stop(t, a) // graceful: the remaining queued jobs are skipped
	s := a.Stats()
	t.Logf("ok=%d timed_out=%d stats=%+v", ok.Load(), timedOut.Load(), s)

	require.Equal(t, int64(jobs), ok.Load()+timedOut.Load())
	require.Equal(t, uint64(jobs), s.Submitted)
	require.Equal(t, uint64(invocations.Load()), s.Started, "Started counts invocations exactly")
	require.Equal(t, uint64(jobs), s.Started+s.Skipped, "every job either ran or was skipped")
	require.GreaterOrEqual(t, int(s.Started), minExpected)
	// Two slots for about a second run at most maxExpected jobs to the end;
	// a run cancelled because its caller left frees its slot early, so
	// each of those may let one more start (a loaded CI run started 26:
	// 18 completed, 8 cancelled while running).
	require.LessOrEqual(t, int(s.Completed), maxExpected)
	require.LessOrEqual(t, int(s.Started), maxExpected+int(s.CancelledWhileRunning))
	require.Equal(t, s.Started, s.Completed+s.CancelledWhileRunning+s.Failed)
	// A run that ends just as its caller's deadline passes counts as
	// completed while its caller saw a timeout, so only <= holds exactly.
	require.LessOrEqual(t, uint64(ok.Load()), s.Completed)
	// Callers started over a spread of time, so their deadlines pass over a
	// spread too: FIFO then starts some jobs whose callers leave soon after
	// (LIFO avoids that). How many depends on how widely the scheduler
	// spread the callers (a loaded CI run cancelled 16 of 34), so the count
	// is not bounded here; that such runs are cut short when their caller
	// leaves is TestCallerGivesUp's deterministic case.
	require.LessOrEqual(t, s.WastedTime, s.BusyTime)
}

// TestStopWhileCallersArrive races Stop against callers: every Do returns
// (a result or ErrClosed), Stop returns, and nothing is left behind.
func TestStopWhileCallersArrive(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	a, err := waiter.New(sys, func(_ context.Context, n int) (int, error) { return n, nil }, waiter.WithConcurrency(2))
	require.NoError(t, err)
	var wg sync.WaitGroup
	var ok, closed atomic.Int64
	for i := range 200 {
		wg.Go(func() {
			v, err := a.Do(context.Background(), i)
			switch {
			case err == nil && v == i:
				ok.Add(1)
			case errors.Is(err, waiter.ErrClosed):
				closed.Add(1)
			default:
				t.Errorf("Do(%d) = %d, %v", i, v, err)
			}
		})
		if i == 100 {
			wg.Go(func() { stop(t, a) })
		}
	}
	wg.Wait()
	stop(t, a)
	s := a.Stats()
	require.Equal(t, int64(200), ok.Load()+closed.Load())
	require.Equal(t, uint64(ok.Load()), s.Completed, "every accepted job ran before Stop returned")
	require.Equal(t, s.Submitted, s.Completed)
}
