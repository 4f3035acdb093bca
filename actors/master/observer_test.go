package master_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/messages"
)

// recorder is a master.Observer that keeps what it is told.
type recorder struct {
	mu      sync.Mutex
	epochs  []int64
	durable []string // "EventType/jobType"
	counts  master.Counts
	busy    int
}

func (r *recorder) Recovered(_ string, epoch int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.epochs = append(r.epochs, epoch)
}

func (r *recorder) Durable(_ string, ev proto.Message, jobType string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.durable = append(r.durable, string(ev.ProtoReflect().Descriptor().Name())+"/"+jobType)
}

func (r *recorder) Counts(_ string, c master.Counts, _, busy int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts, r.busy = c, busy
}

func (r *recorder) Permit(string, bool) {}

func (r *recorder) Stopped(string) {}

func (r *recorder) snapshot() ([]int64, []string, master.Counts, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.epochs...), append([]string(nil), r.durable...), r.counts, r.busy
}

// TestObserverListAndResubmit runs a work to death on a real master: the
// observer hears each durable event with its job type, ListWork lists it as
// dead, the re-submission runs it again, and its history tells all of it.
func TestObserverListAndResubmit(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	b := setup(t, master.WithObserver(rec), master.WithMaxAttempts(1))
	b.register(t, b.worker, "w1")
	b.submit(t, "a")
	require.Len(t, b.requestWork(t, b.worker, "w1", 1), 1)
	require.Eventually(t, func() bool { _, _, _, busy := rec.snapshot(); return busy == 1 }, testkit.Timeout(), time.Millisecond)
	b.worker.Send(b.master, &messages.WorkFailed{WorkerId: "w1", WorkId: "a", Error: "bad payload"})

	b.front.Request(b.master, &messages.ListWork{Status: messages.WorkStatus_WORK_STATUS_DEAD})
	list := testkit.ExpectMsgType[*messages.WorkList](b.front, testkit.Timeout())
	require.Equal(t, int64(1), list.GetTotal())
	require.Equal(t, "a", list.GetWorks()[0].GetWorkId())
	require.Equal(t, "bad payload", list.GetWorks()[0].GetLastError())

	// Counts are reported after the commit's events (AfterDurable): wait
	// for both.
	require.Eventually(t, func() bool {
		_, durable, counts, _ := rec.snapshot()
		return len(durable) == 3 && counts.Dead == 1
	}, testkit.Timeout(), time.Millisecond)
	epochs, durable, counts, _ := rec.snapshot()
	require.Len(t, epochs, 1)
	require.Positive(t, epochs[0])
	require.Equal(t, []string{"WorkAccepted/square", "WorkStarted/square", "WorkerFailed/square"}, durable)
	require.Equal(t, 1, counts.Dead)

	// Only a dead work can be re-submitted; this one can, once.
	b.front.Request(b.master, &messages.ResubmitWork{WorkId: "nope"})
	r := testkit.ExpectMsgType[*messages.ResubmitReply](b.front, testkit.Timeout())
	require.False(t, r.GetAccepted())
	require.Equal(t, messages.WorkStatus_WORK_STATUS_UNKNOWN, r.GetStatus())
	b.front.Request(b.master, &messages.ResubmitWork{WorkId: "a"})
	require.True(t, testkit.ExpectMsgType[*messages.ResubmitReply](b.front, testkit.Timeout()).GetAccepted())
	b.front.Request(b.master, &messages.ResubmitWork{WorkId: "a"})
	r = testkit.ExpectMsgType[*messages.ResubmitReply](b.front, testkit.Timeout())
	require.False(t, r.GetAccepted())
	require.Equal(t, messages.WorkStatus_WORK_STATUS_ACCEPTED, r.GetStatus())

	works := b.requestWork(t, b.worker, "w1", 1)
	require.Len(t, works, 1)
	require.Equal(t, []byte("a"), works[0].GetPayload(), "the payload is kept")
	b.worker.Send(b.master, &messages.WorkIsDone{WorkerId: "w1", WorkId: "a", Result: []byte("ok")})
	testkit.ExpectMsgType[*messages.Ack](b.worker, testkit.Timeout())

	// A new master (a failover) answers the same history, from the journal.
	b.sys.Root.Stop(b.master)
	b.master = b.start(t)
	st := b.workStatus(t, "a")
	require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, st.GetStatus())
	var kinds []messages.WorkHistoryKind
	for _, h := range st.GetHistory() {
		kinds = append(kinds, h.GetKind())
	}
	require.Equal(t, []messages.WorkHistoryKind{
		messages.WorkHistoryKind_WORK_HISTORY_KIND_ACCEPTED, messages.WorkHistoryKind_WORK_HISTORY_KIND_STARTED,
		messages.WorkHistoryKind_WORK_HISTORY_KIND_FAILED, messages.WorkHistoryKind_WORK_HISTORY_KIND_DEAD,
		messages.WorkHistoryKind_WORK_HISTORY_KIND_ACCEPTED, messages.WorkHistoryKind_WORK_HISTORY_KIND_STARTED,
		messages.WorkHistoryKind_WORK_HISTORY_KIND_COMPLETED,
	}, kinds)
	require.Equal(t, "bad payload", st.GetHistory()[2].GetError())
	require.Equal(t, "w1", st.GetHistory()[6].GetWorkerId())
}
