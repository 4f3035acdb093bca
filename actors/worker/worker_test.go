package worker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/messages"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testBundle is what setup returns besides the worker's PID.
type testBundle struct {
	sys    *actor.ActorSystem
	master *testkit.Probe
	clk    *clock.Manual
	reg    *worker.Registry
	// release unblocks "block" jobs; started receives their work ids.
	release chan struct{}
	started chan string
	// ctxErrs receives the cause a "block" job's ctx was cancelled with.
	ctxErrs chan error
	// stop stops the worker and waits until it has stopped; idempotent.
	stop func()
}

// testRegistry has jobs for every behaviour the tests need.
func testRegistry(t *testing.T, b *testBundle) *worker.Registry {
	t.Helper()
	reg := worker.NewRegistry()
	require.NoError(t, reg.Register("echo", func(_ context.Context, p []byte) ([]byte, error) { return p, nil }))
	require.NoError(t, reg.Register("fail", func(_ context.Context, p []byte) ([]byte, error) {
		return nil, fmt.Errorf("bad input %s", p)
	}))
	require.NoError(t, reg.Register("panic", func(_ context.Context, p []byte) ([]byte, error) {
		panic("boom " + string(p))
	}))
	require.NoError(t, reg.Register("block", func(ctx context.Context, p []byte) ([]byte, error) {
		b.started <- string(p)
		select {
		case <-b.release:
			return p, nil
		case <-ctx.Done():
			b.ctxErrs <- context.Cause(ctx)
			return nil, ctx.Err()
		}
	}))
	return reg
}

func setup(t *testing.T, opts ...worker.Option) (*actor.PID, *testBundle) {
	t.Helper()
	return setupProps(t, nil, opts...)
}

// setupProps is setup with configure applied to the worker's props first.
func setupProps(t *testing.T, configure func(*actor.Props), opts ...worker.Option) (*actor.PID, *testBundle) {
	t.Helper()
	b := &testBundle{
		release: make(chan struct{}),
		started: make(chan string, 16),
		ctxErrs: make(chan error, 16),
	}
	b.sys = testkit.NewSystem(t)
	b.master = testkit.NewProbe(t, b.sys)
	b.clk = clock.NewManual(epoch)
	b.reg = testRegistry(t, b)
	all := append([]worker.Option{worker.WithClock(b.clk), worker.WithWorkerID("w1")}, opts...)
	props, err := worker.Props(route.Fixed(b.master.PID()), b.reg, all...)
	require.NoError(t, err)
	if configure != nil {
		configure(props)
	}
	pid := b.sys.Root.Spawn(props)
	var once sync.Once
	b.stop = func() {
		once.Do(func() {
			if _, alive := b.sys.ProcessRegistry.Get(pid); alive { // no dead letter for a stopped worker
				require.NoError(t, b.sys.Root.StopFuture(pid).Wait())
			}
		})
	}
	t.Cleanup(b.stop)
	reg := testkit.ExpectMsgType[*messages.RegisterWorker](b.master, testkit.Timeout())
	require.Equal(t, "w1", reg.GetWorkerId())
	require.True(t, pid.Equal(pids.Actor(reg.GetWorker())))
	require.Equal(t, []string{"block", "echo", "fail", "panic"}, reg.GetJobTypes())
	require.EqualValues(t, 1, reg.GetShards(), "one master: one shard")
	// It asks for work at once: work may be pending already.
	req := testkit.ExpectMsgType[*messages.WorkerRequestsWork](b.master, testkit.Timeout())
	require.GreaterOrEqual(t, req.GetCapacity(), int32(1))
	return pid, b
}

// waitTimers blocks until the manual clock has n timers armed.
func waitTimers(t *testing.T, clk *clock.Manual, n int) {
	t.Helper()
	done := make(chan struct{})
	stop := time.AfterFunc(testkit.Timeout(), func() { close(done) })
	defer stop.Stop()
	require.True(t, clk.WaitForPending(done, n), "timeout waiting for %d armed timers (have %d)", n, clk.Pending())
}

// ackResults acknowledges m, a WorkIsDone or a WorkIsDoneBatch (results
// that finished together), as the master would, and records its ids in
// done; any other message fails the test.
func ackResults(t *testing.T, b *testBundle, m any, done map[string]bool) {
	t.Helper()
	switch m := m.(type) {
	case *messages.WorkIsDone:
		done[m.GetWorkId()] = true
		b.master.Reply(&messages.Ack{WorkId: m.GetWorkId()})
	case *messages.WorkIsDoneBatch:
		var ids []string
		for _, d := range m.GetDone() {
			done[d.GetWorkId()] = true
			ids = append(ids, d.GetWorkId())
		}
		b.master.Reply(&messages.AckBatch{WorkIds: ids})
	default:
		t.Fatalf("unexpected %T", m)
	}
}

func work(id, jobType, payload string) *messages.Work {
	return &messages.Work{WorkId: id, JobType: jobType, Payload: []byte(payload), Attempt: 1}
}

func TestWorker(t *testing.T) {
	t.Parallel()

	t.Run("RegistersAtStartAndEveryInterval", func(t *testing.T) {
		t.Parallel()
		_, b := setup(t, worker.WithRegisterInterval(7*time.Second))
		for range 3 {
			waitTimers(t, b.clk, 1)
			b.clk.Advance(6 * time.Second)
			b.master.ExpectNoMsg(20 * time.Millisecond)
			b.clk.Advance(time.Second)
			testkit.ExpectMsgType[*messages.RegisterWorker](b.master, testkit.Timeout())
		}
	})

	t.Run("WorkIsReadyAsksForWork", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t)
		b.master.Send(pid, &messages.WorkIsReady{})
		req := testkit.ExpectMsgType[*messages.WorkerRequestsWork](b.master, testkit.Timeout())
		require.Equal(t, "w1", req.GetWorkerId())
		require.Equal(t, int32(1), req.GetCapacity())
		require.True(t, pid.Equal(pids.Actor(req.GetWorker())))
	})

	t.Run("RunsWorkAndResendsDoneUntilAck", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t, worker.WithResendInterval(5*time.Second), worker.WithRegisterInterval(time.Hour))
		b.master.Send(pid, work("a", "echo", "49"))
		b.master.ExpectMsg(&messages.WorkIsDone{WorkerId: "w1", WorkId: "a", Result: []byte("49")}, testkit.Timeout())
		require.True(t, pid.Equal(b.master.LastSender()), "WorkIsDone is sent by the worker, so the Ack finds it")
		// It keeps pulling while the completion is made durable.
		b.master.ExpectMsg(&messages.WorkerRequestsWork{WorkerId: "w1", Worker: pids.Wire(pid), Capacity: 1, Bundles: true}, testkit.Timeout())
		waitTimers(t, b.clk, 2) // register + resend
		b.clk.Advance(5 * time.Second)
		b.master.ExpectMsg(&messages.WorkIsDone{WorkerId: "w1", WorkId: "a", Result: []byte("49")}, testkit.Timeout())
		b.clk.Advance(5 * time.Second)
		b.master.ExpectMsg(&messages.WorkIsDone{WorkerId: "w1", WorkId: "a", Result: []byte("49")}, testkit.Timeout())
		b.master.Reply(&messages.Ack{WorkId: "a"})
		// Wait for the ack to disarm the resend timer: only the register timer is left.
		require.Eventually(t, func() bool { return b.clk.Pending() == 1 }, testkit.Timeout(), time.Millisecond)
		b.clk.Advance(5 * time.Second)
		b.master.ExpectNoMsg(50 * time.Millisecond)
	})

	t.Run("DuplicateWorkOfAnUnackedResultResendsDone", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t)
		b.master.Send(pid, work("a", "echo", "1"))
		testkit.ExpectMsgType[*messages.WorkIsDone](b.master, testkit.Timeout())
		testkit.ExpectMsgType[*messages.WorkerRequestsWork](b.master, testkit.Timeout())
		b.master.Send(pid, work("a", "echo", "1"))
		b.master.ExpectMsg(&messages.WorkIsDone{WorkerId: "w1", WorkId: "a", Result: []byte("1")}, testkit.Timeout())
		b.master.ExpectNoMsg(50 * time.Millisecond)
	})

	t.Run("ExecutorPanicReportsWorkFailedAndWorkerKeepsServing", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t)
		b.master.Send(pid, work("p", "panic", "x"))
		f := testkit.ExpectMsgType[*messages.WorkFailed](b.master, testkit.Timeout())
		require.Equal(t, "p", f.GetWorkId())
		require.Contains(t, f.GetError(), "worker: job panicked: boom x")
		require.Contains(t, f.GetError(), "goroutine", "the trimmed stack is included")
		testkit.ExpectMsgType[*messages.WorkerRequestsWork](b.master, testkit.Timeout())
		for i := range 3 {
			id := fmt.Sprint("after-", i)
			b.master.Send(pid, work(id, "echo", id))
			b.master.ExpectMsg(&messages.WorkIsDone{WorkerId: "w1", WorkId: id, Result: []byte(id)}, testkit.Timeout())
			testkit.ExpectMsgType[*messages.WorkerRequestsWork](b.master, testkit.Timeout())
			b.master.Reply(&messages.Ack{WorkId: id})
		}
	})

	t.Run("JobErrorReportsWorkFailed", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t)
		b.master.Send(pid, work("f", "fail", "7"))
		b.master.ExpectMsg(&messages.WorkFailed{WorkerId: "w1", WorkId: "f", Error: "bad input 7"}, testkit.Timeout())
		b.master.ExpectMsg(&messages.WorkerRequestsWork{WorkerId: "w1", Worker: pids.Wire(pid), Capacity: 1, Bundles: true}, testkit.Timeout())
	})

	t.Run("UnknownJobTypeReportsAClearError", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t)
		b.master.Send(pid, work("u", "cube", "3"))
		f := testkit.ExpectMsgType[*messages.WorkFailed](b.master, testkit.Timeout())
		require.Equal(t, `worker: unknown job type: "cube": this worker runs block, echo, fail, panic`, f.GetError())
	})

	t.Run("DeadlinePassedIsNotStarted", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t)
		w := work("d", "block", "d")
		w.DeadlineUnixNano = epoch.Add(-time.Second).UnixNano()
		b.master.Send(pid, w)
		f := testkit.ExpectMsgType[*messages.WorkFailed](b.master, testkit.Timeout())
		require.Contains(t, f.GetError(), worker.ErrDeadlinePassed.Error())
		require.Empty(t, b.started, "the job must not start")
	})

	t.Run("WindowRunsNJobsAtOnceAndAsksForFreeSlots", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t, worker.WithWindow(3))
		b.master.Send(pid, &messages.WorkIsReady{})
		b.master.ExpectMsg(&messages.WorkerRequestsWork{WorkerId: "w1", Worker: pids.Wire(pid), Capacity: 3, Bundles: true}, testkit.Timeout())
		for i := range 4 { // one more than the window: queued locally
			b.master.Send(pid, work(fmt.Sprint(i), "block", fmt.Sprint(i)))
		}
		got := map[string]bool{}
		for range 3 {
			select {
			case id := <-b.started:
				got[id] = true
			case <-time.After(testkit.Timeout()):
				t.Fatal("jobs did not start")
			}
		}
		require.Equal(t, map[string]bool{"0": true, "1": true, "2": true}, got, "three run at once")
		b.master.Send(pid, &messages.WorkIsReady{})
		b.master.ExpectNoMsg(50 * time.Millisecond) // no free slot: no request
		close(b.release)
		done := map[string]bool{}
		for len(done) < 4 {
			switch m := b.master.ReceiveN(1, testkit.Timeout())[0].(type) {
			case *messages.WorkerRequestsWork:
				require.LessOrEqual(t, m.GetCapacity(), int32(3))
			default:
				ackResults(t, b, m, done)
			}
		}
	})

	// finishTogether runs three blocking works and a fourth whose hook
	// holds the worker's goroutine until the three have returned and their
	// executors' reports wait in its mailbox, so they are handled together.
	// The three arrive as one WorkBundle (a master that takes batches) or
	// as three Works (maybe a master from before batches). It returns the
	// results the fake master received and the WorkIsDoneBatch messages
	// among them.
	finishTogether := func(t *testing.T, bundle bool) (*testBundle, *actor.PID, map[string]string, []*messages.WorkIsDoneBatch) {
		var (
			b       *testBundle
			mailbox actor.Mailbox
		)
		countMailbox := func(p *actor.Props) {
			p.Configure(actor.WithMailbox(func() actor.Mailbox { mailbox = actor.Unbounded()(); return mailbox }))
		}
		hold := worker.WithOnWork(func(seq int, _ *messages.Work) {
			if seq == 4 {
				close(b.release)
				deadline := time.Now().Add(testkit.Timeout())
				for mailbox.UserMessageCount() < 3 && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
			}
		})
		pid, bb := setupProps(t, countMailbox, worker.WithWindow(4), worker.WithResendInterval(5*time.Second), worker.WithRegisterInterval(time.Hour), hold)
		b = bb
		three := []*messages.Work{work("a", "block", "a"), work("b", "block", "b"), work("c", "block", "c")}
		if bundle {
			b.master.Send(pid, &messages.WorkBundle{Works: three})
		} else {
			for _, w := range three {
				b.master.Send(pid, w)
			}
		}
		for range 3 {
			startedWithin(b, testkit.Timeout())
		}
		b.master.Send(pid, work("d", "echo", "d"))

		var batches []*messages.WorkIsDoneBatch
		got := map[string]string{}
		for len(got) < 4 {
			switch m := b.master.ReceiveN(1, testkit.Timeout())[0].(type) {
			case *messages.WorkIsDoneBatch:
				batches = append(batches, m)
				for _, d := range m.GetDone() {
					got[d.GetWorkId()] = string(d.GetResult())
				}
				require.True(t, pid.Equal(b.master.LastSender()), "sent by the worker, so the AckBatch finds it")
			case *messages.WorkIsDone:
				got[m.GetWorkId()] = string(m.GetResult())
			case *messages.WorkerRequestsWork:
			default:
				t.Fatalf("unexpected %T", m)
			}
		}
		require.Equal(t, map[string]string{"a": "a", "b": "b", "c": "c", "d": "d"}, got)
		return b, pid, got, batches
	}

	t.Run("ResultsFinishedTogetherGoInOneBatch", func(t *testing.T) {
		t.Parallel()
		b, pid, _, batches := finishTogether(t, true)
		require.NotEmpty(t, batches, "results that finished together are reported in one message")
		batch := batches[0]
		require.Equal(t, "w1", batch.GetWorkerId())
		var first []string
		for _, d := range batch.GetDone() {
			first = append(first, d.GetWorkId())
		}
		require.Subset(t, first, []string{"a", "b", "c"})

		// One AckBatch acknowledges them all: nothing is re-sent.
		b.master.Send(pid, &messages.AckBatch{WorkIds: []string{"a", "b", "c", "d"}})
		require.Eventually(t, func() bool { return b.clk.Pending() == 1 }, testkit.Timeout(), time.Millisecond,
			"the four resend timers are disarmed: only the register timer is left")
		b.clk.Advance(5 * time.Second)
		for {
			env, ok := b.master.ReceiveOne(50 * time.Millisecond)
			if !ok {
				break
			}
			_, asks := env.Message.(*messages.WorkerRequestsWork)
			require.True(t, asks, "re-sent after the AckBatch: %T", env.Message)
		}
	})

	t.Run("NoBatchToAMasterThatSentNoBundle", func(t *testing.T) {
		t.Parallel()
		// A master from before batches would drop a WorkIsDoneBatch, and
		// the results would reach it only when their resend timers fire.
		_, _, _, batches := finishTogether(t, false)
		require.Empty(t, batches, "a master that never sent a WorkBundle gets one WorkIsDone per result")
	})

	t.Run("WorkBundleRunsEachWork", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t, worker.WithWindow(2), worker.WithRegisterInterval(time.Hour))
		b.master.Send(pid, &messages.WorkBundle{Works: []*messages.Work{
			work("x", "echo", "1"), work("y", "echo", "2"), work("z", "echo", "3"), // z waits for a slot
		}})
		got := map[string]string{}
		for len(got) < 3 {
			switch m := b.master.ReceiveN(1, testkit.Timeout())[0].(type) {
			case *messages.WorkIsDoneBatch:
				for _, d := range m.GetDone() {
					got[d.GetWorkId()] = string(d.GetResult())
				}
			case *messages.WorkIsDone:
				got[m.GetWorkId()] = string(m.GetResult())
			case *messages.WorkerRequestsWork:
			default:
				t.Fatalf("unexpected %T", m)
			}
		}
		require.Equal(t, map[string]string{"x": "1", "y": "2", "z": "3"}, got)
	})

	t.Run("StopHandsRunningWorkBackAndCancelsTheJob", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t)
		b.master.Send(pid, work("r", "block", "r"))
		<-b.started
		b.stop()
		f := testkit.ExpectMsgType[*messages.WorkFailed](b.master, testkit.Timeout())
		require.Equal(t, "r", f.GetWorkId())
		require.Equal(t, worker.ErrWorkerStopping.Error(), f.GetError())
		b.master.ExpectMsg(&messages.DeregisterWorker{WorkerId: "w1"}, testkit.Timeout())
		require.ErrorIs(t, <-b.ctxErrs, worker.ErrWorkerStopping, "the job learns why")
	})

	t.Run("DrainFinishesRunningWorkThenStops", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t, worker.WithWindow(1))
		caller := testkit.NewProbe(t, b.sys)
		caller.Watch(pid)
		b.master.Send(pid, work("run", "block", "run"))
		<-b.started
		b.master.Send(pid, work("queued", "echo", "q")) // beyond the window
		caller.Request(pid, &worker.Drain{})
		f := testkit.ExpectMsgType[*messages.WorkFailed](b.master, testkit.Timeout())
		require.Equal(t, "queued", f.GetWorkId(), "work that has not started is handed back")
		b.master.Send(pid, &messages.WorkIsReady{})
		b.master.Send(pid, work("late", "echo", "l"))
		b.master.ExpectMsg(&messages.WorkFailed{WorkerId: "w1", WorkId: "late", Error: worker.ErrWorkerStopping.Error(), HandedBack: true}, testkit.Timeout())
		caller.ExpectNoMsg(20 * time.Millisecond)
		close(b.release)
		b.master.ExpectMsg(&messages.WorkIsDone{WorkerId: "w1", WorkId: "run", Result: []byte("run")}, testkit.Timeout())
		b.master.ExpectNoMsg(20 * time.Millisecond) // draining: no WorkerRequestsWork
		caller.ExpectNoMsg(20 * time.Millisecond)   // still waiting for the Ack
		b.master.Reply(&messages.Ack{WorkId: "run"})
		b.master.ExpectMsg(&messages.DeregisterWorker{WorkerId: "w1"}, testkit.Timeout())
		got := caller.ReceiveN(2, testkit.Timeout()) // Drained and Terminated, in either order
		require.Contains(t, got, any(&worker.Drained{WorkerID: "w1"}))
		b.master.ExpectNoMsg(20 * time.Millisecond) // nothing handed back, no second Deregister
	})

	t.Run("CrashOnNthWorkViaHook", func(t *testing.T) {
		t.Parallel()
		// The flaky worker of the Akka DistributedWorkerSpec dies on its 5th
		// job: the hook panics, the worker actor crashes and its supervisor
		// (the root guardian here: restart) brings up a fresh instance.
		pid, b := setup(t, worker.WithOnWork(func(seq int, _ *messages.Work) {
			if seq == 2 {
				panic("worker dies on its 2nd job")
			}
		}))
		b.master.Send(pid, work("1", "echo", "1"))
		testkit.ExpectMsgType[*messages.WorkIsDone](b.master, testkit.Timeout())
		testkit.ExpectMsgType[*messages.WorkerRequestsWork](b.master, testkit.Timeout())
		b.master.Send(pid, work("2", "echo", "2"))
		// The dying instance sends its unacked result once more and deregisters;
		// the restarted one registers again.
		b.master.ExpectMsg(&messages.WorkIsDone{WorkerId: "w1", WorkId: "1", Result: []byte("1")}, testkit.Timeout())
		b.master.ExpectMsg(&messages.DeregisterWorker{WorkerId: "w1"}, testkit.Timeout())
		testkit.ExpectMsgType[*messages.RegisterWorker](b.master, testkit.Timeout())
	})
}

func TestWorkerResolver(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	m1, m2 := testkit.NewProbe(t, sys), testkit.NewProbe(t, sys)
	clk := clock.NewManual(epoch)
	var current atomic.Pointer[actor.PID]
	current.Store(m1.PID())
	var calls atomic.Int32
	resolver := route.Resolver(func(ctx context.Context) (*actor.PID, error) {
		calls.Add(1)
		if pid := current.Load(); pid != nil {
			return pid, nil
		}
		return nil, errors.New("no master yet")
	})
	props, err := worker.Props(resolver, worker.NewRegistry(), worker.WithClock(clk), worker.WithWorkerID("w"))
	require.NoError(t, err)
	pid := sys.Root.Spawn(props)
	t.Cleanup(func() { _ = sys.Root.StopFuture(pid).Wait() })

	testkit.ExpectMsgType[*messages.RegisterWorker](m1, testkit.Timeout())
	// A new master asks for work at once when the worker has free slots.
	testkit.ExpectMsgType[*messages.WorkerRequestsWork](m1, testkit.Timeout())

	// The master moves: the next register tick re-resolves and registers there.
	current.Store(m2.PID())
	waitTimers(t, clk, 1)
	clk.Advance(worker.DefaultRegisterInterval)
	testkit.ExpectMsgType[*messages.RegisterWorker](m2, testkit.Timeout())
	testkit.ExpectMsgType[*messages.WorkerRequestsWork](m2, testkit.Timeout())
	m1.ExpectNoMsg(20 * time.Millisecond)

	// The master dies: the worker watches it and resolves again at once.
	m3 := testkit.NewProbe(t, sys)
	current.Store(m3.PID())
	require.NoError(t, sys.Root.StopFuture(m2.PID()).Wait())
	testkit.ExpectMsgType[*messages.RegisterWorker](m3, testkit.Timeout())
	require.GreaterOrEqual(t, calls.Load(), int32(3))
}

func TestProps(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	ok := route.Fixed(pid)
	reg := worker.NewRegistry()
	tests := []struct {
		name   string
		master route.Master
		reg    *worker.Registry
		opts   []worker.Option
		want   string
	}{
		{name: "EmptyMaster", master: route.Master{}, reg: reg, want: "empty master route"},
		{name: "NilRegistry", master: ok, want: "nil registry"},
		{name: "Window", master: ok, reg: reg, opts: []worker.Option{worker.WithWindow(0)}, want: "window 0"},
		{name: "RegisterInterval", master: ok, reg: reg, opts: []worker.Option{worker.WithRegisterInterval(0)}, want: "register interval"},
		{name: "ResendInterval", master: ok, reg: reg, opts: []worker.Option{worker.WithResendInterval(-1)}, want: "resend interval"},
		{name: "ResolveTimeout", master: ok, reg: reg, opts: []worker.Option{worker.WithResolveTimeout(0)}, want: "resolve timeout"},
		{name: "MaxUnacked", master: ok, reg: reg, opts: []worker.Option{worker.WithMaxUnacked(-1)}, want: "max unacked"},
		{name: "PrefetchNegative", master: ok, reg: reg, opts: []worker.Option{worker.WithPrefetch(-2)}, want: "prefetch -2: must be 0..4096"},
		{name: "PrefetchTooLarge", master: ok, reg: reg, opts: []worker.Option{worker.WithPrefetch(4097)}, want: "prefetch 4097"},
		{name: "PrefetchOff", master: ok, reg: reg, opts: []worker.Option{worker.WithPrefetch(0)}},
		{name: "ResultHoldNegative", master: ok, reg: reg, opts: []worker.Option{worker.WithResultHold(-time.Millisecond)}, want: "result hold -1ms: must be 0..1s"},
		{name: "ResultHoldTooLong", master: ok, reg: reg, opts: []worker.Option{worker.WithResultHold(2 * time.Second)}, want: "result hold 2s"},
		{name: "ResultHoldOff", master: ok, reg: reg, opts: []worker.Option{worker.WithResultHold(0)}},
		{name: "Valid", master: ok, reg: reg, opts: []worker.Option{worker.WithWindow(8), worker.WithMaxUnacked(4), worker.WithLogger(nil)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := worker.Props(tt.master, tt.reg, tt.opts...)
			if tt.want == "" {
				require.NoError(t, err)
				require.NotNil(t, p)
				return
			}
			require.ErrorIs(t, err, worker.ErrInvalidOption)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestWorkerReadAhead checks how far ahead a worker with a window of two
// asks: run delivers two jobs 1 ms (manual clock) after the worker asked
// and returns the largest capacity it asked for while it reported them;
// "block" jobs take a second of the manual clock, "echo" ones none.
func TestWorkerReadAhead(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, jobType string, opts ...worker.Option) int32 {
		t.Helper()
		opts = append([]worker.Option{worker.WithWindow(2), worker.WithRegisterInterval(time.Hour), worker.WithResendInterval(time.Hour)}, opts...)
		pid, b := setup(t, opts...) // setup took the first request, asked at the epoch
		b.clk.Advance(time.Millisecond)
		b.master.Send(pid, &messages.WorkBundle{Works: []*messages.Work{work("a", jobType, "a"), work("b", jobType, "b")}})
		if jobType == "block" {
			for range 2 {
				require.NotEmpty(t, startedWithin(b, testkit.Timeout()), "jobs did not start")
			}
			b.clk.Advance(time.Second)
			close(b.release)
		}
		var most int32
		done := map[string]bool{}
		// A flush sends its results, then its request: the last request
		// comes after both results.
		for asked := false; !asked; {
			switch m := b.master.ReceiveN(1, testkit.Timeout())[0].(type) {
			case *messages.WorkerRequestsWork:
				most = max(most, m.GetCapacity())
				asked = len(done) == 2
			default:
				ackResults(t, b, m, done)
			}
		}
		return most
	}

	t.Run("ShortJobsAskForAWindowAhead", func(t *testing.T) {
		t.Parallel()
		// Jobs take no time, a request 1 ms: the worker holds a whole
		// window (the default prefetch) beyond its two free slots.
		require.Equal(t, int32(4), run(t, "echo"))
	})
	t.Run("PrefetchCapsTheDepth", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, int32(3), run(t, "echo", worker.WithPrefetch(1)))
	})
	t.Run("PrefetchZeroAsksForFreeSlots", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, int32(2), run(t, "echo", worker.WithPrefetch(0)))
	})
	t.Run("LongJobsAskForFreeSlots", func(t *testing.T) {
		t.Parallel()
		// A job of a second against a round trip of 1 ms: work goes only
		// to free slots, as in the sample.
		require.Equal(t, int32(2), run(t, "block", worker.WithPrefetch(64)))
	})
}

// TestWorkerHoldsResults: a result waits, at most the hold, for the results
// of the jobs still running, so that they reach the master together.
func TestWorkerHoldsResults(t *testing.T) {
	t.Parallel()
	// start runs a bundle of "block" jobs (a bundle: the master takes
	// WorkIsDoneBatch) and waits until they all run.
	start := func(t *testing.T, b *testBundle, pid *actor.PID, running int, ids ...string) {
		t.Helper()
		var works []*messages.Work
		for _, id := range ids {
			works = append(works, work(id, "block", id))
		}
		b.master.Send(pid, &messages.WorkBundle{Works: works})
		for range running {
			require.NotEmpty(t, startedWithin(b, testkit.Timeout()), "jobs did not start")
		}
	}
	// finishOne lets one job end and waits until the worker armed the
	// result's resend timer and, when hold, the hold's.
	finishOne := func(t *testing.T, b *testBundle, hold bool) {
		t.Helper()
		n := b.clk.Pending() + 1
		if hold {
			n++
		}
		b.release <- struct{}{}
		waitTimers(t, b.clk, n)
	}
	// nextResults returns the work ids of the next results message (a
	// WorkIsDone or a WorkIsDoneBatch), skipping requests for work.
	nextResults := func(t *testing.T, b *testBundle) []string {
		t.Helper()
		for {
			switch m := b.master.ReceiveN(1, testkit.Timeout())[0].(type) {
			case *messages.WorkerRequestsWork:
			case *messages.WorkIsDone:
				return []string{m.GetWorkId()}
			case *messages.WorkIsDoneBatch:
				var out []string
				for _, d := range m.GetDone() {
					out = append(out, d.GetWorkId())
				}
				return out
			default:
				t.Fatalf("want results, got %T", m)
			}
		}
	}
	// Three slots, no read-ahead: a request for the freed slot goes at
	// once, results only when the hold says so.
	opts := []worker.Option{worker.WithWindow(3), worker.WithPrefetch(0),
		worker.WithRegisterInterval(time.Hour), worker.WithResendInterval(time.Hour)}

	t.Run("AResultWaitsWhileOtherJobsRun", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t, opts...)
		start(t, b, pid, 3, "a", "b", "c")
		finishOne(t, b, true)
		// Work is asked for at once; the result stays.
		testkit.ExpectMsgType[*messages.WorkerRequestsWork](b.master, testkit.Timeout())
		b.master.ExpectNoMsg(50 * time.Millisecond)
		b.clk.Advance(worker.DefaultResultHold - time.Microsecond)
		b.master.ExpectNoMsg(50 * time.Millisecond)
		b.clk.Advance(time.Microsecond)
		require.Len(t, nextResults(t, b), 1)
	})

	t.Run("ResultsLeaveTogetherWhenTheLastJobEnds", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t, opts...)
		start(t, b, pid, 3, "a", "b", "c")
		finishOne(t, b, true)
		finishOne(t, b, false)  // the hold armed for the first covers it
		b.release <- struct{}{} // nothing runs now: all three go, unheld
		require.ElementsMatch(t, []string{"a", "b", "c"}, nextResults(t, b), "the results in one message")
	})

	t.Run("AWindowOfResultsLeavesAtOnce", func(t *testing.T) {
		t.Parallel()
		// Two slots and four works: as the first two end, the queued two
		// start, so jobs still run when two results (the window) wait.
		pid, b := setup(t, worker.WithWindow(2), worker.WithPrefetch(2),
			worker.WithRegisterInterval(time.Hour), worker.WithResendInterval(time.Hour))
		start(t, b, pid, 2, "a", "b", "c", "d")
		finishOne(t, b, true)
		require.NotEmpty(t, startedWithin(b, testkit.Timeout()), "the queued job did not start")
		b.release <- struct{}{}
		require.Len(t, nextResults(t, b), 2)
	})

	t.Run("HoldZeroSendsEachResultAtOnce", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t, append(opts, worker.WithResultHold(0))...)
		start(t, b, pid, 3, "a", "b", "c")
		b.release <- struct{}{}
		require.Len(t, nextResults(t, b), 1)
	})

	t.Run("StoppingSendsAHeldResult", func(t *testing.T) {
		t.Parallel()
		pid, b := setup(t, opts...)
		start(t, b, pid, 3, "a", "b", "c")
		finishOne(t, b, true)
		b.stop() // shutdown sends what it holds; the probe keeps it
		var results, handedBack int
		for results == 0 || handedBack < 2 {
			switch m := b.master.ReceiveN(1, testkit.Timeout())[0].(type) {
			case *messages.WorkIsDone:
				results++
			case *messages.WorkFailed:
				require.ErrorContains(t, errors.New(m.GetError()), worker.ErrWorkerStopping.Error())
				handedBack++
			}
		}
		require.Equal(t, 1, results)
	})
}

// TestWorkerStartsNothingOnceItsSystemShutDown: an actor system shut down
// under a worker that was not stopped (a node that exits) does not go on
// running the work the worker had queued.
func TestWorkerStartsNothingOnceItsSystemShutDown(t *testing.T) {
	t.Parallel()
	pid, b := setup(t, worker.WithWindow(1))
	b.master.Send(pid, work("a", "block", "a"))
	require.Equal(t, "a", startedWithin(b, testkit.Timeout()))
	b.master.Send(pid, work("b", "block", "b")) // beyond the window: queued
	b.sys.Shutdown()
	close(b.release)
	require.Empty(t, startedWithin(b, 200*time.Millisecond), "queued work started after the shutdown")
}
