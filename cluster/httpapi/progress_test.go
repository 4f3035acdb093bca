package httpapi_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/messages"
)

// TestWorkInfoShowsProgress: GET /work/{id} shows a running long job's
// latest progress and heartbeat, and nothing of the kind for a job that
// reported none.
func TestWorkInfoShowsProgress(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC)
	info, ok := httpapi.WorkInfoFromReply(&messages.WorkStatusReply{WorkId: "j1", Status: messages.WorkStatus_WORK_STATUS_RUNNING,
		JobType: "long", Attempts: 1, HasProgress: true, Progress: 0.4, ProgressMessage: "24s of 60s", HeartbeatUnixNano: at.UnixNano()})
	require.True(t, ok)
	require.Equal(t, &httpapi.ProgressInfo{Fraction: 0.4, Message: "24s of 60s"}, info.Progress)
	require.Equal(t, at, *info.Heartbeat)
	b, err := json.Marshal(info)
	require.NoError(t, err)
	require.Contains(t, string(b), `"progress":{"fraction":0.4,"message":"24s of 60s"},"heartbeat":"2026-11-28T05:00:00Z"`)

	info, ok = httpapi.WorkInfoFromReply(&messages.WorkStatusReply{WorkId: "j2", Status: messages.WorkStatus_WORK_STATUS_RUNNING, JobType: "square"})
	require.True(t, ok)
	b, err = json.Marshal(info)
	require.NoError(t, err)
	require.NotContains(t, string(b), "progress")
	require.NotContains(t, string(b), "heartbeat")
}
