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
