package node_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/messages"
)

// TestLongJobsHeartbeat runs a real master on a SQLite journal with two
// real workers and a work timeout of 1 s: a job of 3 s that heartbeats
// (heartbeat timeout 600 ms) completes at its first attempt, with its
// progress visible while it runs; one that stops heartbeating is timed out
// after its heartbeat timeout and retried, and its retry completes.
func TestLongJobsHeartbeat(t *testing.T) {
	t.Parallel()
	var silentRuns atomic.Int32
	reg := worker.NewRegistry()
	require.NoError(t, reg.Register("beating", func(ctx context.Context, _ []byte) ([]byte, error) {
		start := time.Now()
		for time.Since(start) < 3*time.Second {
			worker.Progress(ctx, time.Since(start).Seconds()/3, "working")
			for range 1000 {
				worker.Heartbeat(ctx) // a tight loop costs nothing
			}
			select {
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			case <-time.After(20 * time.Millisecond):
			}
		}
		return []byte(`"ok"`), nil
	}, worker.WithHeartbeatTimeout(600*time.Millisecond)))
	require.NoError(t, reg.Register("silent", func(ctx context.Context, _ []byte) ([]byte, error) {
		if silentRuns.Add(1) > 1 {
			return []byte(`"retried"`), nil
		}
		worker.Heartbeat(ctx) // once, then it hangs
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}, worker.WithHeartbeatTimeout(600*time.Millisecond)))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n, err := node.StartLocal(ctx, node.WithDataDir(t.TempDir()), node.WithWorkers(2), node.WithRegistry(reg),
		node.WithLogger(slog.New(slog.DiscardHandler)),
		node.WithMasterOptions(master.WithWorkTimeout(time.Second), master.WithBackoff(0, 0)),
		node.WithWorkerOptions(worker.WithHeartbeatInterval(100*time.Millisecond)))
	require.NoError(t, err)
	defer func() { require.NoError(t, n.Stop(context.Background())) }()

	c := n.Client()
	require.NoError(t, c.Submit(ctx, &messages.Work{WorkId: "beating-1", JobType: "beating"}))
	sawProgress := false
	st := waitFinished(ctx, t, c, "beating-1", func(st *messages.WorkStatusReply) {
		if st.GetStatus() == messages.WorkStatus_WORK_STATUS_RUNNING && st.GetHasProgress() {
			sawProgress = true
			require.Equal(t, "working", st.GetProgressMessage())
			require.NotZero(t, st.GetHeartbeatUnixNano())
		}
	})
	require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, st.GetStatus(), "3 s job, 1 s work timeout: done by its heartbeats")
	require.Equal(t, int32(1), st.GetAttempts(), "no retry")
	for _, h := range st.GetHistory() {
		require.NotEqual(t, messages.WorkHistoryKind_WORK_HISTORY_KIND_TIMED_OUT, h.GetKind())
	}
	require.True(t, sawProgress, "GET /work/{id}'s source showed the progress while it ran")

	start := time.Now()
	require.NoError(t, c.Submit(ctx, &messages.Work{WorkId: "silent-1", JobType: "silent"}))
	st = waitFinished(ctx, t, c, "silent-1", nil)
	require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, st.GetStatus())
	require.Equal(t, []byte(`"retried"`), st.GetResult())
	require.Equal(t, int32(2), st.GetAttempts())
	timedOut := false
	for _, h := range st.GetHistory() {
		timedOut = timedOut || h.GetKind() == messages.WorkHistoryKind_WORK_HISTORY_KIND_TIMED_OUT
	}
	require.True(t, timedOut, "the first attempt timed out")
	require.Less(t, time.Since(start), 10*time.Second, "retried after its heartbeat timeout")
}

func waitFinished(ctx context.Context, t *testing.T, c interface {
	WorkStatus(context.Context, string) (*messages.WorkStatusReply, error)
}, id string, each func(*messages.WorkStatusReply)) *messages.WorkStatusReply {
	t.Helper()
	for {
		st, err := c.WorkStatus(ctx, id)
		require.NoError(t, ctx.Err(), "waiting for %s", id)
		if err == nil {
			if each != nil {
				each(st)
			}
			switch st.GetStatus() {
			case messages.WorkStatus_WORK_STATUS_DONE, messages.WorkStatus_WORK_STATUS_DEAD, messages.WorkStatus_WORK_STATUS_CANCELLED:
				return st
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}
