package httpapi_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/node"
)

// TestSubmitHeartbeatTimeout: POST /work's heartbeat_timeout reaches the
// master: a job whose type has no heartbeat timeout, which beats once and
// hangs, is retried after the submission's 300 ms although the work
// timeout is a minute; a bad value is a 400 with an example.
func TestSubmitHeartbeatTimeout(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	reg := worker.NewRegistry()
	require.NoError(t, reg.Register("hang", func(ctx context.Context, _ []byte) ([]byte, error) {
		if runs.Add(1) > 1 {
			return []byte(`"retried"`), nil
		}
		worker.Heartbeat(ctx)
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}))
	s := startStack(t, withWorkers(2), withNode(node.WithRegistry(reg),
		node.WithMasterOptions(master.WithWorkTimeout(time.Minute), master.WithBackoff(0, 0)),
		node.WithWorkerOptions(worker.WithHeartbeatInterval(50*time.Millisecond))))

	for _, bad := range []string{`"soon"`, `"-1s"`, `"48h"`, `30`} {
		a := s.do(t, http.MethodPost, "/work", `{"type":"hang","heartbeat_timeout":`+bad+`}`)
		require.Equal(t, http.StatusBadRequest, a.code, bad)
		require.Contains(t, a.raw, "heartbeat_timeout", bad)
	}
	a := s.do(t, http.MethodPost, "/work", `{"type":"hang","heartbeat_timeout":"soon"}`)
	require.Contains(t, a.body["error"], `"heartbeat_timeout":"30s"`, "the error gives an example")

	start := time.Now()
	a = s.do(t, http.MethodPost, "/work", `{"id":"h1","type":"hang","heartbeat_timeout":"300ms"}`)
	require.Equal(t, http.StatusCreated, a.code, a.raw)
	require.Eventually(t, func() bool {
		a := s.do(t, http.MethodGet, "/work/h1", "")
		return a.body["status"] == "done"
	}, 20*time.Second, 50*time.Millisecond)
	require.Less(t, time.Since(start), 20*time.Second, "retried long before the 1 min work timeout")
	a = s.do(t, http.MethodGet, "/work/h1", "")
	require.EqualValues(t, 2, a.body["attempts"])
	require.Equal(t, "retried", a.body["result"])
}
