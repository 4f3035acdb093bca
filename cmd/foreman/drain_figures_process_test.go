package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/node"
)

// TestDrainFigures measures a worker node's graceful drain with 60 s jobs
// running (docs/benchmarks/issue38-drain.md): the time from SIGTERM to the
// process's exit, and the jobs lost (accepted but never done). It runs only
// with FOREMAN_DRAIN_FIGURES=N (N runs) and takes about 100 s a run:
//
//	FOREMAN_DRAIN_FIGURES=3 go test -count=1 -v -run TestDrainFigures ./cmd/foreman/
func TestDrainFigures(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("FOREMAN_DRAIN_FIGURES"))
	if runs <= 0 {
		t.Skip("set FOREMAN_DRAIN_FIGURES=N to measure N drains")
	}
	bin := plainBinary(t)
	var exits []time.Duration
	for run := 1; run <= runs; run++ {
		exit, lost, handed := drainRun(t, bin)
		exits = append(exits, exit)
		t.Logf("FIGURE run %d: SIGTERM to exit %v, jobs handed back %d, jobs lost %d", run, exit.Round(time.Millisecond), handed, lost)
		require.Zero(t, lost)
	}
	slices.Sort(exits)
	t.Logf("FIGURE SIGTERM to exit over %d runs: median %v (min %v, max %v), drain timeout %v",
		runs, exits[len(exits)/2].Round(time.Millisecond), exits[0].Round(time.Millisecond), exits[len(exits)-1].Round(time.Millisecond), node.DefaultDrainTimeout)
}

// drainRun runs one backend, a frontend and a worker node of 4 workers
// (default --drain-timeout), submits four 60 s long jobs, starts a second
// worker node once they run, SIGTERMs the first 5 s later and waits until
// every job is done.
func drainRun(t *testing.T, bin string) (exit time.Duration, lost, handed int) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	data := t.TempDir()
	ports := pickWalkPorts(t)
	seeds := fmt.Sprintf("--seeds=127.0.0.1:%d", ports.backend1)
	g := newProcGroup(t)
	defer g.stopAll()
	b := g.startBinary(ctx, bin, "backend", strconv.Itoa(ports.backend1), seeds, "--data", data)
	b.waitLine(t, "master recovered", 1, 60*time.Second)
	front := g.startBinary(ctx, bin, "frontend", strconv.Itoa(ports.frontend), seeds, "--produce=false")
	front.waitLine(t, "node started", 1, 60*time.Second)
	api, err := httpapi.NewClient("http://127.0.0.1:" + strconv.Itoa(ports.frontend+5000))
	require.NoError(t, err)
	w1 := g.startBinary(ctx, bin, "worker-1", "0", seeds, "--workers", "4")
	w1.waitLine(t, "master found", 4, 60*time.Second)
	ids := []string{"job-1", "job-2", "job-3", "job-4"}
	for _, id := range ids {
		require.Eventually(t, func() bool {
			_, err := api.Submit(ctx, httpapi.SubmitRequest{ID: id, Type: "long", Payload: json.RawMessage(`"60s"`)})
			return err == nil
		}, 30*time.Second, 100*time.Millisecond)
	}
	running := func() int {
		n := 0
		for _, id := range ids {
			if info, err := api.Work(ctx, id); err == nil && info.Status == httpapi.StatusRunning {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return running() == len(ids) }, 30*time.Second, 100*time.Millisecond)
	w2 := g.startBinary(ctx, bin, "worker-2", "0", seeds, "--workers", "4")
	w2.waitLine(t, "master found", 4, 60*time.Second)
	g.hold(ctx, 5*time.Second)
	start := time.Now()
	require.NoError(t, w1.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-w1.done:
	case <-time.After(node.DefaultDrainTimeout + 30*time.Second):
		t.Fatalf("worker-1 did not exit\n%s", w1.log.tail(30))
	}
	exit = time.Since(start)
	require.NoError(t, w1.err)
	handed = len(handedBack(w1))
	require.Eventually(t, func() bool {
		for _, id := range ids {
			info, err := api.Work(ctx, id)
			if err != nil || info.Status != httpapi.StatusDone {
				return false
			}
		}
		return true
	}, 100*time.Second, 250*time.Millisecond, "every job done\n%s", g.tails())
	for _, id := range ids {
		if info, err := api.Work(ctx, id); err != nil || info.Status != httpapi.StatusDone {
			lost++
		}
	}
	st, ok := tryRecoverState(filepath.Join(data, node.JournalFile))
	require.True(t, ok)
	c := st.Counts()
	lost += int(c.AcceptedTotal) - c.Done
	return exit, lost, handed
}
