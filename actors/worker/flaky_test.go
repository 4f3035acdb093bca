package worker_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/messages"
)

// TestFlakyWorkerOfTheAkkaSpec builds the DistributedWorkerSpec's flaky
// worker from the public API: a JobFunc whose 3rd call panics (the executor
// fails; the worker reports WorkFailed and keeps serving) and a WithOnWork
// hook that stops the worker on its 5th job (the worker dies; its running
// work goes back to the master as WorkFailed, then it deregisters).
func TestFlakyWorkerOfTheAkkaSpec(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	master := testkit.NewProbe(t, sys)

	var calls atomic.Int32
	reg := worker.NewRegistry()
	require.NoError(t, reg.Register("square", func(_ context.Context, p []byte) ([]byte, error) {
		if calls.Add(1) == 3 {
			panic("flaky executor")
		}
		return p, nil
	}))
	var self atomic.Pointer[actor.PID]
	props, err := worker.Props(route.Fixed(master.PID()), reg,
		worker.WithClock(clock.NewManual(epoch)), worker.WithWorkerID("flaky"),
		worker.WithOnWork(func(seq int, _ *messages.Work) {
			if seq == 5 {
				sys.Root.Stop(self.Load())
			}
		}))
	require.NoError(t, err)
	pid := sys.Root.Spawn(props)
	self.Store(pid)
	master.Watch(pid)
	testkit.ExpectMsgType[*messages.RegisterWorker](master, testkit.Timeout())
	testkit.ExpectMsgType[*messages.WorkerRequestsWork](master, testkit.Timeout())

	for i := 1; i <= 4; i++ {
		id := fmt.Sprint(i)
		master.Send(pid, work(id, "square", id))
		if i == 3 {
			f := testkit.ExpectMsgType[*messages.WorkFailed](master, testkit.Timeout())
			require.Contains(t, f.GetError(), "flaky executor")
		} else {
			master.ExpectMsg(&messages.WorkIsDone{WorkerId: "flaky", WorkId: id, Result: []byte(id)}, testkit.Timeout())
			master.Reply(&messages.Ack{WorkId: id})
		}
		testkit.ExpectMsgType[*messages.WorkerRequestsWork](master, testkit.Timeout())
	}
	master.Send(pid, work("5", "square", "5"))
	// Deregister (a user message) and Terminated (a system message, which
	// the probe's mailbox takes first) may arrive in either order.
	var deregistered, terminated bool
	for !deregistered || !terminated {
		switch m := master.FishForMessage(testkit.Timeout(), func(m any) bool {
			switch m.(type) {
			case *messages.DeregisterWorker, *actor.Terminated:
				return true
			}
			return false
		}).(type) {
		case *messages.DeregisterWorker:
			deregistered = true
		case *actor.Terminated:
			require.True(t, pid.Equal(m.GetWho()))
			terminated = true
		}
	}
}
