package worker_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/adaptive"
	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/waiter"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/messages"
)

// Reference: seed 003, "before starting the work, the Worker asks the
// WorkWaiter whether it is still interested"; the worker of the distributed
// system does the same with the Work's waiter (messages.Work.waiter).

func withWaiter(w *messages.Work, pid *actor.PID) *messages.Work {
	w.Waiter = pids.Wire(pid)
	return w
}

// startedWithin reports the id of a "block" job that started within d, or "".
func startedWithin(b *testBundle, d time.Duration) string {
	select {
	case id := <-b.started:
		return id
	case <-time.After(d):
		return ""
	}
}

func TestWorkerAsksTheCallersWaiter(t *testing.T) {
	t.Parallel()

	t.Run("StillInterestedRunsTheJob", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t)
		in := waiter.NewInterest(t.Context(), b.sys)
		t.Cleanup(in.Close)
		b.master.Send(pid, withWaiter(work("a", "echo", "49"), in.PID()))
		b.master.ExpectMsg(&messages.WorkIsDone{WorkerId: "w1", WorkId: "a", Result: []byte("49")}, testkit.Timeout())
	})

	t.Run("CallerGoneBeforeStartIsNotStarted", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t)
		ctx, cancel := context.WithCancel(t.Context())
		in := waiter.NewInterest(ctx, b.sys)
		t.Cleanup(in.Close)
		cancel()
		// The Interest answers "no longer interested" once it has seen its
		// ctx end; until then it may still say yes, so try until it says no.
		var f *messages.WorkFailed
		for i := 0; f == nil; i++ {
			require.Less(t, i, 100, "the Interest never said no")
			id := fmt.Sprint("gone-", i)
			b.master.Send(pid, withWaiter(work(id, "echo", id), in.PID()))
			switch m := b.master.FishForMessage(testkit.Timeout(), func(m any) bool {
				switch m.(type) {
				case *messages.WorkFailed, *messages.WorkIsDone:
					return true
				}
				return false
			}).(type) {
			case *messages.WorkFailed:
				f = m
			case *messages.WorkIsDone:
				b.master.Reply(&messages.Ack{WorkId: m.GetWorkId()})
			}
		}
		require.Contains(t, f.GetError(), worker.ErrCallerGone.Error())
		require.Contains(t, f.GetError(), "IAmNoLongerInterested")
	})

	t.Run("CallerGoneJobNeverStartsAndNextWorkRuns", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t) // window 1: the second work waits in the local queue
		ctx, cancel := context.WithCancel(t.Context())
		gone := waiter.NewInterest(ctx, b.sys)
		t.Cleanup(gone.Close)
		cancel()
		live := waiter.NewInterest(t.Context(), b.sys)
		t.Cleanup(live.Close)
		// Ask the gone Interest (from a probe: it also pushes "no" to those
		// it told yes) until it has seen its ctx end.
		asker := testkit.NewProbe(t, b.sys)
		asker.IgnoreMsg(func(m any) bool { _, ok := m.(*messages.IAmStillInterested); return ok })
		for {
			asker.Request(gone.PID(), &messages.AreYouStillInterested{})
			if _, ok := asker.ReceiveOne(20 * time.Millisecond); ok {
				break
			}
		}

		b.master.Send(pid, withWaiter(work("skip", "block", "skip"), gone.PID()))
		b.master.Send(pid, withWaiter(work("next", "echo", "next"), live.PID()))
		f := testkit.ExpectMsgType[*messages.WorkFailed](b.master, testkit.Timeout())
		require.Equal(t, "skip", f.GetWorkId())
		require.Contains(t, f.GetError(), worker.ErrCallerGone.Error())
		b.master.FishForMessage(testkit.Timeout(), func(m any) bool {
			d, ok := m.(*messages.WorkIsDone)
			return ok && d.GetWorkId() == "next"
		})
		require.Empty(t, b.started, "the job of the caller that left must not start")
	})

	t.Run("WaiterGoneIsCallerGone", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t)
		dead := actor.NewPID(b.sys.Address(), "no-such-waiter")
		b.master.Send(pid, withWaiter(work("d", "block", "d"), dead))
		f := testkit.ExpectMsgType[*messages.WorkFailed](b.master, testkit.Timeout())
		require.Contains(t, f.GetError(), worker.ErrCallerGone.Error())
		require.Contains(t, f.GetError(), "dead letter")
		require.Empty(t, b.started)
	})

	t.Run("NoAnswerWithinTheTimeoutIsCallerGone", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t, worker.WithInterestTimeout(3*time.Second), worker.WithRegisterInterval(time.Hour))
		silent := testkit.NewProbe(t, b.sys)
		b.master.Send(pid, withWaiter(work("s", "block", "s"), silent.PID()))
		testkit.ExpectMsgType[*messages.AreYouStillInterested](silent, testkit.Timeout())
		waitTimers(t, b.clk, 3) // register, ask, and the watcher's retry (armed by another goroutine: waiting for two raced the ask)
		b.clk.Advance(3*time.Second - time.Millisecond)
		b.master.ExpectNoMsg(20 * time.Millisecond)
		b.clk.Advance(time.Millisecond)
		f := testkit.ExpectMsgType[*messages.WorkFailed](b.master, testkit.Timeout())
		require.Contains(t, f.GetError(), "did not answer AreYouStillInterested within 3s")
		require.Empty(t, b.started)
		// A late yes changes nothing.
		silent.Reply(&messages.IAmStillInterested{WorkId: "s"})
		require.Empty(t, startedWithin(b, 50*time.Millisecond))
	})

	t.Run("CallerLeavingCancelsTheRunningJob", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t)
		ctx, cancel := context.WithCancel(t.Context())
		in := waiter.NewInterest(ctx, b.sys)
		t.Cleanup(in.Close)
		b.master.Send(pid, withWaiter(work("r", "block", "r"), in.PID()))
		require.Equal(t, "r", startedWithin(b, testkit.Timeout()), "the caller waits: the job starts")
		cancel() // the Interest tells the worker it told yes
		select {
		case err := <-b.ctxErrs:
			require.ErrorIs(t, err, worker.ErrCallerGone, "the job learns why")
		case <-time.After(testkit.Timeout()):
			t.Fatal("the running job's ctx was not cancelled")
		}
		f := testkit.ExpectMsgType[*messages.WorkFailed](b.master, testkit.Timeout())
		require.Equal(t, "r", f.GetWorkId())
		require.Contains(t, f.GetError(), worker.ErrCallerGone.Error())
		require.Contains(t, f.GetError(), "while the job ran")
	})

	t.Run("WorkWithoutWaiterIsNotAsked", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t)
		b.master.Send(pid, work("plain", "echo", "1"))
		b.master.ExpectMsg(&messages.WorkIsDone{WorkerId: "w1", WorkId: "plain", Result: []byte("1")}, testkit.Timeout())
	})
}

// limiterBundle is a node's workers sharing one limiter, with a probe as
// their master.
type limiterBundle struct {
	*testBundle
	lim     *adaptive.Limiter
	workers []*actor.PID
}

// setupShared spawns n workers with the given window that share a limiter
// with a fixed limit, and waits for their registrations.
func setupShared(t *testing.T, n, window, limit int, opts ...worker.Option) *limiterBundle {
	t.Helper()
	b := &testBundle{release: make(chan struct{}), started: make(chan string, 16), ctxErrs: make(chan error, 16)}
	b.sys = testkit.NewSystem(t)
	b.master = testkit.NewProbe(t, b.sys)
	b.master.IgnoreMsg(func(m any) bool { _, ok := m.(*messages.RegisterWorker); return ok })
	b.clk = clock.NewManual(epoch)
	b.reg = testRegistry(t, b)
	lim, err := adaptive.NewLimiter(adaptive.WithCustomPolicy(adaptive.Fixed(limit)), adaptive.WithClock(b.clk))
	require.NoError(t, err)
	lb := &limiterBundle{testBundle: b, lim: lim}
	for i := range n {
		// Results leave at once: these tests follow permits, and a result
		// held on the manual clock would wait for an Advance.
		all := append([]worker.Option{worker.WithClock(b.clk), worker.WithWorkerID(fmt.Sprint("w", i)),
			worker.WithWindow(window), worker.WithLimiter(lim), worker.WithRegisterInterval(time.Hour),
			worker.WithResultHold(0)}, opts...)
		props, err := worker.Props(route.Fixed(b.master.PID()), b.reg, all...)
		require.NoError(t, err)
		pid := b.sys.Root.Spawn(props)
		lb.workers = append(lb.workers, pid)
		t.Cleanup(func() {
			if _, alive := b.sys.ProcessRegistry.Get(pid); alive {
				require.NoError(t, b.sys.Root.StopFuture(pid).Wait())
			}
		})
	}
	return lb
}

func TestWorkersShareALimiter(t *testing.T) {
	t.Parallel()

	t.Run("AskForWorkOnlyWithAPermit", func(t *testing.T) {
		t.Parallel()
		// Reference: seed 004, the pool size is what the tuner allows: three
		// workers with room for 2 jobs each share a limit of 2.
		lb := setupShared(t, 3, 2, 2)
		reqs := lb.master.ReceiveN(2, testkit.Timeout())
		for _, m := range reqs {
			require.Equal(t, int32(1), m.(*messages.WorkerRequestsWork).GetCapacity(), "one job per permit")
		}
		lb.master.ExpectNoMsg(50 * time.Millisecond) // the limit is used up
		require.Equal(t, 2, lb.lim.Stats().InFlight)

		// The master hands each requester a job; both run.
		for i, m := range reqs {
			lb.master.Send(pids.Actor(m.(*messages.WorkerRequestsWork).GetWorker()), work(fmt.Sprint("j", i), "block", fmt.Sprint("j", i)))
		}
		require.NotEmpty(t, startedWithin(lb.testBundle, testkit.Timeout()))
		require.NotEmpty(t, startedWithin(lb.testBundle, testkit.Timeout()))
		lb.master.ExpectNoMsg(50 * time.Millisecond)

		// A finished job releases its permit (teaching the policy) and
		// some worker asks for the next job.
		// The WorkIsDone and the next request may come from different
		// workers (the freed permit can reach the idle third worker before
		// the finished worker's report reaches the master): either order.
		lb.release <- struct{}{}
		var done, asked int
		for range 2 {
			env, ok := lb.master.ReceiveOne(testkit.Timeout())
			require.True(t, ok, "want a WorkIsDone and a WorkerRequestsWork; got %d and %d", done, asked)
			switch m := env.Message.(type) {
			case *messages.WorkIsDone:
				done++
				lb.master.Send(env.Sender, &messages.Ack{WorkId: m.GetWorkId()})
			case *messages.WorkerRequestsWork:
				asked++
			default:
				t.Fatalf("unexpected %T", m)
			}
		}
		require.Equal(t, 1, done)
		require.Equal(t, 1, asked)
		require.Equal(t, uint64(1), lb.lim.Stats().Completed)
		require.Equal(t, 2, lb.lim.Stats().InFlight, "one running, one held for the requested job")
		close(lb.release)
	})

	t.Run("WorkBeyondThePermitsWaitsForOne", func(t *testing.T) {
		t.Parallel()
		lb := setupShared(t, 1, 2, 1)
		req := testkit.ExpectMsgType[*messages.WorkerRequestsWork](lb.master, testkit.Timeout())
		w := req.GetWorker()
		// The master sends two (it may, for example after a WorkIsReady).
		lb.master.Send(pids.Actor(w), work("a", "block", "a"))
		lb.master.Send(pids.Actor(w), work("b", "echo", "b"))
		require.Equal(t, "a", startedWithin(lb.testBundle, testkit.Timeout()))
		lb.master.ExpectNoMsg(50 * time.Millisecond) // b waits for a permit
		lb.release <- struct{}{}
		// a's permit goes to b, so b ends after a. A request for work may
		// come between the results: the worker is hungry with a free slot.
		var got []string
		for len(got) < 2 {
			switch m := lb.master.ReceiveN(1, testkit.Timeout())[0].(type) {
			case *messages.WorkIsDone:
				got = append(got, m.GetWorkId())
			case *messages.WorkerRequestsWork:
			default:
				t.Fatalf("unexpected %T", m)
			}
		}
		require.Equal(t, []string{"a", "b"}, got)
		require.Equal(t, uint64(2), lb.lim.Stats().Completed)
	})

	t.Run("IdlePermitIsGivenBackUntilWorkIsReady", func(t *testing.T) {
		t.Parallel()
		lb := setupShared(t, 1, 1, 1, worker.WithPermitIdle(2*time.Second))
		req := testkit.ExpectMsgType[*messages.WorkerRequestsWork](lb.master, testkit.Timeout())
		require.Equal(t, 1, lb.lim.Stats().InFlight)
		waitTimers(t, lb.clk, 2) // register + permit idle
		lb.clk.Advance(2 * time.Second)
		require.Eventually(t, func() bool { return lb.lim.Stats().InFlight == 0 }, testkit.Timeout(), time.Millisecond)
		require.Equal(t, uint64(0), lb.lim.Stats().Completed, "an unused permit teaches the policy nothing")
		lb.master.ExpectNoMsg(50 * time.Millisecond) // no new request without WorkIsReady
		lb.master.Send(pids.Actor(req.GetWorker()), &messages.WorkIsReady{})
		testkit.ExpectMsgType[*messages.WorkerRequestsWork](lb.master, testkit.Timeout())
		require.Equal(t, 1, lb.lim.Stats().InFlight)
	})

	t.Run("CallerGoneAbandonsThePermit", func(t *testing.T) {
		t.Parallel()
		lb := setupShared(t, 1, 1, 1)
		req := testkit.ExpectMsgType[*messages.WorkerRequestsWork](lb.master, testkit.Timeout())
		dead := actor.NewPID(lb.sys.Address(), "no-such-waiter")
		lb.master.Send(pids.Actor(req.GetWorker()), withWaiter(work("g", "block", "g"), dead))
		f := testkit.ExpectMsgType[*messages.WorkFailed](lb.master, testkit.Timeout())
		require.Contains(t, f.GetError(), worker.ErrCallerGone.Error())
		testkit.ExpectMsgType[*messages.WorkerRequestsWork](lb.master, testkit.Timeout())
		require.Equal(t, uint64(0), lb.lim.Stats().Completed)
	})

	t.Run("ClosedLimiterHandsBackWaitingWork", func(t *testing.T) {
		t.Parallel()
		lb := setupShared(t, 1, 2, 1)
		req := testkit.ExpectMsgType[*messages.WorkerRequestsWork](lb.master, testkit.Timeout())
		lb.master.Send(pids.Actor(req.GetWorker()), work("a", "block", "a"))
		lb.master.Send(pids.Actor(req.GetWorker()), work("b", "echo", "b"))
		require.Equal(t, "a", startedWithin(lb.testBundle, testkit.Timeout()))
		lb.lim.Close()
		f := testkit.ExpectMsgType[*messages.WorkFailed](lb.master, testkit.Timeout())
		require.Equal(t, "b", f.GetWorkId())
		require.Contains(t, f.GetError(), worker.ErrLimiterClosed.Error())
		close(lb.release)
		lb.master.ExpectMsg(&messages.WorkIsDone{WorkerId: "w0", WorkId: "a", Result: []byte("a")}, testkit.Timeout())
	})

	t.Run("StoppedWorkersGiveEveryPermitBack", func(t *testing.T) {
		t.Parallel()
		lb := setupShared(t, 2, 2, 3)
		reqs := lb.master.ReceiveN(3, testkit.Timeout())
		lb.master.Send(pids.Actor(reqs[0].(*messages.WorkerRequestsWork).GetWorker()), work("a", "block", "a"))
		require.Equal(t, "a", startedWithin(lb.testBundle, testkit.Timeout()))
		require.Equal(t, 3, lb.lim.Stats().InFlight)
		for _, pid := range lb.workers {
			require.NoError(t, lb.sys.Root.StopFuture(pid).Wait())
		}
		require.Eventually(t, func() bool { return lb.lim.Stats().InFlight == 0 }, testkit.Timeout(), time.Millisecond)
		require.Equal(t, uint64(0), lb.lim.Stats().Completed, "work handed back teaches nothing")
	})
}

func TestCrashedWorkerGivesPermitsBack(t *testing.T) {
	t.Parallel()
	// The worker crashes on its 2nd Work (its supervisor restarts it): the
	// permits of the crashed incarnation go back to the limiter.
	crash := worker.WithOnWork(func(seq int, _ *messages.Work) {
		if seq == 2 {
			panic("crash on the 2nd work")
		}
	})
	lb := setupShared(t, 1, 2, 2, crash)
	w := testkit.ExpectMsgType[*messages.WorkerRequestsWork](lb.master, testkit.Timeout()).GetWorker()
	lb.master.Send(pids.Actor(w), work("a", "block", "a"))
	require.Equal(t, "a", startedWithin(lb.testBundle, testkit.Timeout()))
	lb.master.Send(pids.Actor(w), work("b", "block", "b")) // crashes the worker
	f := lb.master.FishForMessage(testkit.Timeout(), func(m any) bool { _, ok := m.(*messages.WorkFailed); return ok })
	require.ErrorContains(t, errorOf(f.(*messages.WorkFailed)), worker.ErrWorkerStopping.Error())
	// The new incarnation asks for work again.
	lb.master.FishForMessage(testkit.Timeout(), func(m any) bool { _, ok := m.(*messages.WorkerRequestsWork); return ok })
	close(lb.release)
	require.NoError(t, lb.sys.Root.StopFuture(lb.workers[0]).Wait())
	require.Eventually(t, func() bool { return lb.lim.Stats().InFlight == 0 }, testkit.Timeout(), time.Millisecond,
		"permits held: %+v", lb.lim.Stats())
}

func errorOf(f *messages.WorkFailed) error { return fmt.Errorf("%s", f.GetError()) }

func TestLimiterOptions(t *testing.T) {
	t.Parallel()
	master := route.Fixed(actor.NewPID("nonhost", "master"))
	for _, tc := range []struct {
		name string
		opt  worker.Option
	}{
		{name: "InterestTimeoutZero", opt: worker.WithInterestTimeout(0)},
		{name: "PermitIdleNegative", opt: worker.WithPermitIdle(-time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := worker.Props(master, worker.NewRegistry(), tc.opt)
			require.ErrorIs(t, err, worker.ErrInvalidOption)
		})
	}
	lim, err := adaptive.NewLimiter()
	require.NoError(t, err)
	_, err = worker.Props(master, worker.NewRegistry(), worker.WithLimiter(lim),
		worker.WithInterestTimeout(time.Second), worker.WithPermitIdle(time.Second))
	require.NoError(t, err)
}

// Issue 15: a waiter that does not answer is asked again within the
// interest timeout; one whose node has gone (WithWaiterGone) is given up
// once that is confirmed (issue 34: goneConfirm), long before the timeout;
// a job given up for its caller is reported cancelled.
func TestWorkerAsksAgainAndKnowsGoneNodes(t *testing.T) {
	t.Parallel()

	t.Run("UnansweredQuestionIsAskedAgain", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t, worker.WithInterestTimeout(5*time.Second), worker.WithInterestRetry(time.Second),
			worker.WithRegisterInterval(time.Hour))
		slow := testkit.NewProbe(t, b.sys)
		b.master.Send(pid, withWaiter(work("a", "echo", "7"), slow.PID()))
		testkit.ExpectMsgType[*messages.AreYouStillInterested](slow, testkit.Timeout()) // lost
		waitTimers(t, b.clk, 3)                                                         // register, ask, retry
		b.clk.Advance(time.Second)
		testkit.ExpectMsgType[*messages.AreYouStillInterested](slow, testkit.Timeout())
		slow.Reply(&messages.IAmStillInterested{WorkId: "a"})
		b.master.ExpectMsg(&messages.WorkIsDone{WorkerId: "w1", WorkId: "a", Result: []byte("7")}, testkit.Timeout())
	})

	t.Run("WaiterOfAGoneNodeIsGivenUpOnceConfirmed", func(t *testing.T) {
		t.Parallel()
		var gone atomic.Bool
		pid, b := setup(t, worker.WithInterestTimeout(time.Minute), worker.WithInterestRetry(time.Second),
			worker.WithRegisterInterval(time.Hour), worker.WithWaiterGone(func(string) bool { return gone.Load() }))
		silent := testkit.NewProbe(t, b.sys)
		b.master.Send(pid, withWaiter(work("g", "block", "g"), silent.PID()))
		testkit.ExpectMsgType[*messages.AreYouStillInterested](silent, testkit.Timeout())
		gone.Store(true)
		// Reported gone at the first tick, asked again every tick, given up
		// once still gone 3 s (the confirmation) later: 4 s, not the minute's
		// interest timeout.
		for range 3 {
			waitTimers(t, b.clk, 3)
			b.clk.Advance(time.Second)
			testkit.ExpectMsgType[*messages.AreYouStillInterested](silent, testkit.Timeout())
		}
		b.master.ExpectNoMsg(20 * time.Millisecond)
		waitTimers(t, b.clk, 3)
		b.clk.Advance(time.Second)
		f := testkit.ExpectMsgType[*messages.WorkFailed](b.master, testkit.Timeout())
		require.True(t, f.GetCancelled(), "a job given up for its caller ends cancelled, not dead")
		require.Contains(t, f.GetError(), "left the cluster")
		require.Empty(t, b.started)
	})
}

// Issue 34 item 3: the waiter's node, reached, answers that it has no such
// actor (a caller's Interest stops after its linger): the job is given up
// at once, not after the interest timeout. protoactor's dead-letter process
// answers such a request with a DeadLetterResponse without Target; here it
// is this system's, which has no remote to reach the waiter's address by.
func TestWorkerGivesUpAWaiterItsNodeDoesNotKnow(t *testing.T) {
	t.Parallel()
	pid, b := setup(t, worker.WithInterestTimeout(time.Hour), worker.WithInterestRetry(time.Hour),
		worker.WithRegisterInterval(time.Hour))
	gone := actor.NewPID("127.0.0.1:1", "interest$gone")
	b.master.Send(pid, withWaiter(work("x", "block", "x"), gone))
	// No clock advance: neither the retry nor the timeout may fire.
	f := testkit.ExpectMsgType[*messages.WorkFailed](b.master, testkit.Timeout())
	require.Equal(t, "x", f.GetWorkId())
	require.True(t, f.GetCancelled(), "a job given up for its caller ends cancelled")
	require.Contains(t, f.GetError(), "dead letter from its node")
	require.Empty(t, b.started)
}

// Issue 34 item 3: a transport blip must not cancel a live caller's job.
// WithWaiterGone reports a node gone once its connection stayed lost for a
// while (cluster/node: 2 s), but protoactor re-makes a connection only when
// something is sent over it: the watcher of a running job asks again before
// it believes it, and only a node that stays reported gone, unanswering,
// for goneConfirm cancels the job.
func TestWorkerConfirmsAGoneNodeBeforeCancelling(t *testing.T) {
	t.Parallel()
	start := func(t *testing.T, gone *atomic.Bool) (*testBundle, *testkit.Probe) {
		pid, b := setup(t, worker.WithInterestTimeout(time.Minute), worker.WithInterestRetry(time.Second),
			worker.WithRegisterInterval(time.Hour), worker.WithWaiterGone(func(string) bool { return gone.Load() }))
		w := testkit.NewProbe(t, b.sys)
		b.master.Send(pid, withWaiter(work("r", "block", "r"), w.PID()))
		testkit.ExpectMsgType[*messages.AreYouStillInterested](w, testkit.Timeout())
		w.Reply(&messages.IAmStillInterested{WorkId: "r"})
		require.Equal(t, "r", startedWithin(b, testkit.Timeout()), "the caller waits: the job starts")
		return b, w
	}
	tick := func(t *testing.T, b *testBundle) {
		t.Helper()
		waitTimers(t, b.clk, 2) // register, the watcher's tick
		b.clk.Advance(time.Second)
	}

	t.Run("RunningJobOutlivesAConnectionReportedLost", func(t *testing.T) {
		t.Parallel()
		var gone atomic.Bool
		b, w := start(t, &gone)
		gone.Store(true) // the connection to the waiter's node was cut
		tick(t, b)
		// The watcher asks again (which makes protoactor re-make the
		// connection) instead of cancelling the job.
		testkit.ExpectMsgType[*messages.AreYouStillInterested](w, testkit.Timeout())
		gone.Store(false)
		w.Reply(&messages.IAmStillInterested{WorkId: "r"})
		for range 5 {
			tick(t, b)
		}
		require.Empty(t, b.ctxErrs, "a live caller's job was cancelled by a blip")
		close(b.release)
		b.master.FishForMessage(testkit.Timeout(), func(m any) bool {
			d, ok := m.(*messages.WorkIsDone)
			return ok && d.GetWorkId() == "r"
		})
	})

	t.Run("RunningJobOfANodeThatStaysGoneIsCancelled", func(t *testing.T) {
		t.Parallel()
		var gone atomic.Bool
		b, _ := start(t, &gone)
		gone.Store(true)
		tick(t, b) // suspected at 1 s: asked again, no answer
		tick(t, b)
		tick(t, b)
		require.Empty(t, b.ctxErrs, "cancelled before the gone node was confirmed")
		tick(t, b) // gone for goneConfirm since the suspicion
		select {
		case err := <-b.ctxErrs:
			require.ErrorIs(t, err, worker.ErrCallerGone)
		case <-time.After(testkit.Timeout()):
			t.Fatal("the running job of a gone node was not cancelled")
		}
	})
}

// Issue 34 item 3: the confirmation that a waiter's node has gone is the
// worker's, per node, not per job. When a frontend node is killed with many
// waited jobs queued, only the first job on a slot waits goneConfirm (the
// node is asked every tick without answer); the jobs handed to the slot
// after it are skipped at once while the node stays reported gone, not
// after another goneConfirm each (seed 003: fail fast under this
// overload). An answer from the node clears its suspicion: the next job of
// that node is given the whole confirmation again.
func TestWorkerConfirmsAGoneNodeOncePerNode(t *testing.T) {
	t.Parallel()
	start := func(t *testing.T, gone *atomic.Bool) (*actor.PID, *testBundle) {
		return setup(t, worker.WithWindow(1), worker.WithInterestTimeout(time.Minute), worker.WithInterestRetry(time.Second),
			worker.WithRegisterInterval(time.Hour), worker.WithResultHold(0),
			worker.WithWaiterGone(func(string) bool { return gone.Load() }))
	}
	tick := func(t *testing.T, b *testBundle) {
		t.Helper()
		waitTimers(t, b.clk, 3) // register, the ask timer, the watcher's tick
		b.clk.Advance(time.Second)
	}

	t.Run("LaterJobsOfAConfirmedNodeAreSkippedAtOnce", func(t *testing.T) {
		t.Parallel()
		var gone atomic.Bool
		gone.Store(true) // the frontend node was killed: reported gone, never answers
		pid, b := start(t, &gone)
		silent := testkit.NewProbe(t, b.sys)
		const n = 6
		for i := range n {
			b.master.Send(pid, withWaiter(work(fmt.Sprint("j", i), "block", "x"), silent.PID()))
		}
		testkit.ExpectMsgType[*messages.AreYouStillInterested](silent, testkit.Timeout()) // j0, suspected at 0 s
		// Asked again at 1 s and 2 s without answer; confirmed gone at 3 s
		// (goneConfirm). The clock advances no further: every later job
		// must be skipped at once, not after its own goneConfirm.
		var advanced time.Duration
		for range 3 {
			tick(t, b)
			advanced += time.Second
		}
		skipped := map[string]bool{}
		for len(skipped) < n {
			e, ok := b.master.ReceiveOne(testkit.Timeout())
			if !ok {
				break
			}
			if f, ok := e.Message.(*messages.WorkFailed); ok {
				require.True(t, f.GetCancelled(), "a job given up for its caller ends cancelled: %s", f.GetError())
				skipped[f.GetWorkId()] = true
			}
		}
		require.Len(t, skipped, n, "after %v on the manual clock (goneConfirm 3 s, tick 1 s) only %v of the %d jobs "+
			"whose waiter's node was confirmed gone were skipped: each later job waits its own goneConfirm", advanced, skipped, n)
		require.Empty(t, b.started, "no job of a gone caller started")
	})

	t.Run("AnAnswerFromTheNodeClearsIt", func(t *testing.T) {
		t.Parallel()
		var gone atomic.Bool
		gone.Store(true) // reported gone, yet still answering (a blip)
		pid, b := start(t, &gone)
		w := testkit.NewProbe(t, b.sys)
		b.master.Send(pid, withWaiter(work("a", "echo", "1"), w.PID()))
		testkit.ExpectMsgType[*messages.AreYouStillInterested](w, testkit.Timeout()) // suspected at 0 s
		tick(t, b)
		testkit.ExpectMsgType[*messages.AreYouStillInterested](w, testkit.Timeout())
		tick(t, b)
		testkit.ExpectMsgType[*messages.AreYouStillInterested](w, testkit.Timeout())
		w.Reply(&messages.IAmStillInterested{WorkId: "a"}) // at 2 s: the node answers
		d := b.master.FishForMessage(testkit.Timeout(), func(m any) bool { _, ok := m.(*messages.WorkIsDone); return ok })
		require.Equal(t, "a", d.(*messages.WorkIsDone).GetWorkId())
		b.master.Reply(&messages.Ack{WorkId: "a"})

		// Still reported gone: the next job's waiter on that node is
		// suspected afresh at 2 s, asked again at 3 s and 4 s (not taken
		// for confirmed at 3 s from the old suspicion), given up at 5 s.
		other := testkit.NewProbe(t, b.sys)
		b.master.Send(pid, withWaiter(work("b", "block", "b"), other.PID()))
		testkit.ExpectMsgType[*messages.AreYouStillInterested](other, testkit.Timeout())
		for range 2 {
			tick(t, b)
			testkit.ExpectMsgType[*messages.AreYouStillInterested](other, testkit.Timeout())
		}
		tick(t, b)
		f := b.master.FishForMessage(testkit.Timeout(), func(m any) bool { _, ok := m.(*messages.WorkFailed); return ok })
		require.Equal(t, "b", f.(*messages.WorkFailed).GetWorkId())
		require.True(t, f.(*messages.WorkFailed).GetCancelled())
		require.Empty(t, b.started)
	})
}
