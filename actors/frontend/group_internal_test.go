package frontend

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/messages"
)

// TestSubmitsTravelTogether: while one Submit waits for the master's Ack,
// three more gather and go to it in one WorkBatch; each caller gets its
// own work's outcome from the batch's answer (durable, a duplicate, a
// refusal, a temporary refusal that its caller retries alone), and a
// caller that leaves before its group goes is left out of it.
func TestSubmitsTravelTogether(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	master := testkit.NewProbe(t, sys)
	c, err := NewClient(sys, route.Fixed(master.PID()), WithSubmitGroups(1),
		WithRetryBackoff(time.Millisecond, time.Millisecond))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Timeout())
	defer cancel()

	submit := func(ctx context.Context, id string) chan error {
		errc := make(chan error, 1)
		go func() { errc <- c.Submit(ctx, &messages.Work{WorkId: id, JobType: "echo"}) }()
		return errc
	}
	waiting := func(n int) {
		require.Eventually(t, func() bool { return c.groups[0].Waiting() == n }, testkit.Timeout(), time.Millisecond)
	}

	a := submit(ctx, "a") // alone: the plain Work
	master.ExpectMsg(&messages.Work{WorkId: "a", JobType: "echo"}, testkit.Timeout())
	first := master.LastSender()
	b, dup, bad, busy := submit(ctx, "b"), submit(ctx, "c"), submit(ctx, "d"), submit(ctx, "e")
	leftCtx, leave := context.WithCancel(ctx)
	left := submit(leftCtx, "gone")
	waiting(5)
	leave()
	require.ErrorIs(t, <-left, context.Canceled)
	waiting(4)
	master.Send(first, &messages.Ack{WorkId: "a"})
	require.NoError(t, <-a)

	batch := testkit.ExpectMsgType[*messages.WorkBatch](master, testkit.Timeout())
	var ids []string
	outs := make([]*messages.BatchOutcome, len(batch.GetWorks()))
	for j, w := range batch.GetWorks() {
		ids = append(ids, w.GetWorkId())
		outs[j] = &messages.BatchOutcome{WorkId: w.GetWorkId(), Accepted: true}
		switch w.GetWorkId() {
		case "c":
			outs[j].DuplicateOf, outs[j].DuplicateStatus = "b", messages.WorkStatus_WORK_STATUS_ACCEPTED
		case "d":
			outs[j] = &messages.BatchOutcome{WorkId: "d", Code: messages.RejectCode_REJECT_CODE_TOO_LARGE, Reason: "too big"}
		case "e":
			outs[j] = &messages.BatchOutcome{WorkId: "e", Code: messages.RejectCode_REJECT_CODE_UNAVAILABLE, Reason: "recovering"}
		}
	}
	sort.Strings(ids)
	require.Equal(t, []string{"b", "c", "d", "e"}, ids, "the caller that left is not in the group")
	master.Reply(&messages.WorkBatchAck{Outcomes: outs})

	require.NoError(t, <-b)
	var d *DuplicateError
	require.ErrorAs(t, <-dup, &d)
	require.Equal(t, "b", d.Of)
	var r *RejectedError
	require.ErrorAs(t, <-bad, &r)
	require.Equal(t, messages.RejectCode_REJECT_CODE_TOO_LARGE, r.Code)

	// "e" was refused for now: its caller asks again, alone.
	master.ExpectMsg(&messages.Work{WorkId: "e", JobType: "echo"}, testkit.Timeout())
	master.Reply(&messages.Ack{WorkId: "e"})
	require.NoError(t, <-busy)
	master.ExpectNoMsg(50 * time.Millisecond)
}

// TestSubmitGroupAskFails: when a group's ask times out, every caller in
// it gets the timeout and retries; the retries gather again.
func TestSubmitGroupAskFails(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	master := testkit.NewProbe(t, sys)
	c, err := NewClient(sys, route.Fixed(master.PID()), WithSubmitGroups(1),
		WithAskTimeout(200*time.Millisecond), WithRetryBackoff(time.Millisecond, time.Millisecond))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Timeout())
	defer cancel()
	errs := make(chan error, 3)
	go func() { errs <- c.Submit(ctx, &messages.Work{WorkId: "a", JobType: "echo"}) }()
	master.ExpectMsg(&messages.Work{WorkId: "a", JobType: "echo"}, testkit.Timeout())
	for _, id := range []string{"b", "c"} {
		go func() { errs <- c.Submit(ctx, &messages.Work{WorkId: id, JobType: "echo"}) }()
	}
	require.Eventually(t, func() bool { return c.groups[0].Waiting() == 2 }, testkit.Timeout(), time.Millisecond)
	master.Reply(&messages.Ack{WorkId: "a"})
	// b and c go together and get no answer: the ask times out and both
	// are sent again, together or one by one, until acknowledged.
	testkit.ExpectMsgType[*messages.WorkBatch](master, testkit.Timeout())
	master.SetAutoReply(func(msg any, _ *actor.PID) any {
		switch m := msg.(type) {
		case *messages.Work:
			return &messages.Ack{WorkId: m.GetWorkId()}
		case *messages.WorkBatch:
			outs := make([]*messages.BatchOutcome, len(m.GetWorks()))
			for j, w := range m.GetWorks() {
				outs[j] = &messages.BatchOutcome{WorkId: w.GetWorkId(), Accepted: true}
			}
			return &messages.WorkBatchAck{Outcomes: outs}
		}
		return nil
	})
	for range 3 {
		require.NoError(t, <-errs)
	}
}
