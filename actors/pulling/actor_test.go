package pulling_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/pulling"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/messages"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(memberEnv); spec != "" {
		os.Exit(runMemberB(spec))
	}
	// TestWorkersOnTwoMembersOneStops kills member B: member A's gRPC
	// connections to it re-dial until the process ends (see
	// testkit.CrashLeakIgnores). A clean-clone CI run failed the package
	// on them once.
	testkit.VerifyTestMain(m, testkit.CrashLeakIgnores...)
}

func spawnMaster[T any](t *testing.T, sys *actor.ActorSystem, opts ...pulling.Option) *actor.PID {
	t.Helper()
	props, err := pulling.MasterProps[T](opts...)
	require.NoError(t, err)
	return sys.Root.Spawn(props)
}

// blockingEpic returns one item per call and then blocks until released.
type blockingEpic struct {
	release chan struct{}
}

func (e *blockingEpic) Next(ctx context.Context, _ int) ([]string, error) {
	select {
	case <-e.release:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// processed records which items were worked on, by whom, safely.
type processed struct {
	mu    sync.Mutex
	count map[int]int
}

func (p *processed) add(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.count == nil {
		p.count = map[int]int{}
	}
	p.count[i]++
}

func (p *processed) distinct() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.count)
}

func TestMasterAndWorkersLocal(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	master := spawnMaster[int](t, sys, pulling.WithBatchSize(7))
	var seen processed
	for i := range 3 {
		props, err := pulling.WorkerProps(master, func(_ context.Context, item int) error {
			seen.add(item)
			return nil
		}, pulling.WithWindow(1+i))
		require.NoError(t, err)
		sys.Root.Spawn(props)
	}
	items := make([]int, 200)
	for i := range items {
		items[i] = i
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*testkit.Timeout())
	defer cancel()
	st, err := pulling.Run(ctx, sys.Root, master, pulling.SliceEpic(items))
	require.NoError(t, err)
	require.Equal(t, uint64(200), st.Confirmed)
	require.Equal(t, int64(0), st.Remaining)
	require.Equal(t, 200, seen.distinct())
	require.False(t, st.Running)

	// The master accepts the next Epic once the first is done.
	st, err = pulling.Run(ctx, sys.Root, master, pulling.SliceEpic([]int{1000, 1001}))
	require.NoError(t, err)
	require.Equal(t, uint64(2), st.Confirmed)
	require.Equal(t, uint64(2), st.Epic)
}

// Reference: seed 000, "The cycle ends when there is no more work
// available, as the master simply doesn't respond any more."
func TestMasterSeedProtocolWithProbeWorker(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	master := spawnMaster[string](t, sys)
	worker := testkit.NewProbe(t, sys)
	client := testkit.NewProbe(t, sys)

	worker.Send(master, &messages.PullingRegister{Worker: pids.Wire(worker.PID())})
	client.Request(master, &pulling.StartEpic[string]{Epic: pulling.SliceEpic([]string{"a", "b"})})
	started := testkit.ExpectMsgType[*pulling.EpicStarted](client, testkit.Timeout())
	require.Equal(t, uint64(1), started.Epic)
	worker.ExpectMsg(&messages.PullingWorkAvailable{}, testkit.Timeout())

	worker.Send(master, &messages.PullingGimmeWork{Worker: pids.Wire(worker.PID())})
	w := testkit.ExpectMsgType[*pulling.Work[string]](worker, testkit.Timeout())
	require.Equal(t, "a", w.Item)
	require.Equal(t, 1, w.Attempt)
	worker.ExpectNoMsg(50 * time.Millisecond) // one item per GimmeWork

	worker.Send(master, &messages.PullingWorkDone{Worker: pids.Wire(worker.PID()), ItemId: uint64(w.ID), Credit: 1})
	w2 := testkit.ExpectMsgType[*pulling.Work[string]](worker, testkit.Timeout())
	require.Equal(t, "b", w2.Item)
	worker.Send(master, &messages.PullingGimmeWork{Worker: pids.Wire(worker.PID())})
	worker.ExpectNoMsg(50 * time.Millisecond) // nothing left: silence

	// A second Epic is refused while the first runs.
	client.Request(master, &pulling.StartEpic[string]{Epic: pulling.SliceEpic([]string{"c"})})
	busy := testkit.ExpectMsgType[*pulling.CurrentlyBusy](client, testkit.Timeout())
	require.ErrorIs(t, busy.Err, pulling.ErrBusy)

	client.Request(master, &messages.PullingGetProgress{})
	p := testkit.ExpectMsgType[*messages.PullingProgress](client, testkit.Timeout())
	require.Equal(t, uint64(1), p.GetConfirmed())
	require.Equal(t, uint64(1), p.GetInFlight())
	require.Equal(t, int64(1), p.GetRemaining())

	worker.Send(master, &messages.PullingWorkDone{Worker: pids.Wire(worker.PID()), ItemId: uint64(w2.ID)})
	done := testkit.ExpectMsgType[*pulling.EpicDone](client, testkit.Timeout())
	require.NoError(t, done.Err)
	require.Equal(t, uint64(2), done.Stats.Confirmed)
}

func TestMasterRedeliversOnAckTimeout(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	clk := clock.NewManual(time.Unix(0, 0))
	master := spawnMaster[string](t, sys, pulling.WithClock(clk), pulling.WithAckTimeout(time.Minute))
	worker := testkit.NewProbe(t, sys)
	client := testkit.NewProbe(t, sys)

	worker.Send(master, &messages.PullingRegister{Worker: pids.Wire(worker.PID())})
	client.Request(master, &pulling.StartEpic[string]{Epic: pulling.SliceEpic([]string{"a"})})
	testkit.ExpectMsgType[*pulling.EpicStarted](client, testkit.Timeout())
	worker.ExpectMsg(&messages.PullingWorkAvailable{}, testkit.Timeout())
	worker.Send(master, &messages.PullingGimmeWork{Worker: pids.Wire(worker.PID())})
	w := testkit.ExpectMsgType[*pulling.Work[string]](worker, testkit.Timeout())

	done := make(chan struct{})
	defer close(done)
	require.True(t, clk.WaitForPending(done, 1), "master arms its timeout")
	clk.Advance(59 * time.Second)
	worker.ExpectNoMsg(50 * time.Millisecond)
	clk.Advance(time.Second)
	worker.ExpectMsg(&messages.PullingWorkAvailable{}, testkit.Timeout())
	worker.Send(master, &messages.PullingGimmeWork{Worker: pids.Wire(worker.PID())})
	again := testkit.ExpectMsgType[*pulling.Work[string]](worker, testkit.Timeout())
	require.Equal(t, w.ID, again.ID)
	require.Equal(t, 2, again.Attempt)

	worker.Send(master, &messages.PullingWorkDone{Worker: pids.Wire(worker.PID()), ItemId: uint64(w.ID)})
	d := testkit.ExpectMsgType[*pulling.EpicDone](client, testkit.Timeout())
	require.Equal(t, uint64(1), d.Stats.Redelivered)
}

func TestMasterRedeliversWhenWorkerStops(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	master := spawnMaster[string](t, sys)
	client := testkit.NewProbe(t, sys)
	survivor := testkit.NewProbe(t, sys)

	// A worker that takes an item and never finishes it.
	got := make(chan string, 1)
	props, err := pulling.AsyncWorkerProps(master, func(_ context.Context, item string, _ func(error)) { got <- item })
	require.NoError(t, err)
	stuck := sys.Root.Spawn(props)
	client.Request(master, &pulling.StartEpic[string]{Epic: pulling.SliceEpic([]string{"only"})})
	testkit.ExpectMsgType[*pulling.EpicStarted](client, testkit.Timeout())
	select {
	case item := <-got:
		require.Equal(t, "only", item)
	case <-time.After(testkit.Timeout()):
		t.Fatal("the worker got no item")
	}

	survivor.Send(master, &messages.PullingRegister{Worker: pids.Wire(survivor.PID())})
	// A worker that joins mid-Epic is told WorkAvailable (the seed's join).
	testkit.ExpectMsgType[*messages.PullingWorkAvailable](survivor, testkit.Timeout())
	survivor.Send(master, &messages.PullingGimmeWork{Worker: pids.Wire(survivor.PID())})
	survivor.ExpectNoMsg(50 * time.Millisecond) // held by the stuck worker
	require.NoError(t, sys.Root.StopFuture(stuck).Wait())
	w := testkit.ExpectMsgType[*pulling.Work[string]](survivor, testkit.Timeout())
	require.Equal(t, "only", w.Item)
	require.Equal(t, 2, w.Attempt)
}

func TestMasterEpicFailure(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t, testkit.WithDiscardLogs())
	clk := clock.NewManual(time.Unix(0, 0))
	master := spawnMaster[string](t, sys, pulling.WithClock(clk), pulling.WithFetchRetry(time.Second, 2))
	client := testkit.NewProbe(t, sys)
	boom := errors.New("database gone")
	epic := pulling.EpicFunc[string](func(context.Context, int) ([]string, error) { return nil, boom })
	client.Request(master, &pulling.StartEpic[string]{Epic: epic})
	testkit.ExpectMsgType[*pulling.EpicStarted](client, testkit.Timeout())
	done := make(chan struct{})
	defer close(done)
	require.True(t, clk.WaitForPending(done, 1), "retry armed after the first failure")
	clk.Advance(time.Second)
	d := testkit.ExpectMsgType[*pulling.EpicDone](client, testkit.Timeout())
	require.ErrorIs(t, d.Err, pulling.ErrEpicFailed)
	require.ErrorIs(t, d.Err, boom)
}

func TestMasterStopAbortsEpic(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	master := spawnMaster[string](t, sys)
	client := testkit.NewProbe(t, sys)
	client.Request(master, &pulling.StartEpic[string]{Epic: &blockingEpic{release: make(chan struct{})}})
	testkit.ExpectMsgType[*pulling.EpicStarted](client, testkit.Timeout())
	sys.Root.Stop(master)
	d := testkit.ExpectMsgType[*pulling.EpicDone](client, testkit.Timeout())
	require.ErrorIs(t, d.Err, pulling.ErrStopped)
}

func TestWorkerProtocol(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t, testkit.WithDiscardLogs())
	master := testkit.NewProbe(t, sys)
	props, err := pulling.WorkerProps(master.PID(), func(_ context.Context, item string) error {
		switch item {
		case "panic":
			panic("kaboom")
		case "fail":
			return errors.New("smtp refused")
		}
		return nil
	}, pulling.WithWindow(3), pulling.WithCodec(pulling.StringCodec))
	require.NoError(t, err)
	w := sys.Root.Spawn(props)

	reg := testkit.ExpectMsgType[*messages.PullingRegister](master, testkit.Timeout())
	require.Equal(t, w.String(), pids.Actor(reg.GetWorker()).String())
	require.Equal(t, uint32(3), reg.GetWindow())
	require.Equal(t, uint32(3), testkit.ExpectMsgType[*messages.PullingGimmeWork](master, testkit.Timeout()).GetCredit(),
		"asks for a full window at start")

	tests := []struct {
		name    string
		msg     any
		id      uint64
		wantErr string
	}{
		{name: "LocalItem", msg: &pulling.Work[string]{ID: 1, Item: "ok"}, id: 1},
		{name: "RemoteItem", msg: &messages.PullingWork{ItemId: 2, Payload: []byte("ok")}, id: 2},
		{name: "Error", msg: &pulling.Work[string]{ID: 3, Item: "fail"}, id: 3, wantErr: "smtp refused"},
		{name: "Panic", msg: &pulling.Work[string]{ID: 4, Item: "panic"}, id: 4, wantErr: "kaboom"},
	}
	for _, tt := range tests {
		master.Send(w, tt.msg)
		d := testkit.ExpectMsgType[*messages.PullingWorkDone](master, testkit.Timeout())
		require.Equal(t, tt.id, d.GetItemId(), tt.name)
		require.Equal(t, uint32(1), d.GetCredit(), tt.name)
		require.Contains(t, d.GetError(), tt.wantErr, tt.name)
		if tt.wantErr == "" {
			require.Empty(t, d.GetError(), tt.name)
		}
	}

	// WorkAvailable: asks for the free part of the window; the worker is idle.
	master.Send(w, &messages.PullingWorkAvailable{})
	require.Equal(t, uint32(3), testkit.ExpectMsgType[*messages.PullingGimmeWork](master, testkit.Timeout()).GetCredit())
}

func TestWorkerAsyncNeverPolls(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	master := testkit.NewProbe(t, sys)
	dones := make(chan func(error), 2)
	props, err := pulling.AsyncWorkerProps(master.PID(), func(_ context.Context, _ string, done func(error)) { dones <- done })
	require.NoError(t, err)
	w := sys.Root.Spawn(props)
	testkit.ExpectMsgType[*messages.PullingRegister](master, testkit.Timeout())
	testkit.ExpectMsgType[*messages.PullingGimmeWork](master, testkit.Timeout())

	master.Send(w, &pulling.Work[string]{ID: 9, Item: "x"})
	var done func(error)
	select {
	case done = <-dones:
	case <-time.After(testkit.Timeout()):
		t.Fatal("work not started")
	}
	master.Send(w, &messages.PullingWorkAvailable{}) // window full: no request
	master.ExpectNoMsg(100 * time.Millisecond)
	done(nil)
	done(errors.New("second call ignored"))
	d := testkit.ExpectMsgType[*messages.PullingWorkDone](master, testkit.Timeout())
	require.Equal(t, uint64(9), d.GetItemId())
	require.Empty(t, d.GetError())
	master.ExpectNoMsg(100 * time.Millisecond)
}

func TestOptionsRejectBadValues(t *testing.T) {
	t.Parallel()
	master := actor.NewPID("nonhost", "m")
	noop := func(context.Context, int) error { return nil }
	tests := []struct {
		name string
		err  func() error
	}{
		{name: "Window", err: func() error { _, err := pulling.WorkerProps(master, noop, pulling.WithWindow(0)); return err }},
		{name: "NilMaster", err: func() error { _, err := pulling.WorkerProps(nil, noop); return err }},
		{name: "NilDo", err: func() error { _, err := pulling.WorkerProps[int](master, nil); return err }},
		{name: "CodecType", err: func() error {
			_, err := pulling.MasterProps[int](pulling.WithCodec(pulling.StringCodec))
			return err
		}},
		{name: "NilCodec", err: func() error { _, err := pulling.MasterProps[string](pulling.WithCodec[string](nil)); return err }},
		{name: "BatchSize", err: func() error { _, err := pulling.MasterProps[int](pulling.WithBatchSize(0)); return err }},
		{name: "MaxWindow", err: func() error { _, err := pulling.MasterProps[int](pulling.WithMaxWindow(0)); return err }},
		{name: "AckTimeout", err: func() error { _, err := pulling.MasterProps[int](pulling.WithAckTimeout(0)); return err }},
		{name: "MaxAttempts", err: func() error { _, err := pulling.MasterProps[int](pulling.WithMaxAttempts(0)); return err }},
		{name: "FetchRetry", err: func() error { _, err := pulling.MasterProps[int](pulling.WithFetchRetry(0, 1)); return err }},
		{name: "Logger", err: func() error { _, err := pulling.MasterProps[int](pulling.WithLogger(nil)); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.ErrorIs(t, tt.err(), pulling.ErrInvalidConfig)
		})
	}
}

func TestCodecs(t *testing.T) {
	t.Parallel()
	type rec struct{ Name string }
	j := pulling.JSONCodec[rec]()
	b, err := j.Encode(rec{Name: "Ada"})
	require.NoError(t, err)
	got, err := j.Decode(b)
	require.NoError(t, err)
	require.Equal(t, rec{Name: "Ada"}, got)
	_, err = j.Decode([]byte("{"))
	require.Error(t, err)

	p := pulling.ProtoCodec(func() *messages.PullingWork { return &messages.PullingWork{} })
	b, err = p.Encode(&messages.PullingWork{ItemId: 7})
	require.NoError(t, err)
	m, err := p.Decode(b)
	require.NoError(t, err)
	require.Equal(t, uint64(7), m.GetItemId())
}
