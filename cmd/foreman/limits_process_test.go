package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// TestLimitsProcess is issue 37 item 5's run-time limits on a real
// all-in-one process, through the HTTP API: PUT /limits/tenant-a raises
// tenant-a's limit from the flags' default of 1 to 3 and it is enforced
// (3 of 6 one-second jobs start at once, the 4th waits for a slot); the
// node is killed and started again on its journal and GET /limits still
// shows the run-time limit; DELETE /limits/tenant-a goes back to the
// default of 1 (two jobs run one after the other). Real time: the bounds
// are generous.
func TestLimitsProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes; skipped with -short")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	addr := freeAddr(t)
	g := newProcGroup(t)
	args := []string{"--http", addr, "--produce=false", "--data", t.TempDir(), "--workers", "4", "--delay", "1s",
		"--concurrency-limit", "tenant-b=2"}
	node := g.start(ctx, "all-in-one", args...)
	node.waitLine(t, "http api listening", 1, 60*time.Second)
	api, err := httpapi.NewClient("http://" + addr)
	require.NoError(t, err)
	defer api.CloseIdleConnections()
	limitOf := func(ls *httpapi.LimitsResponse, key string) (httpapi.KeyLimit, bool) {
		i := slices.IndexFunc(ls.Limits, func(l httpapi.KeyLimit) bool { return l.Key == key })
		if i < 0 {
			return httpapi.KeyLimit{}, false
		}
		return ls.Limits[i], true
	}
	startsOf := func(n int) []time.Time {
		t.Helper()
		var ids []string
		for i := range n {
			r, err := api.SubmitResult(ctx, httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage(strconv.Itoa(i)), ConcurrencyKey: "tenant-a"})
			require.NoError(t, err)
			ids = append(ids, r.ID)
		}
		var starts []time.Time
		for _, id := range ids {
			info, err := api.Wait(ctx, id, 50*time.Millisecond)
			require.NoError(t, err)
			require.Equal(t, httpapi.StatusDone, info.Status, id)
			for _, e := range workHistory(ctx, t, "http://"+addr, id) {
				if e.Event == "started" {
					starts = append(starts, e.At)
				}
			}
		}
		require.Len(t, starts, n, "each ran once")
		slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
		return starts
	}

	_, err = api.SetLimit(ctx, "tenant-a", httpapi.LimitRequest{Concurrency: 0, Rate: "10"})
	require.ErrorContains(t, err, `field "rate"`, "a bad rate is a 400 naming the field")
	ls, err := api.SetLimit(ctx, "tenant-a", httpapi.LimitRequest{Concurrency: 3})
	require.NoError(t, err)
	a, ok := limitOf(ls, "tenant-a")
	require.True(t, ok)
	require.Equal(t, httpapi.KeyLimit{Key: "tenant-a", Concurrency: 3, ConcurrencySource: "runtime"}, a)

	starts := startsOf(6)
	require.Less(t, starts[2].Sub(starts[0]), 900*time.Millisecond, "three start at once: %s", fmt.Sprint(starts))
	require.GreaterOrEqual(t, starts[3].Sub(starts[0]), 900*time.Millisecond, "the 4th waits for a slot: %s", fmt.Sprint(starts))

	// The master's node dies and comes back on its journal: the limit is kept.
	require.NoError(t, node.cmd.Process.Signal(syscall.SIGKILL))
	<-node.done
	node = g.start(ctx, "all-in-one-again", args...)
	node.waitLine(t, "http api listening", 1, 60*time.Second)
	require.Eventually(t, func() bool {
		ls, err = api.Limits(ctx)
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "GET /limits after the restart: %v", err)
	a, ok = limitOf(ls, "tenant-a")
	require.True(t, ok, "the run-time limit survives the restart: %+v", ls)
	require.Equal(t, int64(3), a.Concurrency)
	b, _ := limitOf(ls, "tenant-b")
	require.Equal(t, httpapi.KeyLimit{Key: "tenant-b", Concurrency: 2, ConcurrencySource: "flag"}, b)

	ls, err = api.RemoveLimit(ctx, "tenant-a")
	require.NoError(t, err)
	_, ok = limitOf(ls, "tenant-a")
	require.False(t, ok, "back to the default: %+v", ls)
	starts = startsOf(2)
	require.GreaterOrEqual(t, starts[1].Sub(starts[0]), 900*time.Millisecond, "the default of 1 again: %s", fmt.Sprint(starts))
}
