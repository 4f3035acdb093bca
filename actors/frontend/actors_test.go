package frontend_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/messages"
)

func waitTimers(t *testing.T, clk *clock.Manual, n int) {
	t.Helper()
	done := make(chan struct{})
	stop := time.AfterFunc(testkit.Timeout(), func() { close(done) })
	defer stop.Stop()
	require.True(t, clk.WaitForPending(done, n), "timeout waiting for %d armed timers (have %d)", n, clk.Pending())
}

func spawn(t *testing.T, sys *actor.ActorSystem, props *actor.Props, err error) *actor.PID {
	t.Helper()
	require.NoError(t, err)
	pid := sys.Root.Spawn(props)
	t.Cleanup(func() { _ = sys.Root.StopFuture(pid).Wait() })
	return pid
}

func TestFrontend(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	master := testkit.NewProbe(t, sys)
	client := testkit.NewProbe(t, sys)
	props, err := frontend.Props(route.Fixed(master.PID()), frontend.WithAskTimeout(200*time.Millisecond))
	fe := spawn(t, sys, props, err)

	t.Run("OkAfterAck", func(t *testing.T) {
		client.Request(fe, work("a"))
		master.ExpectMsg(work("a"), testkit.Timeout())
		master.Reply(&messages.Ack{WorkId: "a"})
		client.ExpectMsg(&frontend.Ok{WorkID: "a"}, testkit.Timeout())
	})
	t.Run("NotOkAfterTimeout", func(t *testing.T) {
		client.Request(fe, work("b"))
		master.ExpectMsg(work("b"), testkit.Timeout())
		nok := testkit.ExpectMsgType[*frontend.NotOk](client, testkit.Timeout())
		require.Equal(t, "b", nok.WorkID)
		require.ErrorIs(t, nok.Err, frontend.ErrTimeout)
	})
	t.Run("NotOkAfterReject", func(t *testing.T) {
		client.Request(fe, work("c"))
		master.ExpectMsg(work("c"), testkit.Timeout())
		master.Reply(&messages.WorkRejected{WorkId: "c", Code: messages.RejectCode_REJECT_CODE_INVALID, Reason: "bad"})
		nok := testkit.ExpectMsgType[*frontend.NotOk](client, testkit.Timeout())
		require.ErrorIs(t, nok.Err, frontend.ErrRejected)
	})
}

func TestProducer(t *testing.T) {
	t.Parallel()

	t.Run("JobsModeRetriesNotOkWithTheSameID", func(t *testing.T) {
		t.Parallel()
		sys := testkit.NewSystem(t)
		fe := testkit.NewProbe(t, sys)
		clk := clock.NewManual(epoch)
		var acked []string
		allAcked := make(chan struct{})
		props, err := frontend.ProducerProps(fe.PID(),
			frontend.WithJobs(2), frontend.WithClock(clk),
			frontend.WithWorkID(func(n int) string { return fmt.Sprint("job-", n) }),
			frontend.WithOnAcked(func(w *messages.Work) { acked = append(acked, w.GetWorkId()) }),
			frontend.WithOnAllAcked(func() { close(allAcked) }))
		spawn(t, sys, props, err)

		fe.ExpectMsg(&messages.Work{WorkId: "job-1", JobType: "square", Payload: []byte("1")}, testkit.Timeout())
		fe.Reply(&frontend.NotOk{WorkID: "job-1"})
		waitTimers(t, clk, 1)
		clk.Advance(2999 * time.Millisecond)
		fe.ExpectNoMsg(20 * time.Millisecond)
		clk.Advance(time.Millisecond)
		fe.ExpectMsg(&messages.Work{WorkId: "job-1", JobType: "square", Payload: []byte("1")}, testkit.Timeout())
		fe.Reply(&frontend.Ok{WorkID: "job-1"})
		fe.ExpectMsg(&messages.Work{WorkId: "job-2", JobType: "square", Payload: []byte("2")}, testkit.Timeout())
		fe.Reply(&frontend.Ok{WorkID: "job-2"})
		select {
		case <-allAcked:
		case <-time.After(testkit.Timeout()):
			t.Fatal("OnAllAcked not called")
		}
		require.Equal(t, []string{"job-1", "job-2"}, acked)
		fe.ExpectNoMsg(20 * time.Millisecond)
	})

	t.Run("JobsModeKeepsConcurrencyInFlight", func(t *testing.T) {
		t.Parallel()
		sys := testkit.NewSystem(t)
		fe := testkit.NewProbe(t, sys)
		props, err := frontend.ProducerProps(fe.PID(), frontend.WithJobs(5), frontend.WithConcurrency(3),
			frontend.WithJobType("sleep"), frontend.WithPayload(func(int) []byte { return []byte(`"1ms"`) }))
		spawn(t, sys, props, err)
		got := fe.ReceiveN(3, testkit.Timeout())
		fe.ExpectNoMsg(20 * time.Millisecond)
		for _, m := range got {
			require.Equal(t, "sleep", m.(*messages.Work).GetJobType())
		}
		fe.Send(fe.LastSender(), &frontend.Ok{WorkID: got[0].(*messages.Work).GetWorkId()})
		testkit.ExpectMsgType[*messages.Work](fe, testkit.Timeout())
		fe.ExpectNoMsg(20 * time.Millisecond)
	})

	t.Run("IntervalModeWaitsBetweenJobs", func(t *testing.T) {
		t.Parallel()
		sys := testkit.NewSystem(t)
		fe := testkit.NewProbe(t, sys)
		clk := clock.NewManual(epoch)
		props, err := frontend.ProducerProps(fe.PID(), frontend.WithClock(clk), frontend.WithInterval(4*time.Second, 4*time.Second))
		spawn(t, sys, props, err)
		waitTimers(t, clk, 1)
		clk.Advance(frontend.DefaultInitialDelay)
		w1 := testkit.ExpectMsgType[*messages.Work](fe, testkit.Timeout())
		require.Equal(t, "1", string(w1.GetPayload()))
		fe.Reply(&frontend.Ok{WorkID: w1.GetWorkId()})
		waitTimers(t, clk, 1)
		clk.Advance(3 * time.Second)
		fe.ExpectNoMsg(20 * time.Millisecond)
		clk.Advance(time.Second)
		w2 := testkit.ExpectMsgType[*messages.Work](fe, testkit.Timeout())
		require.Equal(t, "2", string(w2.GetPayload()))
		require.NotEqual(t, w1.GetWorkId(), w2.GetWorkId())
	})
}

func TestConsumer(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	var mu sync.Mutex
	var got []string
	var dups atomic.Int32
	props, err := frontend.ConsumerProps(frontend.WithDedupe(2),
		frontend.WithOnResult(func(r *messages.WorkResult) { mu.Lock(); got = append(got, r.GetWorkId()); mu.Unlock() }),
		frontend.WithOnDuplicate(func(*messages.WorkResult) { dups.Add(1) }))
	pid := spawn(t, sys, props, err)
	probe.Request(pid, &frontend.GetStats{}) // the subscription is in place once this is answered
	probe.ExpectMsg(frontend.Stats{}, testkit.Timeout())

	for _, id := range []string{"a", "b", "a", "c", "c"} {
		sys.EventStream.Publish(&messages.WorkResult{WorkId: id, Result: []byte("1")})
	}
	probe.Send(pid, &messages.WorkResult{WorkId: "d"}) // direct delivery (cluster pub-sub)
	sys.EventStream.Publish("not a result")
	// "a" was evicted from the 2-id window by then: counted again.
	sys.EventStream.Publish(&messages.WorkResult{WorkId: "a"})
	var st frontend.Stats
	for deadline := time.Now().Add(testkit.Timeout()); st.Consumed+st.Duplicates < 7 && time.Now().Before(deadline); {
		probe.Request(pid, &frontend.GetStats{})
		st = testkit.ExpectMsgType[frontend.Stats](probe, testkit.Timeout())
	}
	require.Equal(t, frontend.Stats{Consumed: 5, Duplicates: 2}, st)
	require.Equal(t, int32(2), dups.Load())
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"a", "b", "c", "d", "a"}, got)
}
