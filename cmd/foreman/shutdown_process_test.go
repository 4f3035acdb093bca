package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/node"
)

// Issue 11, part 5: SIGTERM on any node exits 0 within 3 s of the signal,
// with its work handed back. The bound is testkit.Timeout(): 3 s, 10 s when
// CI is set, or FOREMAN_TEST_TIMEOUT (a shared 2-core machine).
//
// These tests run foreman built without -race: the pinned protoactor-go
// races with itself when the topology changes under lookups (disthash
// Manager.rdv, issue #1131 upstream), and a race-built process that
// survives a member's leave may then exit 66 for a race that is not ours.
// The other process tests run the race build.

var (
	plainOnce sync.Once
	plainBin  string
	plainErr  error
)

// plainBinary builds foreman without -race, once per test binary, next to
// the race build.
func plainBinary(t *testing.T) string {
	t.Helper()
	plainOnce.Do(func() {
		plainBin = filepath.Join(filepath.Dir(binary), "foreman-plain")
		out, err := exec.Command("go", "build", "-o", plainBin, ".").CombinedOutput()
		if err != nil {
			plainErr = fmt.Errorf("building foreman without -race: %w\n%s", err, out)
		}
	})
	require.NoError(t, plainErr)
	return plainBin
}

// TestSIGTERMClusterNodes runs two backends on one journal, a frontend and
// two workers under light load, and SIGTERMs each kind of node: a worker
// that is running a job (the job is handed back and completes on the other
// worker), the backend hosting the master (the other backend takes over and
// results keep coming), the frontend, then the last worker and backend.
// Every job the journal accepted ends done.
func TestSIGTERMClusterNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real cluster processes; skipped with -short")
	}
	// Not parallel: it bounds exit times, and membership declares a member
	// down after two 300 ms probe timeouts.
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
	front := g.startBinary(ctx, bin, fmt.Sprintf("frontend-%d", ports.frontend), strconv.Itoa(ports.frontend), seeds, "--jobs", "1000")

	// A worker whose job runs for minutes: a SIGTERM finds it running.
	// Its drain timeout is short: the job is cancelled and handed back
	// (drain_process_test.go tests the drain itself).
	slow := g.startBinary(ctx, bin, "worker-slow", "0", seeds, "--workers", "1", "--delay", "2m", "--drain-timeout", "1s")
	slow.waitLine(t, "Worker started", 1, 60*time.Second)
	running := g.runningOn(ctx, t, dbPath, workerIDs(slow))
	g.startBinary(ctx, bin, "worker-fast", "0", seeds, "--workers", "2", "--delay", "100ms")
	front.waitLine(t, "Consumed result", 5, 60*time.Second)

	// Worker: its running job goes back to the master (it is done by
	// another worker once the jobs queued before it are, checked below).
	g.sigterm(t, slow, bound+time.Second)
	require.Contains(t, handedBack(slow), running, "the stopping worker did not hand back %s\n%s", running, slow.log.tail(20))

	// Backend hosting the master: the other one takes over.
	host, epoch := g.masterHost(t, ports.frontend+5000, b1, b2)
	other := b1
	if host == b1 {
		other = b2
	}
	g.sigterm(t, host, bound)
	other.waitFor(t, fmt.Sprintf("a master recovered on %s with an epoch above %d", other.name, epoch), 60*time.Second,
		func(lines []logLine) bool { return maxEpoch(lines, time.Time{}) > epoch })
	now := front.count("Consumed result")
	front.waitLine(t, "Consumed result", now+5, 60*time.Second)

	// Frontend.
	g.sigterm(t, front, bound)

	// Nothing acked is lost: every job the journal accepted ends done (a
	// faster worker drains the rest).
	g.startBinary(ctx, bin, "worker-drain", "0", seeds, "--workers", "8", "--delay", "0")
	g.waitJournal(ctx, t, dbPath, "every accepted job done", func(st *master.WorkState) bool {
		c := st.Counts()
		return c.AcceptedTotal > 0 && c.Done == int(c.AcceptedTotal) && c.Pending == 0 && c.InProgress == 0
	})
	st, ok := tryRecoverState(dbPath)
	require.True(t, ok)
	require.True(t, st.IsDone(running), "the handed-back job %s is not done", running)

	// The last workers, then the last backend (the master is there now).
	left := g.running()
	for i := len(left) - 1; i >= 0; i-- { // latest first: workers before backends
		g.sigterm(t, left[i], bound)
	}
}

// TestSIGTERMAllInOne: `foreman --drain-timeout 0` SIGTERMed while its
// worker runs a job exits 0 within the bound; the job was handed back at
// once, and a node started on the same journal does it. (With the default
// drain the node waits up to 25 s for the job first: TestSIGTERMDrainAllInOne.)
func TestSIGTERMAllInOne(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	bound := testkit.Timeout()
	bin := plainBinary(t)
	data := t.TempDir()
	dbPath := filepath.Join(data, node.JournalFile)
	g := newProcGroup(t)

	first := g.startBinary(ctx, bin, "all-in-one", "--data", data, "--workers", "1", "--delay", "2m", "--drain-timeout", "0")
	first.waitLine(t, "Worker started", 1, 60*time.Second)
	running := g.runningOn(ctx, t, dbPath, workerIDs(first))
	g.sigterm(t, first, bound)
	require.Contains(t, handedBack(first), running, "the stopping worker did not hand back %s\n%s", running, first.log.tail(20))

	second := g.startBinary(ctx, bin, "all-in-one-again", "--data", data, "--workers", "2", "--delay", "0", "--produce=false")
	g.waitJournal(ctx, t, dbPath, "the handed-back job "+running+" is done", func(st *master.WorkState) bool { return st.IsDone(running) })
	g.sigterm(t, second, bound)
}

// sigterm sends SIGTERM to p and requires that it exits 0 within bound,
// measured from the signal.
func (g *procGroup) sigterm(t *testing.T, p *nodeProc, bound time.Duration) {
	t.Helper()
	start := time.Now()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM), "SIGTERM to %s", p.name)
	select {
	case <-p.done:
	case <-time.After(bound + 20*time.Second): // to report how long it took
	}
	took := time.Since(start)
	require.True(t, p.exited(), "%s did not exit within %v of SIGTERM\n%s", p.name, took, p.log.tail(40))
	t.Logf("%s %s exited %v after SIGTERM (bound %v)", g.since(), p.name, took.Round(time.Millisecond), bound)
	require.NoError(t, p.err, "%s exit status after SIGTERM\n%s", p.name, p.log.tail(40))
	require.LessOrEqual(t, took, bound, "%s took %v to exit after SIGTERM\n%s", p.name, took, p.log.tail(40))
}

// running returns the processes of the group that have not exited.
func (g *procGroup) running() []*nodeProc {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*nodeProc
	for _, p := range g.procs {
		if !p.exited() {
			out = append(out, p)
		}
	}
	return out
}

// waitJournal polls the journal (another process writes it: no probe can
// see it) until cond holds on the state it records.
func (g *procGroup) waitJournal(ctx context.Context, t *testing.T, dbPath, what string, cond func(*master.WorkState) bool) {
	t.Helper()
	var last string
	require.Eventually(t, func() bool {
		st, ok := tryRecoverState(dbPath)
		if !ok {
			return false
		}
		last = fmt.Sprintf("%+v", st.Counts())
		return cond(st)
	}, remaining(ctx, t), 200*time.Millisecond, "waiting for %s; journal: %s\n%s", what, last, g.tails())
}

// runningOn waits until the journal shows a job in progress on one of the
// given workers and returns its work id.
func (g *procGroup) runningOn(ctx context.Context, t *testing.T, dbPath string, workers map[string]bool) string {
	t.Helper()
	require.NotEmpty(t, workers)
	var id string
	g.waitJournal(ctx, t, dbPath, "a job running on the slow worker", func(st *master.WorkState) bool {
		for _, r := range st.InProgress() {
			if workers[r.WorkerID] {
				id = r.WorkID
				return true
			}
		}
		return false
	})
	return id
}

var workerIDRE = regexp.MustCompile(`msg="Worker started".* worker_id=(\S+)`)

// workerIDs are the ids of the workers a process started.
func workerIDs(p *nodeProc) map[string]bool {
	ids := map[string]bool{}
	for _, l := range p.log.lines() {
		if m := workerIDRE.FindStringSubmatch(l.text); m != nil {
			ids[m[1]] = true
		}
	}
	return ids
}

// handedBack are the work ids a process's workers handed back on stopping.
func handedBack(p *nodeProc) []string {
	var ids []string
	for _, l := range p.log.lines() {
		if m := workIDRE.FindStringSubmatch(l.text); m != nil && strings.Contains(l.text, "work handed back") {
			ids = append(ids, m[1])
		}
	}
	return ids
}
