package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/node"
)

// Issue 38, item 3: graceful drain, with real processes. Two backends on
// one journal, a frontend (HTTP API only) and workers running the built-in
// long job (it heartbeats and reports progress, so it runs past the 10 s
// work timeout). SIGTERM on a worker whose jobs finish within its drain
// timeout: they all complete there, at their first attempt, and it exits.
// SIGTERM on a worker whose jobs outlast it: they are cancelled, handed
// back and done by another worker, still at attempt 1 (a hand-back is not
// a failed attempt), and the worker exits within its drain timeout plus
// the bound. SIGTERM on the backend hosting the master: the other one
// serves at once, and every job the journal accepted ends done.
func TestSIGTERMDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real cluster processes; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 170*time.Second)
	defer cancel()
	bound := testkit.Timeout()
	bin := plainBinary(t)
	data := t.TempDir()
	dbPath := filepath.Join(data, node.JournalFile)
	ports := pickWalkPorts(t)
	seeds := fmt.Sprintf("--seeds=127.0.0.1:%d,127.0.0.1:%d", ports.backend1, ports.backend2)
	g := newProcGroup(t)

	b1 := g.startBinary(ctx, bin, fmt.Sprintf("backend-%d", ports.backend1), strconv.Itoa(ports.backend1), seeds, "--data", data)
	b1.waitLine(t, "node started", 1, 60*time.Second)
	b2 := g.startBinary(ctx, bin, fmt.Sprintf("backend-%d", ports.backend2), strconv.Itoa(ports.backend2), seeds, "--data", data)
	b2.waitLine(t, "node started", 1, 60*time.Second)
	b1.waitLine(t, "member up", 1, 30*time.Second, "address=127.0.0.1:"+strconv.Itoa(ports.backend2))
	front := g.startBinary(ctx, bin, fmt.Sprintf("frontend-%d", ports.frontend), strconv.Itoa(ports.frontend), seeds, "--produce=false")
	front.waitLine(t, "node started", 1, 60*time.Second)
	api, err := httpapi.NewClient("http://127.0.0.1:" + strconv.Itoa(ports.frontend+5000))
	require.NoError(t, err)

	submit := func(id, payload string, beatTimeout ...string) {
		t.Helper()
		req := httpapi.SubmitRequest{ID: id, Type: "long", Payload: json.RawMessage(payload)}
		if len(beatTimeout) > 0 {
			req.HeartbeatTimeout = beatTimeout[0]
		}
		require.Eventually(t, func() bool {
			_, err := api.Submit(ctx, req)
			return err == nil
		}, 30*time.Second, 100*time.Millisecond, "submitting %s", id)
	}
	// waitWork polls the job until ok holds and returns its last state; on
	// a timeout it reports that state (a message built before the wait
	// would always show nil).
	waitWork := func(id, what string, within time.Duration, ok func(*httpapi.WorkInfo) bool) *httpapi.WorkInfo {
		t.Helper()
		var last *httpapi.WorkInfo
		if !assert.Eventually(t, func() bool {
			info, err := api.Work(ctx, id)
			if err != nil {
				return false
			}
			last = info
			return ok(info)
		}, within, 50*time.Millisecond) {
			require.FailNowf(t, "timed out", "waiting for %s to %s (last %+v)\n%s", id, what, last, g.tails())
		}
		return last
	}
	waitStatus := func(id, status string, within time.Duration) *httpapi.WorkInfo {
		t.Helper()
		return waitWork(id, "be "+status, within, func(info *httpapi.WorkInfo) bool { return info.Status == status })
	}
	// waitStarted waits until the job runs on an executor: the master marks
	// a job running when it hands it out, the built-in long job reports
	// progress once its function has started.
	waitStarted := func(id string, within time.Duration) {
		t.Helper()
		waitWork(id, "start", within, func(info *httpapi.WorkInfo) bool {
			return info.Status == httpapi.StatusRunning && info.Progress != nil
		})
	}

	// A drain within the timeout: both jobs complete on the worker.
	// --prefetch 0: a worker that does not yet know its jobs are long reads
	// one ahead, and a draining worker hands back at once what it holds but
	// has not started (another worker can start it sooner). Without it both
	// jobs could land on one worker, the second waiting in its queue, and
	// the test would see a hand-back that is the design, not a fault.
	fits := g.startBinary(ctx, bin, "worker-fits", "0", seeds, "--workers", "2", "--prefetch", "0", "--drain-timeout", "20s")
	fits.waitLine(t, "Worker started", 2, 60*time.Second)
	for _, id := range []string{"fits-1", "fits-2"} {
		submit(id, `"4s"`)
	}
	for _, id := range []string{"fits-1", "fits-2"} {
		waitStarted(id, 30*time.Second)
	}
	g.sigterm(t, fits, 4*time.Second+bound)
	require.Empty(t, handedBack(fits), "nothing handed back\n%s", fits.log.tail(20))
	for _, id := range []string{"fits-1", "fits-2"} {
		info := waitStatus(id, httpapi.StatusDone, 10*time.Second)
		require.LessOrEqual(t, info.Attempts, int32(1), "%s done at its first attempt", id)
		require.Empty(t, info.LastError)
	}

	// A drain that times out: the jobs are handed back and done elsewhere.
	short := g.startBinary(ctx, bin, "worker-short", "0", seeds, "--workers", "2", "--prefetch", "0", "--drain-timeout", "2s")
	short.waitLine(t, "Worker started", 2, 60*time.Second)
	// 30 s jobs, checked 11 s after they started: CI once saw 15 s jobs
	// done at the check, when the other worker took 4 s to start on a
	// loaded machine and the hold began only then.
	// A heartbeat timeout of 60 s, not the long job's 5 s: CI saw long-2
	// timed out at 13 s, its worker's beats gone for over 5 s while the
	// machine was so loaded that the next worker took 13 s to start. The
	// check below still needs the heartbeats: without one the 10 s work
	// timeout applies (docs/long-jobs.md), and the beats after the pause
	// below carry the jobs past it.
	for _, id := range []string{"long-1", "long-2"} {
		submit(id, `"30s"`, "60s")
	}
	for _, id := range []string{"long-1", "long-2"} {
		waitStarted(id, 30*time.Second)
	}
	startedBy := time.Now()
	// The stall CI met, on purpose: the worker is stopped for 6 s, longer
	// than the long job's own 5 s heartbeat timeout, and its jobs survive
	// because they were submitted with a longer one.
	require.NoError(t, short.cmd.Process.Signal(syscall.SIGSTOP))
	g.hold(ctx, 6*time.Second)
	require.NoError(t, short.cmd.Process.Signal(syscall.SIGCONT))
	other := g.startBinary(ctx, bin, "worker-other", "0", seeds, "--workers", "2")
	other.waitLine(t, "Worker started", 2, 60*time.Second)
	g.hold(ctx, time.Until(startedBy.Add(11*time.Second))) // past the 10 s work timeout: the heartbeats keep them
	for _, id := range []string{"long-1", "long-2"} {
		// Asked again on a 503: CI saw "recovering from the journal" here,
		// a master retaking its lease after a stall on a loaded machine.
		info := workStatus(ctx, t, api, id)
		require.Equal(t, httpapi.StatusRunning, info.Status, "%s runs past the work timeout", id)
		require.Equal(t, int32(1), info.Attempts)
		require.NotNil(t, info.Progress, "%s reports its progress", id)
	}
	g.sigterm(t, short, 2*time.Second+bound)
	require.ElementsMatch(t, []string{"long-1", "long-2"}, handedBack(short), "%s", short.log.tail(20))
	for _, id := range []string{"long-1", "long-2"} {
		info := waitStatus(id, httpapi.StatusDone, 60*time.Second)
		// At most 1: a master that recovers meanwhile (a lease renewal
		// late on a loaded machine) re-queues what runs and uncounts it too.
		require.LessOrEqual(t, info.Attempts, int32(1), "%s: the hand-back is not a failed attempt", id)
		require.Empty(t, info.LastError, "%s: the hand-back is not a failure", id)
	}

	// The backend hosting the master hands it over: the other serves.
	host, epoch := g.masterHost(t, ports.frontend+5000, b1, b2)
	next := b1
	if host == b1 {
		next = b2
	}
	g.sigterm(t, host, bound)
	start := time.Now()
	submit("after-handover", `"10ms"`)
	waitStatus("after-handover", httpapi.StatusDone, 30*time.Second)
	took := time.Since(start)
	require.Greater(t, maxEpoch(next.log.lines(), time.Time{}), epoch, "the other backend took the master over")
	t.Logf("after the master's backend exited, a job was accepted and done within %v", took.Round(time.Millisecond))
	require.Less(t, took, 10*time.Second)

	g.waitJournal(ctx, t, dbPath, "every accepted job done", func(st *master.WorkState) bool {
		c := st.Counts()
		return c.AcceptedTotal == 5 && c.Done == 5 && c.Pending == 0 && c.InProgress == 0
	})
	left := g.running()
	for i := len(left) - 1; i >= 0; i-- {
		g.sigterm(t, left[i], bound)
	}
}
