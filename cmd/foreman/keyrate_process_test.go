package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// TestKeyRateProcess is issue 37 item 5's per-key rate on a real
// all-in-one process, through the HTTP API: with --key-rate tenant-a=2/1s
// (and room for 10 of tenant-a at once) and 4 workers, 6 jobs of tenant-a
// submitted at once start at most 2 in any 1 s window (their start times
// from GET /work/{id}?history=true), so they take over 2 s; a job of
// another key submitted with them is not held back.
func TestKeyRateProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real process; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addr := freeAddr(t)
	g := newProcGroup(t)
	node := g.start(ctx, "all-in-one", "--http", addr, "--produce=false", "--data", t.TempDir(), "--workers", "4",
		"--delay", "50ms", "--key-rate", "tenant-a=2/1s", "--concurrency-limit", "tenant-a=10", "--concurrency-limit", "tenant-b=10")
	node.waitLine(t, "http api listening", 1, 60*time.Second)
	api, err := httpapi.NewClient("http://" + addr)
	require.NoError(t, err)

	var ids []string
	for i := range 6 {
		r, err := api.SubmitResult(ctx, httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage(strconv.Itoa(i)), ConcurrencyKey: "tenant-a"})
		require.NoError(t, err)
		ids = append(ids, r.ID)
	}
	other, err := api.SubmitResult(ctx, httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage("7"), ConcurrencyKey: "tenant-b"})
	require.NoError(t, err)
	submitted := time.Now()

	ob, err := api.Wait(ctx, other.ID, 20*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, httpapi.StatusDone, ob.Status)
	require.Less(t, time.Since(submitted), 900*time.Millisecond, "tenant-b is not held back by tenant-a's rate")

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
	require.Len(t, starts, 6, "each ran once")
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	for i := 2; i < len(starts); i++ {
		require.GreaterOrEqual(t, starts[i].Sub(starts[i-2]), time.Second,
			"starts %d and %d of tenant-a are within 1 s: %s", i-2, i, fmt.Sprint(starts))
	}
	require.GreaterOrEqual(t, starts[5].Sub(starts[0]), 2*time.Second, "6 at 2/s span over 2 s")
}
