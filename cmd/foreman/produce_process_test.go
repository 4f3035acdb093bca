package main

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/node"
)

// TestAllInOneProduceOff is issue 34 item 7: `foreman --http ADDR
// --produce=false --workers 0` must run no simulated clients. The producer
// submits its first job frontend.DefaultInitialDelay (5 s) after it
// starts, then one every 3-10 s; the node is watched for twice that
// initial delay after its API answers, during which exactly the one job
// the test submits is accepted. The journal then holds that job alone (a
// 1,000,000-job backlog must not come out as 1,000,001).
func TestAllInOneProduceOff(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real process; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	data := t.TempDir()
	g := newProcGroup(t)
	p := g.start(ctx, "all-in-one", "--http", "127.0.0.1:0", "--produce=false", "--workers", "0", "--data", data, "--log-level", "info")
	p.waitLine(t, "http api listening", 1, 60*time.Second)
	api, err := httpapi.NewClient("http://" + listenAddr(t, p))
	require.NoError(t, err)
	defer api.CloseIdleConnections()
	_, err = api.Submit(ctx, httpapi.SubmitRequest{ID: "mine", Type: "square", Payload: []byte("7")})
	require.NoError(t, err)

	// Watch the queue for two initial delays: with the producer running,
	// its first job is accepted 5 s after the node started.
	watchUntil := time.Now().Add(2 * frontend.DefaultInitialDelay)
	for time.Now().Before(watchUntil) {
		st, err := api.Status(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, st.Queue.AcceptedTotal, "the node accepted jobs nobody submitted (queue %+v)", st.Queue)
		g.hold(ctx, 250*time.Millisecond) // polling another process: nothing to wait on
	}

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	<-p.done
	require.NoError(t, p.err, "the node did not stop cleanly:\n%s", p.log.tail(20))
	st := recoverState(t, filepath.Join(data, node.JournalFile))
	require.Equal(t, []string{"mine"}, acceptedIDs(st), "the journal holds jobs nobody submitted")
}
