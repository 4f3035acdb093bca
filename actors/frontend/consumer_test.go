package frontend_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/messages"
)

// TestConsumerDeliversEveryOutcomeOfARerunWork: a work that died and was
// re-submitted (the dashboard's Re-submit) then completed has two outcomes,
// and the consumer reading the feed delivers both, although it deduplicates
// (issue 34 item 2: it deduplicated by work id, so the done never came).
func TestConsumerDeliversEveryOutcomeOfARerunWork(t *testing.T) {
	t.Parallel()
	r := newCallRig(t)
	var runs atomic.Int32
	require.NoError(t, r.reg.Register("flaky-once", func(_ context.Context, p []byte) ([]byte, error) {
		if runs.Add(1) == 1 {
			return nil, worker.ErrBadPayload // permanent: dead at once
		}
		return p, nil
	}))
	r.startWorker(t)
	type outcome struct {
		id     string
		status messages.WorkStatus
	}
	consumed := make(chan outcome, 16)
	props, err := frontend.ConsumerProps(frontend.WithoutEventStream(), frontend.WithFeed(r.client, nil),
		frontend.WithDedupe(1<<16),
		frontend.WithOnResult(func(m *messages.WorkResult) { consumed <- outcome{m.GetWorkId(), m.GetStatus()} }))
	require.NoError(t, err)
	r.sys.Root.Spawn(props)
	expect := func(want outcome) {
		t.Helper()
		select {
		case got := <-consumed:
			require.Equal(t, want, got)
		case <-time.After(testkit.Timeout()):
			t.Fatalf("%v not consumed", want)
		}
	}

	// Submitted without a waiter: the master re-submits a work with the
	// waiter of its first submission, whose caller is gone by then.
	require.NoError(t, r.client.Submit(context.Background(), &messages.Work{WorkId: "x", JobType: "flaky-once", Payload: []byte("ok")}))
	expect(outcome{"x", messages.WorkStatus_WORK_STATUS_DEAD})

	rep, err := r.client.Resubmit(context.Background(), "x")
	require.NoError(t, err)
	require.True(t, rep.GetAccepted(), rep.GetReason())
	r.eventuallyStatus(t, "x", messages.WorkStatus_WORK_STATUS_DONE)
	expect(outcome{"x", messages.WorkStatus_WORK_STATUS_DONE})
}
