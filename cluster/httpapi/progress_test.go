package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/node"
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

// TestResultStreamShowsProgress: GET /results/stream?progress=true sends a
// running job's progress as `event: progress` whenever it changes, then its
// result; a stream without the parameter sends the result only; a bad value
// is a 400 that says what to send.
func TestResultStreamShowsProgress(t *testing.T) {
	t.Parallel()
	steps := []chan struct{}{make(chan struct{}), make(chan struct{})}
	reg := worker.NewRegistry()
	require.NoError(t, reg.Register("long", func(ctx context.Context, _ []byte) ([]byte, error) {
		for i, msg := range []string{"a quarter", "three quarters"} {
			worker.Progress(ctx, 0.25+0.5*float64(i), msg)
			select {
			case <-steps[i]:
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		return []byte(`"done"`), nil
	}))
	s := startStack(t, withNode(node.WithRegistry(reg), node.WithWorkerOptions(worker.WithHeartbeatInterval(50*time.Millisecond))))
	s.base, _ = waitServer(t, s) // a server on the node's own backend, which reads the feed
	ctx, cancel := context.WithTimeout(context.Background(), 4*testkit.Timeout()+15*time.Second)
	defer cancel()

	a := s.do(t, http.MethodGet, httpapi.PathResultsStream+"?progress=maybe", "")
	require.Equal(t, http.StatusBadRequest, a.code)
	require.Contains(t, a.body["error"], "progress=true")

	open := func(query string) <-chan [2]string {
		events := make(chan [2]string, 64)
		go func() { // the stream answers its headers with its first read
			defer close(events)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+httpapi.PathResultsStream+query, nil)
			if err != nil {
				return
			}
			resp, err := s.hc.Do(req)
			if err != nil {
				return
			}
			defer func() { _ = resp.Body.Close() }()
			events <- [2]string{"status", resp.Status}
			sc := bufio.NewScanner(resp.Body)
			var kind string
			for sc.Scan() {
				switch line := sc.Text(); {
				case strings.HasPrefix(line, "event: "):
					kind = strings.TrimPrefix(line, "event: ")
				case strings.HasPrefix(line, "data: "):
					events <- [2]string{kind, strings.TrimPrefix(line, "data: ")}
				}
			}
		}()
		return events
	}
	withProgress, without := open("?progress=true"), open("")
	next := func(events <-chan [2]string) (string, string) {
		select {
		case ev, ok := <-events:
			require.True(t, ok, "the stream ended")
			return ev[0], ev[1]
		case <-ctx.Done():
			require.FailNow(t, "no event")
		}
		return "", ""
	}
	wantProgress := func(fraction float64, msg string) {
		kind, data := next(withProgress)
		require.Equal(t, "progress", kind, data)
		var ev httpapi.ProgressEvent
		require.NoError(t, json.Unmarshal([]byte(data), &ev))
		require.Equal(t, "job-1", ev.ID)
		require.Equal(t, "long", ev.Type)
		require.Equal(t, httpapi.ProgressInfo{Fraction: fraction, Message: msg}, ev.Progress)
		require.NotNil(t, ev.Heartbeat)
	}

	kind, status := next(withProgress)
	require.Equal(t, [2]string{"status", "200 OK"}, [2]string{kind, status})
	a = s.do(t, http.MethodPost, "/work", `{"id":"job-1","type":"long"}`)
	require.Equal(t, http.StatusCreated, a.code, a.raw)
	wantProgress(0.25, "a quarter") // once, however many looks see it unchanged
	close(steps[0])
	wantProgress(0.75, "three quarters")
	close(steps[1])
	kind, status = next(without)
	require.Equal(t, [2]string{"status", "200 OK"}, [2]string{kind, status})
	for _, events := range []<-chan [2]string{withProgress, without} {
		kind, data := next(events)
		require.Equal(t, "result", kind, data)
		var line httpapi.ResultLine
		require.NoError(t, json.Unmarshal([]byte(data), &line))
		require.Equal(t, "job-1", line.ID)
		require.JSONEq(t, `"done"`, string(line.Result))
	}
}
