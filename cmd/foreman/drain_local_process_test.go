package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/messages"
)

// Issue 38, item 3, for the all-in-one node (`foreman` alone): SIGTERM
// stops its workers asking for work and lets running jobs finish within
// --drain-timeout (they end done at their first attempt); jobs that
// outlast it are cancelled and handed back, which the journal keeps as not
// done, and the next start of the node runs them, still at attempt 1.
func TestSIGTERMDrainAllInOne(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	bound := testkit.Timeout()
	bin := plainBinary(t)
	data := t.TempDir()
	dbPath := filepath.Join(data, node.JournalFile)
	g := newProcGroup(t)

	start := func(name, drain string) (*nodeProc, *httpapi.Client) {
		t.Helper()
		p := g.startBinary(ctx, bin, name, "--http", "127.0.0.1:0", "--produce=false", "--workers", "2", "--prefetch", "0",
			"--data", data, "--drain-timeout", drain, "--log-level", "info")
		p.waitLine(t, "http api listening", 1, 60*time.Second)
		api, err := httpapi.NewClient("http://" + listenAddr(t, p))
		require.NoError(t, err)
		t.Cleanup(api.CloseIdleConnections)
		return p, api
	}
	// waitStarted waits until the job runs on an executor (the built-in
	// long job reports progress once its function started).
	waitStarted := func(api *httpapi.Client, id string) {
		t.Helper()
		require.Eventually(t, func() bool {
			info, err := api.Work(ctx, id)
			return err == nil && info.Status == httpapi.StatusRunning && info.Progress != nil
		}, 30*time.Second, 50*time.Millisecond, "waiting for %s to start\n%s", id, g.tails())
	}
	status := func(st interface {
		Status(string) *messages.WorkStatusReply
	}, id string) (messages.WorkStatus, int32) {
		r := st.Status(id)
		return r.GetStatus(), r.GetAttempts()
	}

	// A drain within the timeout: both jobs complete before the node exits.
	fits, api := start("fits", "20s")
	for _, id := range []string{"fits-1", "fits-2"} {
		_, err := api.Submit(ctx, httpapi.SubmitRequest{ID: id, Type: "long", Payload: json.RawMessage(`"4s"`)})
		require.NoError(t, err)
	}
	for _, id := range []string{"fits-1", "fits-2"} {
		waitStarted(api, id)
	}
	g.sigterm(t, fits, 4*time.Second+bound)
	require.Empty(t, handedBack(fits), "nothing handed back\n%s", fits.log.tail(20))
	st := recoverState(t, dbPath)
	for _, id := range []string{"fits-1", "fits-2"} {
		s, attempts := status(st, id)
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, s, "%s done within the drain\n%s", id, fits.log.tail(20))
		require.Equal(t, int32(1), attempts)
	}

	// A drain that times out: the jobs are handed back, journaled as not
	// done, and the next start runs them.
	short, api := start("short", "2s")
	for _, id := range []string{"long-1", "long-2"} {
		_, err := api.Submit(ctx, httpapi.SubmitRequest{ID: id, Type: "long", Payload: json.RawMessage(`"6s"`)})
		require.NoError(t, err)
	}
	for _, id := range []string{"long-1", "long-2"} {
		waitStarted(api, id)
	}
	g.sigterm(t, short, 2*time.Second+bound)
	back := handedBack(short) // the worker's line and the master's, in one log
	slices.Sort(back)
	require.Equal(t, []string{"long-1", "long-2"}, slices.Compact(back), "%s", short.log.tail(20))
	st = recoverState(t, dbPath)
	c := st.Counts()
	require.Equal(t, 2, c.Pending, "the handed-back jobs are pending in the journal (%+v)", c)
	require.Equal(t, 0, c.InProgress)

	again, api := start("again", "20s")
	for _, id := range []string{"long-1", "long-2"} {
		require.Eventually(t, func() bool {
			info, err := api.Work(ctx, id)
			return err == nil && info.Status == httpapi.StatusDone
		}, 40*time.Second, 100*time.Millisecond, "waiting for %s to be done after the restart\n%s", id, g.tails())
		info, err := api.Work(ctx, id)
		require.NoError(t, err)
		require.Equal(t, int32(1), info.Attempts, "%s: the hand-back is not a failed attempt", id)
		require.Empty(t, info.LastError)
	}
	g.sigterm(t, again, bound)
}
