package master_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/journal/journaltest"
	"github.com/foreman-actors/foreman/messages"
)

// TestWorkIsHandedOutOnlyOnceDurable: a worker hears of new work, and can
// get it, only once its WorkAccepted is durable, so a crash can never erase
// work a worker has run (seed 001: the handler runs after persist).
func TestWorkIsHandedOutOnlyOnceDurable(t *testing.T) {
	t.Parallel()
	mem := journal.NewMemory()
	t.Cleanup(func() { _ = mem.Close() })
	j := journaltest.NewFaulty(mem)
	sys := testkit.NewSystem(t)
	props, err := master.Props(j, master.WithClock(clock.NewManual(t0)), master.WithFenceCheck(0))
	require.NoError(t, err)
	m := sys.Root.Spawn(props)
	front, wk := testkit.NewProbe(t, sys), testkit.NewProbe(t, sys)
	front.Request(m, &messages.GetMasterStatus{}) // recovered
	testkit.ExpectMsgType[*messages.MasterStatus](front, testkit.Timeout())
	wk.Send(m, &messages.RegisterWorker{WorkerId: "w1", Worker: pids.Wire(wk.PID())})

	j.HoldWrites()
	front.Request(m, &messages.Work{WorkId: "j1", JobType: "square", Payload: []byte("3")})
	wk.Send(m, &messages.WorkerRequestsWork{WorkerId: "w1", Worker: pids.Wire(wk.PID()), Capacity: 1})
	front.Request(m, &messages.GetWorkStatus{WorkId: "j1"})
	wk.ExpectNoMsg(100 * time.Millisecond) // neither WorkIsReady nor the Work
	front.ExpectNoMsg(10 * time.Millisecond)

	require.Equal(t, 1, j.ReleaseWrites())
	front.ExpectMsg(&messages.Ack{WorkId: "j1"}, testkit.Timeout())
	st := testkit.ExpectMsgType[*messages.WorkStatusReply](front, testkit.Timeout())
	require.Equal(t, messages.WorkStatus_WORK_STATUS_ACCEPTED, st.GetStatus())
	testkit.ExpectMsgType[*messages.WorkIsReady](wk, testkit.Timeout())
	wk.Send(m, &messages.WorkerRequestsWork{WorkerId: "w1", Worker: pids.Wire(wk.PID()), Capacity: 1})
	w := testkit.ExpectMsgType[*messages.Work](wk, testkit.Timeout())
	require.Equal(t, "j1", w.GetWorkId())
	require.Equal(t, int32(1), w.GetAttempt())
}
