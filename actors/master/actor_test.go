package master_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/journal/journaltest"
	"github.com/foreman-actors/foreman/messages"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var errDiskFull = errors.New("disk full (injected)")

type bundle struct {
	sys     *actor.ActorSystem
	mem     *journal.Memory
	j       *journaltest.Faulty
	clk     *clock.Manual
	front   *testkit.Probe // plays the frontend
	worker  *testkit.Probe // plays a worker
	results *testkit.Probe // receives published results
	opts    []master.Option
	master  *actor.PID
}

// setup starts a master on a fresh journal. Its lease is off unless opts
// turn it on: these tests advance the manual clock by seconds at once, which
// a lease holder rightly takes as a pause that lost its lease (the lease
// has its own tests, in lease_test.go).
func setup(t *testing.T, opts ...master.Option) *bundle {
	t.Helper()
	clk := clock.NewManual(t0)
	mem := journal.NewMemory(journal.WithClock(clk)) // leases run on the masters' clock
	t.Cleanup(func() { _ = mem.Close() })            // runs after the system is shut down
	sys := testkit.NewSystem(t)
	b := &bundle{sys: sys, mem: mem, j: journaltest.NewFaulty(mem), clk: clk}
	b.front = testkit.NewProbe(t, sys)
	b.worker = testkit.NewProbe(t, sys)
	b.results = testkit.NewProbe(t, sys)
	root, res := sys.Root, b.results.PID()
	b.opts = append([]master.Option{
		master.WithLeaseTTL(0),
		master.WithClock(b.clk),
		master.WithBackoff(time.Second, 4*time.Second),
		master.WithPublisher(master.PublisherFunc(func(r *messages.WorkResult) { root.Send(res, r) })),
	}, opts...)
	b.master = b.start(t)
	return b
}

func (b *bundle) start(t *testing.T) *actor.PID {
	t.Helper()
	p, err := master.Props(b.j, b.opts...)
	require.NoError(t, err)
	return b.sys.Root.Spawn(p)
}

func (b *bundle) submit(t *testing.T, id string) {
	t.Helper()
	b.front.Send(b.master, &messages.Work{WorkId: id, JobType: "square", Payload: []byte(id)})
	b.front.ExpectMsg(&messages.Ack{WorkId: id}, testkit.Timeout())
}

// submit2 submits to a given master PID.
func (b *bundle) submit2(t *testing.T, m *actor.PID, id string) {
	t.Helper()
	b.front.Send(m, &messages.Work{WorkId: id, JobType: "square", Payload: []byte(id)})
	b.front.ExpectMsg(&messages.Ack{WorkId: id}, testkit.Timeout())
}

func (b *bundle) register(t *testing.T, p *testkit.Probe, id string) {
	t.Helper()
	p.Send(b.master, &messages.RegisterWorker{WorkerId: id, Worker: pids.Wire(p.PID())})
}

func (b *bundle) status(t *testing.T) *messages.MasterStatus {
	t.Helper()
	b.front.Request(b.master, &messages.GetMasterStatus{})
	return testkit.ExpectMsgType[*messages.MasterStatus](b.front, testkit.Timeout())
}

func (b *bundle) workStatus(t *testing.T, id string) *messages.WorkStatusReply {
	t.Helper()
	b.front.Request(b.master, &messages.GetWorkStatus{WorkId: id})
	return testkit.ExpectMsgType[*messages.WorkStatusReply](b.front, testkit.Timeout())
}

// requestWork asks for up to n works as worker id and returns those handed
// out (waiting for the master to answer a status request after them).
func (b *bundle) requestWork(t *testing.T, p *testkit.Probe, id string, n int) []*messages.Work {
	t.Helper()
	p.Send(b.master, &messages.WorkerRequestsWork{WorkerId: id, Worker: pids.Wire(p.PID()), Capacity: int32(n)})
	p.Request(b.master, &messages.GetMasterStatus{})
	var works []*messages.Work
	for {
		switch m := p.FishForMessage(testkit.Timeout(), func(any) bool { return true }).(type) {
		case *messages.Work:
			works = append(works, m)
		case *messages.WorkBundle:
			works = append(works, m.GetWorks()...)
		case *messages.MasterStatus:
			return works
		}
	}
}

// advance moves the manual clock once the master has armed at least n timers.
func (b *bundle) advance(t *testing.T, n int, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	timer := time.AfterFunc(testkit.Timeout(), func() { close(done) })
	defer timer.Stop()
	require.True(t, b.clk.WaitForPending(done, n), "master armed fewer than %d timers", n)
	b.clk.Advance(d)
}

func events(t *testing.T, j persistence.Journal) []any {
	t.Helper()
	var out []any
	require.NoError(t, j.Load(context.Background(), master.DefaultStream, 1, func(ev persistence.Event) error {
		out = append(out, ev.Msg)
		return nil
	}))
	return out
}

func TestMaster(t *testing.T) {
	t.Parallel()

	t.Run("AcksOnlyDurableWorkAndDuplicatesOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.submit(t, "a")
		var accepted int
		for _, ev := range events(t, b.mem) {
			if _, ok := ev.(*messages.WorkAccepted); ok {
				accepted++
			}
		}
		require.Equal(t, 1, accepted, "the ack came after WorkAccepted was stored")
		b.submit(t, "a")
		require.Equal(t, int64(1), b.status(t).GetPending(), "a duplicate is re-acked, not queued")
		require.Len(t, events(t, b.mem), 2, "MasterRecovered and one WorkAccepted")
	})

	t.Run("RejectsInvalidWork", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithMaxPayload(4), master.WithJobTypes("square"))
		tests := []struct {
			name string
			work *messages.Work
			code messages.RejectCode
		}{
			{name: "EmptyID", work: &messages.Work{JobType: "square"}, code: messages.RejectCode_REJECT_CODE_INVALID},
			{name: "EmptyType", work: &messages.Work{WorkId: "x"}, code: messages.RejectCode_REJECT_CODE_INVALID},
			{name: "TooLarge", work: &messages.Work{WorkId: "x", JobType: "square", Payload: []byte("12345")}, code: messages.RejectCode_REJECT_CODE_TOO_LARGE},
			{name: "UnknownType", work: &messages.Work{WorkId: "x", JobType: "cube"}, code: messages.RejectCode_REJECT_CODE_UNKNOWN_TYPE},
		}
		for _, tt := range tests {
			b.front.Send(b.master, tt.work)
			r := testkit.ExpectMsgType[*messages.WorkRejected](b.front, testkit.Timeout())
			require.Equal(t, tt.code, r.GetCode(), tt.name)
			require.NotEmpty(t, r.GetReason(), tt.name)
		}
		require.Equal(t, int64(0), b.status(t).GetAcceptedTotal())
	})

	t.Run("RejectsWorkOfAnotherShard", func(t *testing.T) {
		t.Parallel()
		// Shard 1 of 4: a node routing with another number of shards sends
		// it ids that belong elsewhere; it must not accept them.
		b := setup(t, master.WithShard(1, 4))
		var mine, other string
		for i := 0; mine == "" || other == ""; i++ {
			id := "job-" + strconv.Itoa(i)
			switch route.ShardOf(id, 4) {
			case 1:
				mine = cmp.Or(mine, id)
			case 3:
				other = cmp.Or(other, id)
			}
		}
		b.front.Send(b.master, &messages.Work{WorkId: other, JobType: "square"})
		r := testkit.ExpectMsgType[*messages.WorkRejected](b.front, testkit.Timeout())
		require.Equal(t, messages.RejectCode_REJECT_CODE_INVALID, r.GetCode())
		require.Contains(t, r.GetReason(), "belongs to shard 3 of 4")
		require.Contains(t, r.GetReason(), "--shards 4")
		b.submit(t, mine)
		require.Equal(t, int64(1), b.status(t).GetAcceptedTotal(), "only the work of this shard")
	})

	t.Run("WarnsOfAWorkerWithAnotherNumberOfShards", func(t *testing.T) {
		t.Parallel()
		var (
			mu   sync.Mutex
			logs strings.Builder
		)
		log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logs.Write(p)
		}), nil))
		b := setup(t, master.WithShard(0, 4), master.WithLogger(log))
		b.worker.Send(b.master, &messages.RegisterWorker{WorkerId: "right", Worker: pids.Wire(b.worker.PID()), Shards: 4})
		b.worker.Send(b.master, &messages.RegisterWorker{WorkerId: "wrong", Worker: pids.Wire(b.worker.PID()), Shards: 2})
		b.worker.Send(b.master, &messages.RegisterWorker{WorkerId: "silent", Worker: pids.Wire(b.worker.PID())})
		st := b.status(t) // after the three registrations: one mailbox
		require.EqualValues(t, 3, st.GetIdleWorkers())
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, 1, strings.Count(logs.String(), "another number of shards"), logs.String())
		require.Contains(t, logs.String(), "worker_id=wrong")
		require.Contains(t, logs.String(), "worker_shards=2 cluster_shards=4")
	})

	// A worker node's readiness probe asks which of its workers the
	// master knows: those registered and not deregistered.
	t.Run("AnswersWhichWorkersItKnows", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		known := func() []string {
			b.front.Request(b.master, &messages.GetWorkersKnown{WorkerIds: []string{"w1", "w2", "w3"}})
			return testkit.ExpectMsgType[*messages.WorkersKnown](b.front, testkit.Timeout()).GetKnown()
		}
		require.Empty(t, known())
		b.register(t, b.worker, "w1")
		b.register(t, b.worker, "w3")
		require.Equal(t, []string{"w1", "w3"}, known())
		b.worker.Send(b.master, &messages.DeregisterWorker{WorkerId: "w1"})
		require.Equal(t, []string{"w3"}, known())
	})

	t.Run("HandsOutCompletesAndPublishes", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.register(t, b.worker, "w1")
		b.submit(t, "a")
		b.submit(t, "b")
		b.submit(t, "c")
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		works := b.requestWork(t, b.worker, "w1", 2)
		require.Len(t, works, 2)
		require.Equal(t, "a", works[0].GetWorkId())
		require.Equal(t, int32(1), works[0].GetAttempt())
		require.Equal(t, []byte("a"), works[0].GetPayload())
		require.Equal(t, messages.WorkStatus_WORK_STATUS_RUNNING, b.workStatus(t, "a").GetStatus())
		st := b.status(t)
		require.Equal(t, int64(1), st.GetPending())
		require.Equal(t, int64(2), st.GetInProgress())
		require.Equal(t, int64(1), st.GetBusyWorkers())

		b.worker.Send(b.master, &messages.WorkIsDone{WorkerId: "w1", WorkId: "a", Result: []byte("aa")})
		b.worker.ExpectMsg(&messages.Ack{WorkId: "a"}, testkit.Timeout())
		b.results.ExpectMsg(&messages.WorkResult{WorkId: "a", JobType: "square", Result: []byte("aa")}, testkit.Timeout())
		// Idempotent: the Ack was lost, the worker re-sends.
		b.worker.Send(b.master, &messages.WorkIsDone{WorkerId: "w1", WorkId: "a", Result: []byte("aa")})
		b.worker.ExpectMsg(&messages.Ack{WorkId: "a"}, testkit.Timeout())
		b.results.ExpectNoMsg(50 * time.Millisecond)
		ws := b.workStatus(t, "a")
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, ws.GetStatus())
		require.Equal(t, []byte("aa"), ws.GetResult())
		// A done id submitted again is acked and not run again.
		b.submit(t, "a")
		require.Equal(t, int64(1), b.status(t).GetPending())
	})

	t.Run("HandOutRecordsRideWithTheNextWrite", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithStartedHold(time.Hour)) // no tick in the test: only writes and answers flush
		b.register(t, b.worker, "w1")
		b.submit(t, "a")
		b.submit(t, "b")
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		kinds := func() (out []string) {
			for _, ev := range events(t, b.j) {
				switch ev := ev.(type) {
				case *messages.WorkAccepted:
					out = append(out, "accepted "+ev.GetWork().GetWorkId())
				case *messages.WorkStarted:
					out = append(out, "started "+ev.GetWorkId())
				case *messages.WorkCompleted:
					out = append(out, "completed "+ev.GetWorkId())
				default:
					out = append(out, fmt.Sprintf("%T", ev))
				}
			}
			return out
		}
		base := kinds() // the recovery marker and the two acceptances

		b.worker.Send(b.master, &messages.WorkerRequestsWork{WorkerId: "w1", Worker: pids.Wire(b.worker.PID()), Capacity: 1})
		b.worker.ExpectMsg(&messages.Work{WorkId: "a", JobType: "square", Payload: []byte("a"), Attempt: 1}, testkit.Timeout())
		require.Equal(t, base, kinds(), "the hand-out is held, not written")

		// The completion carries it, in order: one write.
		b.worker.Send(b.master, &messages.WorkIsDone{WorkerId: "w1", WorkId: "a", Result: []byte("aa")})
		b.worker.ExpectMsg(&messages.Ack{WorkId: "a"}, testkit.Timeout())
		require.Equal(t, append(slices.Clone(base), "started a", "completed a"), kinds())

		// An answer that shows the state writes what it shows first.
		b.worker.Send(b.master, &messages.WorkerRequestsWork{WorkerId: "w1", Worker: pids.Wire(b.worker.PID()), Capacity: 1})
		testkit.ExpectMsgType[*messages.Work](b.worker, testkit.Timeout())
		require.Equal(t, messages.WorkStatus_WORK_STATUS_RUNNING, b.workStatus(t, "b").GetStatus())
		require.Equal(t, append(slices.Clone(base), "started a", "completed a", "started b"), kinds())
	})

	t.Run("HeldHandOutIsWrittenWithinTheHold", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithStartedHold(5*time.Millisecond))
		b.register(t, b.worker, "w1")
		b.submit(t, "a")
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		b.worker.Send(b.master, &messages.WorkerRequestsWork{WorkerId: "w1", Worker: pids.Wire(b.worker.PID()), Capacity: 1})
		testkit.ExpectMsgType[*messages.Work](b.worker, testkit.Timeout())
		require.Eventually(t, func() bool {
			for _, ev := range events(t, b.j) {
				if st, ok := ev.(*messages.WorkStarted); ok && st.GetWorkId() == "a" {
					return true
				}
			}
			return false
		}, testkit.Timeout(), time.Millisecond, "the hand-out of an idle master is written after the hold")
	})

	t.Run("HandsOutABundleAndTakesResultsInABatch", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.register(t, b.worker, "w1")
		for _, id := range []string{"a", "b", "c", "d"} {
			b.submit(t, id)
		}
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		// Three asked, three ready, by a worker that takes bundles: one
		// message, in order.
		b.worker.Send(b.master, &messages.WorkerRequestsWork{WorkerId: "w1", Worker: pids.Wire(b.worker.PID()), Capacity: 3, Bundles: true})
		bun := testkit.ExpectMsgType[*messages.WorkBundle](b.worker, testkit.Timeout())
		ids := func(ws []*messages.Work) (out []string) {
			for _, w := range ws {
				out = append(out, w.GetWorkId())
			}
			return out
		}
		require.Equal(t, []string{"a", "b", "c"}, ids(bun.GetWorks()))
		require.Equal(t, int32(1), bun.GetWorks()[0].GetAttempt())
		// One asked: a plain Work.
		b.worker.Send(b.master, &messages.WorkerRequestsWork{WorkerId: "w1", Worker: pids.Wire(b.worker.PID()), Capacity: 1, Bundles: true})
		b.worker.ExpectMsg(&messages.Work{WorkId: "d", JobType: "square", Payload: []byte("d"), Attempt: 1}, testkit.Timeout())
		// A worker from before bundles (a rolling upgrade) gets one Work each.
		b.submit(t, "e")
		b.submit(t, "f")
		old := testkit.NewProbe(t, b.sys)
		b.register(t, old, "old")
		old.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		old.Send(b.master, &messages.WorkerRequestsWork{WorkerId: "old", Worker: pids.Wire(old.PID()), Capacity: 2})
		old.ExpectMsg(&messages.Work{WorkId: "e", JobType: "square", Payload: []byte("e"), Attempt: 1}, testkit.Timeout())
		old.ExpectMsg(&messages.Work{WorkId: "f", JobType: "square", Payload: []byte("f"), Attempt: 1}, testkit.Timeout())

		// A batch of results: a repeated one and one of an unknown work are
		// acknowledged too (the worker stops re-sending them) and recorded
		// once; the batch names the worker once.
		b.worker.Send(b.master, &messages.WorkIsDoneBatch{WorkerId: "w1", Done: []*messages.WorkIsDone{
			{WorkId: "a", Result: []byte("aa")},
			{WorkId: "b", Result: []byte("bb")},
			{WorkId: "a", Result: []byte("aa")},
			{WorkId: "zz", Result: []byte("?")},
		}})
		b.worker.ExpectMsg(&messages.AckBatch{WorkIds: []string{"a", "b", "a", "zz"}}, testkit.Timeout())
		b.results.ExpectMsg(&messages.WorkResult{WorkId: "a", JobType: "square", Result: []byte("aa")}, testkit.Timeout())
		b.results.ExpectMsg(&messages.WorkResult{WorkId: "b", JobType: "square", Result: []byte("bb")}, testkit.Timeout())
		b.results.ExpectNoMsg(50 * time.Millisecond)
		for id, res := range map[string]string{"a": "aa", "b": "bb"} {
			ws := b.workStatus(t, id)
			require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, ws.GetStatus(), id)
			require.Equal(t, []byte(res), ws.GetResult(), id)
		}
		require.Equal(t, messages.WorkStatus_WORK_STATUS_RUNNING, b.workStatus(t, "c").GetStatus())
		st := b.status(t)
		require.Equal(t, int64(2), st.GetDone())
		require.Equal(t, int64(4), st.GetInProgress()) // c, d, e, f

		// Recorded, not just answered: a new activation reads them back.
		require.NoError(t, b.sys.Root.StopFuture(b.master).Wait())
		b.master = b.start(t)
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, b.workStatus(t, "b").GetStatus())
		require.Equal(t, []byte("bb"), b.workStatus(t, "b").GetResult())
	})

	t.Run("FailedWorkBacksOffThenDies", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithMaxAttempts(2))
		b.register(t, b.worker, "w1")
		b.submit(t, "a")
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		works := b.requestWork(t, b.worker, "w1", 1)
		require.Len(t, works, 1)
		b.worker.Send(b.master, &messages.WorkFailed{WorkerId: "w1", WorkId: "a", Error: "boom"})
		require.Empty(t, b.requestWork(t, b.worker, "w1", 1), "backing off")
		ws := b.workStatus(t, "a")
		require.Equal(t, messages.WorkStatus_WORK_STATUS_FAILED, ws.GetStatus())
		require.Equal(t, "boom", ws.GetLastError())
		// Cleanup tick (5 s) and the wake-up at 1 s backoff are armed.
		b.advance(t, 2, time.Second)
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		works = b.requestWork(t, b.worker, "w1", 1)
		require.Len(t, works, 1)
		require.Equal(t, int32(2), works[0].GetAttempt())
		b.worker.Send(b.master, &messages.WorkFailed{WorkerId: "w1", WorkId: "a", Error: "boom again"})
		ws = b.workStatus(t, "a")
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DEAD, ws.GetStatus())
		require.Equal(t, int32(2), ws.GetAttempts())
		require.Equal(t, int64(1), b.status(t).GetDead())
		// Re-submitting a dead id makes it pending again.
		b.submit(t, "a")
		require.Equal(t, messages.WorkStatus_WORK_STATUS_ACCEPTED, b.workStatus(t, "a").GetStatus())
	})

	t.Run("PermanentFailureDiesAtOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t) // 5 attempts by default: none is spent on a failure a retry cannot fix
		b.register(t, b.worker, "w1")
		b.submit(t, "a")
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		require.Len(t, b.requestWork(t, b.worker, "w1", 1), 1)
		b.worker.Send(b.master, &messages.WorkFailed{WorkerId: "w1", WorkId: "a", Error: "bad payload", Permanent: true})
		ws := b.workStatus(t, "a")
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DEAD, ws.GetStatus())
		require.Equal(t, int32(1), ws.GetAttempts())
		require.Equal(t, "bad payload", ws.GetLastError())
		require.Empty(t, b.requestWork(t, b.worker, "w1", 1), "dead work is not handed out again")
	})

	t.Run("WaiterTravelsWithTheWork", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.register(t, b.worker, "w1")
		waiterPID := actor.NewPID("nonhost", "some-waiter")
		res, err := b.sys.Root.RequestFuture(b.master, &messages.Work{WorkId: "w", JobType: "square", Payload: []byte("2"), Waiter: pids.Wire(waiterPID)}, testkit.Timeout()).Result()
		require.NoError(t, err)
		require.IsType(t, &messages.Ack{}, res)
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		works := b.requestWork(t, b.worker, "w1", 1)
		require.Len(t, works, 1)
		require.True(t, proto.Equal(pids.Wire(waiterPID), works[0].GetWaiter()), "the worker needs the caller's waiter to ask it")
	})

	t.Run("IdleStaleActivationStops", func(t *testing.T) {
		t.Parallel()
		// A recovers, then B recovers on the same stream (as protoactor may
		// do during a membership change): A never writes again, yet its
		// fence check sees B's MasterRecovered event and stops it.
		b := setup(t)
		require.NotNil(t, b.status(t), "A has recovered")
		b.front.Watch(b.master)
		second := b.start(t)
		st, err := b.sys.Root.RequestFuture(second, &messages.GetMasterStatus{}, testkit.Timeout()).Result()
		require.NoError(t, err)
		require.IsType(t, &messages.MasterStatus{}, st, "B has recovered")
		b.advance(t, 1, master.DefaultFenceCheck)
		b.front.ExpectTerminated(b.master, testkit.Timeout())
		b.submit2(t, second, "after")
	})

	t.Run("CleanupRequeuesTimedOutWorkAndForgetsWorkers", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithWorkTimeout(10*time.Second), master.WithWorkerDeadAfter(30*time.Second))
		slow := testkit.NewProbe(t, b.sys)
		b.register(t, slow, "slow")
		b.submit(t, "a")
		slow.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		require.Len(t, b.requestWork(t, slow, "slow", 1), 1)
		b.register(t, b.worker, "w2")
		b.advance(t, 1, 5*time.Second) // first tick: not overdue yet
		b.advance(t, 1, 5*time.Second) // second tick: 10 s, overdue
		b.advance(t, 2, time.Second)   // its 1 s backoff passes
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		works := b.requestWork(t, b.worker, "w2", 1)
		require.Len(t, works, 1)
		require.Equal(t, int32(2), works[0].GetAttempt())
		ws := b.workStatus(t, "a")
		require.Equal(t, "work timed out", ws.GetLastError())
		// The slow worker was forgotten; w2 is busy.
		st := b.status(t)
		require.Equal(t, int64(1), st.GetBusyWorkers())
		require.Equal(t, int64(0), st.GetIdleWorkers())
		// A late result from the slow worker still completes the work.
		slow.Send(b.master, &messages.WorkIsDone{WorkerId: "slow", WorkId: "a", Result: []byte("late")})
		slow.ExpectMsg(&messages.Ack{WorkId: "a"}, testkit.Timeout())
		// w2 is idle now and stops registering: forgotten after 30 s.
		for range 7 {
			b.advance(t, 1, 5*time.Second)
		}
		st = b.status(t)
		require.Equal(t, int64(0), st.GetIdleWorkers()+st.GetBusyWorkers())
	})

	t.Run("DoneIDsAreForgottenAfterRetention", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithDoneRetention(time.Minute), master.WithWorkTimeout(20*time.Second))
		b.register(t, b.worker, "w1")
		b.submit(t, "a")
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		require.Len(t, b.requestWork(t, b.worker, "w1", 1), 1)
		b.worker.Send(b.master, &messages.WorkIsDone{WorkerId: "w1", WorkId: "a", Result: []byte("r")})
		b.worker.ExpectMsg(&messages.Ack{WorkId: "a"}, testkit.Timeout())
		for range 6 { // 60 s of 10 s cleanup ticks: still retained
			b.advance(t, 1, 10*time.Second)
		}
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, b.workStatus(t, "a").GetStatus())
		b.advance(t, 1, 10*time.Second)
		require.Equal(t, messages.WorkStatus_WORK_STATUS_UNKNOWN, b.workStatus(t, "a").GetStatus())
		// A re-submit after the retention runs again (documented).
		b.submit(t, "a")
		require.Equal(t, messages.WorkStatus_WORK_STATUS_ACCEPTED, b.workStatus(t, "a").GetStatus())
		var forgotten bool
		for _, ev := range events(t, b.mem) {
			_, ok := ev.(*messages.FinishedForgotten)
			forgotten = forgotten || ok
		}
		require.True(t, forgotten, "forgetting is journaled, so replay agrees")
	})

	t.Run("FinishedBeyondTheLimitAreForgottenFirst", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithDoneLimit(2), master.WithDoneRetention(time.Hour), master.WithWorkTimeout(20*time.Second))
		b.register(t, b.worker, "w1")
		for _, id := range []string{"a", "b", "c"} {
			b.submit(t, id)
		}
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		for _, id := range []string{"a", "b", "c"} {
			works := b.requestWork(t, b.worker, "w1", 1)
			require.Len(t, works, 1)
			require.Equal(t, id, works[0].GetWorkId())
			b.worker.Send(b.master, &messages.WorkIsDone{WorkerId: "w1", WorkId: id, Result: []byte("r")})
			b.worker.ExpectMsg(&messages.Ack{WorkId: id}, testkit.Timeout())
			b.advance(t, 0, time.Second) // each finishes at an instant of its own
		}
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, b.workStatus(t, "a").GetStatus(), "kept until the cleanup")
		b.advance(t, 1, 10*time.Second)
		require.Equal(t, messages.WorkStatus_WORK_STATUS_UNKNOWN, b.workStatus(t, "a").GetStatus(), "the oldest beyond the limit")
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, b.workStatus(t, "b").GetStatus())
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, b.workStatus(t, "c").GetStatus())
		require.Equal(t, int64(2), b.status(t).GetDone())
	})

	t.Run("UnregisteredRequesterIsRegistered", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.submit(t, "a")
		works := b.requestWork(t, b.worker, "w9", 1)
		require.Len(t, works, 1, "a worker that missed a master restart is served at once")
		require.Equal(t, int64(1), b.status(t).GetBusyWorkers())
	})

	t.Run("DeregisterReturnsWork", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.register(t, b.worker, "w1")
		b.submit(t, "a")
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		require.Len(t, b.requestWork(t, b.worker, "w1", 1), 1)
		b.worker.Send(b.master, &messages.DeregisterWorker{WorkerId: "w1"})
		other := testkit.NewProbe(t, b.sys)
		b.register(t, other, "w2")
		other.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		works := b.requestWork(t, other, "w2", 1)
		require.Len(t, works, 1)
		require.Equal(t, "a", works[0].GetWorkId())
	})

	t.Run("ExpiredWorkIsNotHandedOut", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.front.Send(b.master, &messages.Work{WorkId: "late", JobType: "square", DeadlineUnixNano: t0.Add(time.Second).UnixNano()})
		b.front.ExpectMsg(&messages.Ack{WorkId: "late"}, testkit.Timeout())
		b.submit(t, "b")
		b.register(t, b.worker, "w1")
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		b.advance(t, 1, 2*time.Second)
		works := b.requestWork(t, b.worker, "w1", 2)
		require.Len(t, works, 1)
		require.Equal(t, "b", works[0].GetWorkId())
		ws := b.workStatus(t, "late")
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DEAD, ws.GetStatus())
		require.Contains(t, ws.GetLastError(), "deadline")
	})

	t.Run("DispatchLimiterHoldsWorkBack", func(t *testing.T) {
		t.Parallel()
		lim := &fakeLimiter{}
		b := setup(t, master.WithDispatchLimiter("square", lim))
		b.register(t, b.worker, "w1")
		b.submit(t, "a")
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		require.Empty(t, b.requestWork(t, b.worker, "w1", 1), "the limiter refuses")
		lim.allow.Store(true)
		b.advance(t, 2, 500*time.Millisecond) // cleanup tick and the limiter's retry
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		require.Len(t, b.requestWork(t, b.worker, "w1", 1), 1)
	})

	t.Run("DispatchLimiterRefusesAgainAfterAWake", func(t *testing.T) {
		// Each refusal arms a wake, also after an earlier wake fired (a
		// fired wake once kept every later one from being armed, so
		// throttled work waited for the worker's next registration).
		t.Parallel()
		lim := &fakeLimiter{}
		b := setup(t, master.WithDispatchLimiter("square", lim))
		b.register(t, b.worker, "w1")
		b.submit(t, "a")
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		for range 3 {
			require.Empty(t, b.requestWork(t, b.worker, "w1", 1), "the limiter refuses")
			b.advance(t, 2, 500*time.Millisecond) // cleanup tick and the limiter's retry
			b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		}
		lim.allow.Store(true)
		require.Len(t, b.requestWork(t, b.worker, "w1", 1), 1)
	})

	t.Run("RecoveryReturnsInProgressWork", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithSnapshotEvery(5))
		b.register(t, b.worker, "w1")
		for _, id := range []string{"a", "b", "c"} {
			b.submit(t, id)
		}
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		require.Len(t, b.requestWork(t, b.worker, "w1", 2), 2)
		b.worker.Send(b.master, &messages.WorkIsDone{WorkerId: "w1", WorkId: "a"})
		b.worker.ExpectMsg(&messages.Ack{WorkId: "a"}, testkit.Timeout())
		require.NoError(t, b.sys.Root.StopFuture(b.master).Wait())

		b.master = b.start(t)
		st := b.status(t)
		require.Equal(t, int64(2), st.GetPending(), "b was in progress and is pending again, c was pending")
		require.Equal(t, int64(1), st.GetDone())
		b.submit(t, "a") // still known as done: re-acked
		b.register(t, b.worker, "w1")
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		works := b.requestWork(t, b.worker, "w1", 5)
		require.Len(t, works, 2)
		require.Equal(t, "b", works[0].GetWorkId(), "returned work keeps its place")
	})

	t.Run("SnapshotsBoundRecovery", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithSnapshotEvery(10), master.WithFeedRetention(0))
		for i := range 40 {
			b.submit(t, string(rune('A'+i)))
		}
		require.Eventually(t, func() bool {
			snap, ok, err := b.mem.LoadSnapshot(context.Background(), master.DefaultStream)
			return err == nil && ok && snap.Seq >= 10
		}, testkit.Timeout(), 5*time.Millisecond, "no snapshot written")
		snap, _, err := b.mem.LoadSnapshot(context.Background(), master.DefaultStream)
		require.NoError(t, err)
		require.NoError(t, b.sys.Root.StopFuture(b.master).Wait())
		require.NotEmpty(t, events(t, b.mem))
		first := true
		require.NoError(t, b.mem.Load(context.Background(), master.DefaultStream, 1, func(ev persistence.Event) error {
			if first {
				require.Greater(t, ev.Seq, snap.Seq, "events covered by the snapshot were deleted")
				first = false
			}
			return nil
		}))
		b.master = b.start(t)
		require.Equal(t, int64(40), b.status(t).GetPending())
		require.Equal(t, int64(40), b.status(t).GetAcceptedTotal())
	})

	t.Run("FailedAppendIsNotAcked", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.submit(t, "a")
		b.j.FailWrites(errDiskFull)
		b.front.Send(b.master, &messages.Work{WorkId: "b", JobType: "square"})
		b.front.ExpectNoMsg(100 * time.Millisecond)
		// The master re-syncs; while the journal still fails it rejects work.
		deadline := time.Now().Add(testkit.Timeout())
		for {
			b.front.Send(b.master, &messages.Work{WorkId: "b", JobType: "square"})
			env, ok := b.front.ReceiveOne(50 * time.Millisecond)
			if ok {
				r, isRej := env.Message.(*messages.WorkRejected)
				require.True(t, isRej, "got %T while the journal fails", env.Message)
				require.Equal(t, messages.RejectCode_REJECT_CODE_UNAVAILABLE, r.GetCode())
				break
			}
			require.True(t, time.Now().Before(deadline), "master kept silent")
		}
		// Nor does it say "unknown" about work while it cannot read its
		// state (HTTP 503, not 404).
		b.front.Request(b.master, &messages.GetWorkStatus{WorkId: "a"})
		rej := testkit.ExpectMsgType[*messages.WorkRejected](b.front, testkit.Timeout())
		require.Equal(t, messages.RejectCode_REJECT_CODE_UNAVAILABLE, rej.GetCode())
		b.j.FailWrites(nil)
		b.advance(t, 1, 5*time.Second) // the recovery retry
		require.Eventually(t, func() bool {
			b.front.Send(b.master, &messages.Work{WorkId: "b", JobType: "square"})
			env, ok := b.front.ReceiveOne(testkit.Timeout())
			return ok && testkit.Equal(&messages.Ack{WorkId: "b"}, env.Message)
		}, testkit.Timeout(), time.Millisecond)
		require.Equal(t, int64(2), b.status(t).GetPending(), "a and b, once each")
	})

	t.Run("FencedMasterStops", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.submit(t, "a")
		_, _, err := b.mem.AcquireEpoch(context.Background(), master.DefaultStream)
		require.NoError(t, err)
		b.front.Watch(b.master)
		b.front.Send(b.master, &messages.Work{WorkId: "b", JobType: "square"})
		b.front.ExpectTerminated(b.master, testkit.Timeout())
		require.Len(t, events(t, b.mem), 2, "nothing written after the fence")
	})
}

func TestPropsRejectsBadOptions(t *testing.T) {
	t.Parallel()
	j := journal.NewMemory()
	t.Cleanup(func() { _ = j.Close() })
	tests := []struct {
		name string
		opt  master.Option
	}{
		{name: "Stream", opt: master.WithStream("")},
		{name: "WorkTimeout", opt: master.WithWorkTimeout(0)},
		{name: "WorkerDeadAfter", opt: master.WithWorkerDeadAfter(-1)},
		{name: "MaxAttempts", opt: master.WithMaxAttempts(0)},
		{name: "Backoff", opt: master.WithBackoff(time.Second, time.Millisecond)},
		{name: "DoneRetention", opt: master.WithDoneRetention(0)},
		{name: "SnapshotEvery", opt: master.WithSnapshotEvery(0)},
		{name: "MaxPayload", opt: master.WithMaxPayload(0)},
		{name: "Clock", opt: master.WithClock(nil)},
		{name: "Limiter", opt: master.WithDispatchLimiter("", nil)},
		{name: "JournalTimeout", opt: master.WithJournalTimeout(0)},
		{name: "LeaseTTL", opt: master.WithLeaseTTL(-time.Millisecond)},
		{name: "RecoveryStash", opt: master.WithRecoveryStash(-1)},
		{name: "ShardOfOne", opt: master.WithShard(0, 1)},
		{name: "ShardBeyondN", opt: master.WithShard(4, 4)},
		{name: "NegativeShard", opt: master.WithShard(-1, 4)},
		{name: "StartedHold", opt: master.WithStartedHold(-time.Millisecond)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := master.Props(j, tt.opt)
			require.ErrorIs(t, err, master.ErrInvalidOption)
		})
	}
	_, err := master.Props(nil)
	require.ErrorIs(t, err, master.ErrInvalidOption)
}

// mustProps is master.Props for options a test knows are valid.
func mustProps(tb testing.TB, j persistence.Journal, opts ...master.Option) *actor.Props {
	tb.Helper()
	p, err := master.Props(j, opts...)
	require.NoError(tb, err)
	return p
}

// fakeLimiter refuses until allow is set, asking to retry in 500 ms.
type fakeLimiter struct {
	allow atomic.Bool
	mu    sync.Mutex
	calls int
}

func (f *fakeLimiter) Reserve(time.Time) (bool, time.Duration) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	return f.allow.Load(), 500 * time.Millisecond
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestMasterAwaitStarted(t *testing.T) {
	t.Parallel()

	t.Run("HandsOutOnlyDurableStarts", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithAwaitStarted(true))
		b.register(t, b.worker, "w1")
		b.submit(t, "a")
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		b.j.FailWrites(errDiskFull)
		b.worker.Send(b.master, &messages.WorkerRequestsWork{WorkerId: "w1", Worker: pids.Wire(b.worker.PID()), Capacity: 1})
		b.worker.ExpectNoMsg(100 * time.Millisecond)
	})

	t.Run("HandsOutOnceDurable", func(t *testing.T) {
		t.Parallel()
		b := setup(t, master.WithAwaitStarted(true))
		b.register(t, b.worker, "w1")
		b.submit(t, "a")
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		b.worker.Send(b.master, &messages.WorkerRequestsWork{WorkerId: "w1", Worker: pids.Wire(b.worker.PID()), Capacity: 1})
		w := testkit.ExpectMsgType[*messages.Work](b.worker, testkit.Timeout())
		require.Equal(t, "a", w.GetWorkId())
	})

	t.Run("WithoutAwaitHandsOutBeforeDurable", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.register(t, b.worker, "w1")
		b.submit(t, "a")
		b.worker.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())
		b.j.FailWrites(errDiskFull)
		b.worker.Send(b.master, &messages.WorkerRequestsWork{WorkerId: "w1", Worker: pids.Wire(b.worker.PID()), Capacity: 1})
		testkit.ExpectMsgType[*messages.Work](b.worker, testkit.Timeout())
	})
}
