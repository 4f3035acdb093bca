package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/node"
)

// TestRetriedWaitRuns is issue 34 item 1's reproduction on a real
// all-in-one node behind the HTTP API: one worker slot (window 1, no
// prefetch) busy with a sleep job, a POST /work?wait=30s for id X whose
// client gives up after a while (curl -m), then the same request again: it
// must answer 200 done. On main the master kept the first submission's
// waiter, the worker asked it, and X ended cancelled without running.
func TestRetriedWaitRuns(t *testing.T) {
	t.Parallel()
	s := startStack(t, withWorkers(1), withNode(node.WithWorkerOptions(worker.WithWindow(1), worker.WithPrefetch(0))))
	base, c := waitServer(t, s)
	ctx := context.Background()

	// The worker's only slot is busy for a while.
	_, err := c.Submit(ctx, httpapi.SubmitRequest{ID: "busy", Type: "sleep", Payload: json.RawMessage(`"3s"`)})
	require.NoError(t, err)
	eventuallyStatus(t, c, "busy", httpapi.StatusRunning)

	// curl -m ... '/work?wait=30s' for id X: the client gives up while X
	// is queued behind the busy job.
	const body = `{"id":"x","type":"square","payload":6}`
	short := &http.Client{Timeout: time.Second} // curl -m 1
	resp, err := short.Post(base+"/work?wait=30s", "application/json", strings.NewReader(body))
	if err == nil {
		_ = resp.Body.Close()
		t.Fatalf("the first wait answered %d before its client gave up; the busy job ended too soon", resp.StatusCode)
	}
	info, err := c.Work(ctx, "x")
	require.NoError(t, err)
	require.Equal(t, httpapi.StatusAccepted, info.Status, "x is still queued when the retry comes")

	// The same request again, without a client timeout.
	resp, err = http.Post(base+"/work?wait=30s", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, "answer: %s", data)
	var got httpapi.WorkInfo
	require.NoError(t, json.Unmarshal(data, &got))
	require.Equal(t, httpapi.StatusDone, got.Status, "the retried wait must run the job; answer: %s", data)
	require.JSONEq(t, "36", string(got.Result))
}
