package frontend_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// callRig is a real master on a memory journal, a client, and a worker
// started on demand whose "hold" jobs run until released or cancelled.
type callRig struct {
	sys     *actor.ActorSystem
	master  *actor.PID
	client  *frontend.Client
	started chan string      // a hold job began
	ended   chan error       // a hold job returned (its ctx's cause when cancelled)
	release chan struct{}    // ends the hold jobs that run
	reg     *worker.Registry // job functions
}

func newCallRig(t *testing.T) *callRig {
	t.Helper()
	sys := testkit.NewSystem(t)
	mem := journal.NewMemory()
	t.Cleanup(func() { _ = mem.Close() })
	props, err := master.Props(mem, master.WithLeaseTTL(0))
	require.NoError(t, err)
	r := &callRig{sys: sys, master: sys.Root.Spawn(props), started: make(chan string, 16), ended: make(chan error, 16),
		release: make(chan struct{}), reg: worker.NewRegistry()}
	r.client, err = frontend.NewClient(sys, route.Fixed(r.master), frontend.WithAskTimeout(testkit.Timeout()))
	require.NoError(t, err)
	require.NoError(t, r.reg.Register("echo", func(_ context.Context, p []byte) ([]byte, error) { return p, nil }))
	require.NoError(t, r.reg.Register("bad", func(context.Context, []byte) ([]byte, error) {
		return nil, fmt.Errorf("%w: not a number", worker.ErrBadPayload)
	}))
	require.NoError(t, r.reg.Register("hold", func(ctx context.Context, p []byte) ([]byte, error) {
		r.started <- string(p)
		select {
		case <-r.release:
			r.ended <- nil
			return p, nil
		case <-ctx.Done():
			r.ended <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		}
	}))
	return r
}

func (r *callRig) startWorker(t *testing.T) {
	t.Helper()
	props, err := worker.Props(route.Fixed(r.master), r.reg, worker.WithWorkerID("w1"))
	require.NoError(t, err)
	r.sys.Root.Spawn(props)
}

func (r *callRig) status(t *testing.T, id string) messages.WorkStatus {
	t.Helper()
	st, err := r.client.WorkStatus(context.Background(), id)
	require.NoError(t, err)
	return st.GetStatus()
}

func (r *callRig) eventuallyStatus(t *testing.T, id string, want messages.WorkStatus) {
	t.Helper()
	require.Eventually(t, func() bool { return r.status(t, id) == want }, testkit.Timeout(), 10*time.Millisecond,
		"work %s never became %v", id, want)
}

func TestCall(t *testing.T) {
	t.Parallel()

	t.Run("DoReturnsTheResult", func(t *testing.T) {
		t.Parallel()
		r := newCallRig(t)
		r.startWorker(t)
		res, err := r.client.Do(context.Background(), &messages.Work{WorkId: "a", JobType: "echo", Payload: []byte("hi")})
		require.NoError(t, err)
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, res.GetStatus())
		require.Equal(t, "hi", string(res.GetResult()))
	})

	t.Run("CallerLeavesWhileTheJobRuns", func(t *testing.T) {
		t.Parallel()
		r := newCallRig(t)
		r.startWorker(t)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := r.client.Do(ctx, &messages.Work{WorkId: "b", JobType: "hold"})
			errc <- err
		}()
		<-r.started
		cancel()
		require.ErrorIs(t, <-errc, context.Canceled)
		require.ErrorIs(t, <-r.ended, worker.ErrCallerGone, "the job's ctx is cancelled")
		r.eventuallyStatus(t, "b", messages.WorkStatus_WORK_STATUS_CANCELLED)

		// Re-submitting the id runs it again.
		close(r.release)
		res, err := r.client.Do(context.Background(), &messages.Work{WorkId: "b", JobType: "hold", Payload: []byte("2")})
		require.NoError(t, err)
		require.Equal(t, "2", string(res.GetResult()))
	})

	t.Run("CallerLeavesBeforeTheJobStarts", func(t *testing.T) {
		t.Parallel()
		r := newCallRig(t)
		ctx, cancel := context.WithCancel(context.Background())
		call, err := r.client.Call(ctx, &messages.Work{WorkId: "c", JobType: "hold"})
		require.NoError(t, err)
		cancel()
		call.Close()
		r.startWorker(t) // only now is there a worker
		r.eventuallyStatus(t, "c", messages.WorkStatus_WORK_STATUS_CANCELLED)
		select {
		case id := <-r.started:
			t.Fatalf("the job started (%q) though its caller had left", id)
		default:
		}
	})

	t.Run("DetachedCallRunsToTheEnd", func(t *testing.T) {
		t.Parallel()
		r := newCallRig(t)
		ctx, cancel := context.WithCancel(context.Background())
		call, err := r.client.Call(ctx, &messages.Work{WorkId: "d", JobType: "echo", Payload: []byte("x")})
		require.NoError(t, err)
		wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, err = call.Wait(wctx) // no worker yet: the wait ends first
		wcancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NoError(t, call.Detach(context.Background()))
		call.Close()
		cancel()
		r.startWorker(t)
		r.eventuallyStatus(t, "d", messages.WorkStatus_WORK_STATUS_DONE)
	})

	t.Run("DeadWorkIsAnError", func(t *testing.T) {
		t.Parallel()
		r := newCallRig(t)
		r.startWorker(t)
		res, err := r.client.Do(context.Background(), &messages.Work{WorkId: "e", JobType: "bad"})
		require.True(t, errors.Is(err, frontend.ErrWorkDead), "got %v", err)
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DEAD, res.GetStatus())
	})
}

func TestReadFeed(t *testing.T) {
	t.Parallel()
	r := newCallRig(t)
	r.startWorker(t)
	for _, id := range []string{"a", "b", "c"} {
		_, err := r.client.Do(context.Background(), &messages.Work{WorkId: id, JobType: "echo", Payload: []byte(id)})
		require.NoError(t, err)
	}
	page, err := r.client.ReadFeed(context.Background(), frontend.Cursor{}, 2, 0)
	require.NoError(t, err)
	require.Len(t, page.Entries, 2)
	require.Equal(t, "a", page.Entries[0].GetWorkId())
	next, err := frontend.ParseCursor(page.Next.String())
	require.NoError(t, err)
	require.Equal(t, page.Next, next)
	page, err = r.client.ReadFeed(context.Background(), next, 10, 0)
	require.NoError(t, err)
	require.Len(t, page.Entries, 1)
	require.Equal(t, "c", page.Entries[0].GetWorkId())
	require.Equal(t, page.Entries[0].Cursor, page.Next)

	// A held read is answered by the next result.
	got := make(chan *frontend.FeedPage, 1)
	go func() {
		p, err := r.client.ReadFeed(context.Background(), page.Next, 10, testkit.Timeout())
		if err == nil {
			got <- p
		}
		close(got)
	}()
	time.Sleep(20 * time.Millisecond)
	_, err = r.client.Do(context.Background(), &messages.Work{WorkId: "d", JobType: "echo"})
	require.NoError(t, err)
	p := <-got
	require.NotNil(t, p)
	require.Equal(t, "d", p.Entries[0].GetWorkId())

	_, err = r.client.ReadFeed(context.Background(), frontend.Cursor{}.With(0, 1_000_000), 10, 0)
	require.ErrorIs(t, err, frontend.ErrFeedAhead)
}

func TestParseCursor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{in: "", want: "s0:0"},
		{in: "0", want: "s0:0"},
		{in: "s0:42", want: "s0:42"},
		{in: "s0:1,s1:7", want: "s0:1,s1:7"},
		{in: "s1:3", err: true},
		{in: "s0:-1", err: true},
		{in: "s0:x", err: true},
		{in: "42", err: true},
	} {
		c, err := frontend.ParseCursor(tc.in)
		if tc.err {
			require.ErrorIs(t, err, frontend.ErrInvalidCursor, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, c.String())
	}
}

func TestConsumerReadsTheFeed(t *testing.T) {
	t.Parallel()
	r := newCallRig(t)
	r.startWorker(t)
	store := frontend.FileCursor{Path: filepath.Join(t.TempDir(), "results.cursor")}
	consumed := make(chan string, 64)
	start := func() *actor.PID {
		props, err := frontend.ConsumerProps(frontend.WithoutEventStream(), frontend.WithFeed(r.client, store),
			frontend.WithOnResult(func(m *messages.WorkResult) { consumed <- m.GetWorkId() }))
		require.NoError(t, err)
		return r.sys.Root.Spawn(props)
	}
	expect := func(ids ...string) {
		t.Helper()
		for _, want := range ids {
			select {
			case got := <-consumed:
				require.Equal(t, want, got)
			case <-time.After(testkit.Timeout()):
				t.Fatalf("%s not consumed", want)
			}
		}
	}
	do := func(id string) {
		_, err := r.client.Do(context.Background(), &messages.Work{WorkId: id, JobType: "echo"})
		require.NoError(t, err)
	}
	do("a")
	do("b")
	c := start()
	expect("a", "b")
	do("c")
	expect("c")
	require.Eventually(t, func() bool { // the cursor is saved after the batch
		cur, err := store.Load()
		return err == nil && cur.Seq(0) > 0
	}, testkit.Timeout(), 5*time.Millisecond)
	require.NoError(t, r.sys.Root.StopFuture(c).Wait())

	// A new consumer on the same cursor file goes on after c, and a stopped
	// one missed nothing.
	do("d")
	start()
	expect("d")
	select {
	case id := <-consumed:
		t.Fatalf("consumed %s again", id)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestRetriedCallRuns: a job is skipped as cancelled only when no caller
// that asked for it still waits (issue 34 item 1). A Call (or Do) retried
// with the same work id after its first caller left must run the job, as
// must a job that another caller still waits for.
func TestRetriedCallRuns(t *testing.T) {
	t.Parallel()

	t.Run("RetryAfterTheFirstCallerLeft", func(t *testing.T) {
		t.Parallel()
		r := newCallRig(t)
		ctx, cancel := context.WithCancel(context.Background())
		call, err := r.client.Call(ctx, &messages.Work{WorkId: "r", JobType: "echo", Payload: []byte("x")})
		require.NoError(t, err)
		cancel() // the first caller gives up (a dropped connection) while the job is queued
		call.Close()
		// The retry, as an idempotent client makes it: same id, a caller
		// that waits. Only once it is acknowledged does a worker come.
		retry, err := r.client.Call(context.Background(), &messages.Work{WorkId: "r", JobType: "echo", Payload: []byte("x")})
		require.NoError(t, err)
		defer retry.Close()
		r.startWorker(t)
		res, err := retry.Wait(waitCtx(t))
		require.NoError(t, err, "the retried call must run the job")
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, res.GetStatus())
		require.Equal(t, "x", string(res.GetResult()))
	})

	t.Run("AnotherCallerStillWaits", func(t *testing.T) {
		t.Parallel()
		r := newCallRig(t)
		live, err := r.client.Call(context.Background(), &messages.Work{WorkId: "s", JobType: "echo", Payload: []byte("y")})
		require.NoError(t, err)
		defer live.Close()
		ctx, cancel := context.WithCancel(context.Background())
		gone, err := r.client.Call(ctx, &messages.Work{WorkId: "s", JobType: "echo", Payload: []byte("y")})
		require.NoError(t, err)
		cancel() // the later caller leaves; the first still waits
		gone.Close()
		r.startWorker(t)
		res, err := live.Wait(waitCtx(t))
		require.NoError(t, err)
		require.Equal(t, "y", string(res.GetResult()))
	})

	t.Run("EveryCallerLeft", func(t *testing.T) {
		t.Parallel()
		r := newCallRig(t)
		var calls []*frontend.Call
		for range 3 {
			ctx, cancel := context.WithCancel(context.Background())
			call, err := r.client.Call(ctx, &messages.Work{WorkId: "u", JobType: "hold"})
			require.NoError(t, err)
			cancel()
			calls = append(calls, call)
		}
		for _, c := range calls {
			c.Close()
		}
		r.startWorker(t)
		r.eventuallyStatus(t, "u", messages.WorkStatus_WORK_STATUS_CANCELLED)
		select {
		case id := <-r.started:
			t.Fatalf("the job started (%q) though every caller had left", id)
		default:
		}
	})

	t.Run("SubmittedWithoutAWaiterRunsWhoeverLeaves", func(t *testing.T) {
		t.Parallel()
		r := newCallRig(t)
		require.NoError(t, r.client.Submit(context.Background(), &messages.Work{WorkId: "v", JobType: "echo", Payload: []byte("z")}))
		ctx, cancel := context.WithCancel(context.Background())
		call, err := r.client.Call(ctx, &messages.Work{WorkId: "v", JobType: "echo", Payload: []byte("z")})
		require.NoError(t, err)
		cancel()
		call.Close()
		r.startWorker(t)
		r.eventuallyStatus(t, "v", messages.WorkStatus_WORK_STATUS_DONE)
	})

	t.Run("RetryWhileTheAbandonedJobRuns", func(t *testing.T) {
		t.Parallel()
		r := newCallRig(t)
		r.startWorker(t)
		ctx, cancel := context.WithCancel(context.Background())
		first, err := r.client.Call(ctx, &messages.Work{WorkId: "w", JobType: "hold", Payload: []byte("1")})
		require.NoError(t, err)
		require.Equal(t, "1", <-r.started)
		second, err := r.client.Call(context.Background(), &messages.Work{WorkId: "w", JobType: "hold", Payload: []byte("1")})
		require.NoError(t, err)
		defer second.Close()
		cancel() // the first caller leaves while the job runs: its run is cancelled
		first.Close()
		require.ErrorIs(t, <-r.ended, worker.ErrCallerGone)
		// The second caller still waits: the job runs again, for it.
		select {
		case p := <-r.started:
			require.Equal(t, "1", p)
		case <-second.Done():
			res, _ := second.Poll()
			t.Fatalf("the job did not run again for the caller still waiting; it ended %v", res.GetStatus())
		case <-time.After(4 * testkit.Timeout()):
			t.Fatal("the job did not run again for the caller still waiting")
		}
		close(r.release)
		res, err := second.Wait(waitCtx(t))
		require.NoError(t, err)
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, res.GetStatus())
	})
}

// waitCtx bounds a test's wait for an outcome.
func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 4*testkit.Timeout())
	t.Cleanup(cancel)
	return ctx
}
