package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// TestQueueProcess: delayed jobs, priorities, fair dispatch and a paused
// job type (issue 37) through the HTTP API of a real all-in-one node with
// one worker slot (so the hand-out order shows), and the pause surviving
// the master's failover (the node killed and started again on its
// journal). Real time: the bounds are generous.
func TestQueueProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes; skipped with -short")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data := t.TempDir()
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	g := newProcGroup(t)
	args := []string{"--http", addr, "--produce=false", "--workers", "1", "--prefetch", "0", "--delay", "30ms",
		"--data", data, "--log-level", "info"}
	node := g.start(ctx, "all-in-one", args...)
	node.waitLine(t, "http api listening", 1, 60*time.Second)
	api, err := httpapi.NewClient("http://" + addr)
	require.NoError(t, err)
	defer api.CloseIdleConnections()
	submit := func(req httpapi.SubmitRequest) {
		t.Helper()
		req.Type, req.Payload = "square", []byte("3")
		_, err := api.Submit(ctx, req)
		require.NoError(t, err, "submit %s", req.ID)
	}
	prio := func(p int) *int { return &p }

	// Delay: never before its run_at, and soon after it.
	submitted := time.Now()
	submit(httpapi.SubmitRequest{ID: "delayed", Delay: "2s"})
	info, err := api.Wait(ctx, "delayed", 50*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, httpapi.StatusDone, info.Status)
	startedAt := started(ctx, t, addr, "delayed")
	require.False(t, startedAt.Before(submitted.Add(2*time.Second)), "handed out %v after the submission", startedAt.Sub(submitted))
	require.Less(t, startedAt.Sub(submitted), 2*time.Second+time.Second, "handed out %v after the submission", startedAt.Sub(submitted))

	// Paused: accepted and kept, not handed out.
	qs, err := api.PauseQueue(ctx, "square")
	require.NoError(t, err)
	require.True(t, queueOf(t, qs, "square").Paused)
	submit(httpapi.SubmitRequest{ID: "low", Priority: prio(1)})
	submit(httpapi.SubmitRequest{ID: "mid"})
	submit(httpapi.SubmitRequest{ID: "high", Priority: prio(9)})
	for i := 1; i <= 6; i++ {
		submit(httpapi.SubmitRequest{ID: "a" + strconv.Itoa(i), FairnessKey: "A"})
	}
	submit(httpapi.SubmitRequest{ID: "b1", FairnessKey: "B"})
	submit(httpapi.SubmitRequest{ID: "b2", FairnessKey: "B"})
	runAt := time.Now().Add(3 * time.Second).UTC()
	submit(httpapi.SubmitRequest{ID: "later", RunAt: runAt.Format(time.RFC3339Nano)})
	qs, err = api.Queues(ctx)
	require.NoError(t, err)
	q := queueOf(t, qs, "square")
	require.True(t, q.Paused)
	require.EqualValues(t, 12, q.Pending)
	require.EqualValues(t, 1, q.Delayed)

	// Failover: the master's node dies and comes back on its journal. The
	// pause survives; nothing is handed out while "later" falls due.
	require.NoError(t, node.cmd.Process.Signal(syscall.SIGKILL))
	<-node.done
	node = g.start(ctx, "all-in-one-again", args...)
	node.waitLine(t, "http api listening", 1, 60*time.Second)
	require.Eventually(t, func() bool {
		qs, err = api.Queues(ctx)
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "GET /queues after the restart: %v", err)
	require.True(t, queueOf(t, qs, "square").Paused, "the pause survives the failover")
	g.hold(ctx, time.Until(runAt)+500*time.Millisecond) // "later" falls due while paused
	qs, err = api.Queues(ctx)
	require.NoError(t, err)
	q = queueOf(t, qs, "square")
	require.EqualValues(t, 12, q.Pending, "a paused type hands nothing out")
	require.EqualValues(t, 0, q.Delayed, "later is due")

	resumed := time.Now()
	_, err = api.ResumeQueue(ctx, "square")
	require.NoError(t, err)
	ids := []string{"low", "mid", "high", "a1", "a2", "a3", "a4", "a5", "a6", "b1", "b2", "later"}
	at := make(map[string]time.Time, len(ids))
	for _, id := range ids {
		info, err := api.Wait(ctx, id, 50*time.Millisecond)
		require.NoError(t, err)
		require.Equal(t, httpapi.StatusDone, info.Status, id)
		at[id] = started(ctx, t, addr, id)
		require.False(t, at[id].Before(resumed.Add(-time.Second)), "%s handed out while paused", id)
	}
	require.True(t, at["high"].Before(at["mid"]) && at["mid"].Before(at["low"]), "priorities: %v", at)
	require.True(t, at["later"].Before(at["low"]), "later (5) fell due during the failover and goes before low (1)")
	require.True(t, at["b2"].Before(at["a4"]), "fairness: B's jobs are not held back behind A's: %v", at)
	require.NoError(t, node.cmd.Process.Signal(syscall.SIGTERM))
	<-node.done
}

func queueOf(t *testing.T, qs *httpapi.QueuesResponse, jobType string) httpapi.JobTypeQueue {
	t.Helper()
	for _, q := range qs.Queues {
		if q.Type == jobType {
			return q
		}
	}
	t.Fatalf("no queue %q in %+v", jobType, qs)
	return httpapi.JobTypeQueue{}
}

// started returns when the master handed work id out (its last start).
func started(ctx context.Context, t *testing.T, addr, id string) time.Time {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/work/%s?history=true", addr, id), nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var info httpapi.WorkInfo
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&info))
	var at time.Time
	for _, h := range info.History {
		if h.Event == "started" {
			at = h.At
		}
	}
	require.False(t, at.IsZero(), "%s has no start: %+v", id, info.History)
	return at
}
