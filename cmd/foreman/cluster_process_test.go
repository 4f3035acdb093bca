package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"os"
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

	"github.com/foreman-actors/foreman/cluster/membership/etcdmembers/etcdtest"
	"github.com/foreman-actors/foreman/cluster/node"
)

// walkPorts are the ports of one walkthrough: two backends, a frontend.
// They are picked free at random (backends 2600-2998, the frontend 1000
// above) so that a developer's cluster on the defaults (2551/2552/3001) or
// another run of this test does not collide. The membership endpoints are
// on port+4000, the frontend's HTTP API on port+5000.
type walkPorts struct{ backend1, backend2, frontend int }

func pickWalkPorts(t *testing.T) walkPorts {
	t.Helper()
	for range 200 {
		b := 2600 + 2*mathrand.IntN(200)
		p := walkPorts{backend1: b, backend2: b + 1, frontend: b + 1000}
		if portsFree(p.backend1, p.backend2, p.backend1+4000, p.backend2+4000, p.frontend, p.frontend+5000) {
			return p
		}
	}
	t.Fatal("no free ports for the walkthrough in 2600-2999")
	return walkPorts{}
}

// portsFree reports whether every port can be listened on at 127.0.0.1 now.
func portsFree(ports ...int) bool {
	for _, port := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return false
		}
		if err := l.Close(); err != nil {
			return false // the port may still be held: take others
		}
	}
	return true
}

// Shape of the walkthrough's load: the frontend submits walkJobs jobs as fast
// as they are acked; workers take walkDelay per job, so results trickle for
// long enough to kill and restart things in the middle of the run.
const (
	walkJobs    = 3000
	walkWorkers = "2"
	walkDelay   = "50ms"
)

// TestClusterWalkthrough scripts the seed's "Run the Application" with real
// processes on loopback: a backend (the seed's 2551), a frontend (3001) and
// a worker; jobs flow; the worker is killed with SIGKILL and results stop; a
// new worker resumes them; a second backend (2552) joins on the same
// journal; the backend hosting the master is killed with SIGKILL and the
// other takes over; finally every job the journal accepted (a superset of
// the acked ones) ends done, and the frontend saw all of its jobs acked.
//
// It runs with each membership: seed nodes, and etcd (its own etcd server,
// skipped without one unless FOREMAN_TEST_ETCD=require).
func TestClusterWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real cluster processes; skipped with -short")
	}
	// Not parallel: membership declares a member down after two 300 ms
	// probe timeouts, so this test runs alone rather than next to the other
	// process tests on a 2-core machine.
	t.Run("seeds", func(t *testing.T) { clusterWalkthrough(t, "") })
	t.Run("etcd", func(t *testing.T) { clusterWalkthrough(t, etcdtest.Start(t).URL()) })
}

// clusterWalkthrough runs the walkthrough with seed membership, or with
// etcd's at etcdURL when it is not empty.
func clusterWalkthrough(t *testing.T, etcdURL string) {
	ctx, cancel := context.WithTimeout(context.Background(), 170*time.Second)
	defer cancel()
	data := t.TempDir()
	dbPath := filepath.Join(data, node.JournalFile)
	ports := pickWalkPorts(t)
	walkBackend1, walkBackend2, walkFrontend := ports.backend1, ports.backend2, ports.frontend
	// seeds is the membership argument of every node.
	seeds := fmt.Sprintf("--seeds=127.0.0.1:%d,127.0.0.1:%d", walkBackend1, walkBackend2)
	if etcdURL != "" {
		seeds = "--membership=" + etcdURL
	}
	g := newProcGroup(t)
	step := func(format string, args ...any) { t.Logf("%s "+format, append([]any{g.since()}, args...)...) }

	// 1. The first backend alone, then the frontend and a worker.
	b1 := g.start(ctx, fmt.Sprintf("backend-%d", walkBackend1), strconv.Itoa(walkBackend1), seeds, "--data", data)
	b1.waitLine(t, "node started", 1, 60*time.Second)
	front := g.start(ctx, fmt.Sprintf("frontend-%d", walkFrontend), strconv.Itoa(walkFrontend), seeds, "--jobs", strconv.Itoa(walkJobs))
	w1 := g.start(ctx, "worker-1", "0", seeds, "--workers", walkWorkers, "--delay", walkDelay)
	step("started backend %d, frontend %d, worker 1", walkBackend1, walkFrontend)

	// 2. Jobs flow: the frontend consumes results.
	front.waitLine(t, "Consumed result", 20, 60*time.Second)
	step("jobs flow: %d results consumed", front.count("Consumed result"))

	// 3. SIGKILL the worker: results stop. Results completed just before
	// the kill may still be on their way through pub-sub, so let them
	// settle, then expect silence.
	w1.kill(t)
	step("killed worker 1")
	settle, silence := 1500*time.Millisecond, 3*time.Second
	front.quietFor(t, "Consumed result", settle, 10*time.Second)
	before := front.count("Consumed result")
	g.hold(ctx, silence) // observing absence: nothing to wait for but time
	require.Equal(t, before, front.count("Consumed result"),
		"results kept coming with no worker alive\n%s", g.tails())
	step("results stopped at %d for %v", before, silence)

	// 4. A new worker: results resume.
	g.start(ctx, "worker-2", "0", seeds, "--workers", walkWorkers, "--delay", walkDelay)
	front.waitLine(t, "Consumed result", before+10, 60*time.Second)
	step("worker 2 started: results resumed (%d consumed)", front.count("Consumed result"))

	// 5. The second backend joins on the same journal; results keep flowing
	// (the master may move to it: placement follows the address hash).
	b2 := g.start(ctx, fmt.Sprintf("backend-%d", walkBackend2), strconv.Itoa(walkBackend2), seeds, "--data", data)
	b2.waitLine(t, "node started", 1, 60*time.Second)
	b1.waitLine(t, "member up", 1, 30*time.Second, "address=127.0.0.1:"+strconv.Itoa(walkBackend2))
	now := front.count("Consumed result")
	front.waitLine(t, "Consumed result", now+20, 60*time.Second)
	step("backend %d joined; results flowing (%d consumed)", walkBackend2, front.count("Consumed result"))

	// 6. SIGKILL the backend that hosts the master; the other takes over.
	host, epoch := g.masterHost(t, walkFrontend+5000, b1, b2)
	other := b1
	if host == b1 {
		other = b2
	}
	left := g.unfinished(dbPath)
	step("master on %s (epoch %d); %d jobs unfinished in the journal", host.name, epoch, left)
	killedAt := time.Now()
	host.kill(t)
	other.waitFor(t, fmt.Sprintf("a master recovered on %s with an epoch above %d", other.name, epoch), 60*time.Second,
		func(lines []logLine) bool { return maxEpoch(lines, time.Time{}) > epoch })
	took := other.firstAfter("master recovered", killedAt)
	step("%s took over as master %v after the kill", other.name, took)
	if left > 0 {
		now = front.count("Consumed result")
		front.waitLine(t, "Consumed result", now+5, 60*time.Second)
		step("results flow from the new master (%d consumed)", front.count("Consumed result"))
	}

	// 7. Nothing acked is lost: the frontend saw every job acked, and every
	// job the journal accepted (acks are sent once WorkAccepted is durable)
	// ends done. A faster worker drains the rest.
	g.start(ctx, "worker-3", "0", seeds, "--workers", "8", "--delay", "0")
	front.waitLine(t, "All work acknowledged", 1, 90*time.Second)
	var last string
	require.Eventually(t, func() bool {
		st, ok := tryRecoverState(dbPath)
		if !ok {
			return false
		}
		c := st.Counts()
		last = fmt.Sprintf("%+v", c)
		return c.AcceptedTotal == walkJobs && c.Done == walkJobs && c.Pending == 0 && c.InProgress == 0 && c.Dead == 0
	}, remaining(ctx, t), 250*time.Millisecond, "not every accepted job is done: %s\n%s", last, g.tails())
	consumed, dups := front.distinct("Consumed result"), front.count("Duplicate result")
	step("all %d accepted jobs done; frontend consumed %d distinct results, %d duplicates (pub-sub is at-most-once, the journal is the record)",
		walkJobs, consumed, dups)
}

// remaining is the time left before ctx's deadline, less a margin for the
// cleanup.
func remaining(ctx context.Context, t *testing.T) time.Duration {
	t.Helper()
	dl, ok := ctx.Deadline()
	require.True(t, ok)
	d := time.Until(dl) - 20*time.Second
	require.Positive(t, d, "out of time")
	return d
}

// procGroup runs the processes of one test and stops all of them, by PID,
// in t.Cleanup: SIGTERM (a graceful leave), then SIGKILL for any process
// still running after a grace period. The test's ctx is passed to each
// call that starts or waits: a process is killed when the ctx it was
// started with ends, as with exec.CommandContext.
type procGroup struct {
	t  *testing.T
	t0 time.Time
	// grace is how long stopAll waits after SIGTERM before SIGKILL (20 s
	// when zero).
	grace time.Duration

	mu    sync.Mutex
	procs []*nodeProc
}

func newProcGroup(t *testing.T) *procGroup {
	g := &procGroup{t: t, t0: time.Now()}
	t.Cleanup(g.stopAll)
	return g
}

func (g *procGroup) since() string {
	return fmt.Sprintf("[%6.2fs]", time.Since(g.t0).Seconds())
}

// start runs the foreman binary with args until it exits or ctx ends; its
// stderr (the log) is kept.
func (g *procGroup) start(ctx context.Context, name string, args ...string) *nodeProc {
	g.t.Helper()
	return g.startBinary(ctx, binary, name, args...)
}

// startBinary is start with another build of foreman.
func (g *procGroup) startBinary(ctx context.Context, bin, name string, args ...string) *nodeProc {
	g.t.Helper()
	return g.startCmd(name, exec.CommandContext(ctx, bin, args...), "")
}

// startCmd starts cmd, made with exec.CommandContext, as one of the group's
// processes. Its output is kept, and also written to logPath unless that is
// empty.
func (g *procGroup) startCmd(name string, cmd *exec.Cmd, logPath string) *nodeProc {
	g.t.Helper()
	p, err := g.tryStartCmd(name, cmd, logPath)
	require.NoError(g.t, err)
	return p
}

// tryStartCmd is startCmd returning its error, for goroutines other than
// the test's (which must not call t.FailNow).
func (g *procGroup) tryStartCmd(name string, cmd *exec.Cmd, logPath string) (*nodeProc, error) {
	p := &nodeProc{name: name, cmd: cmd, log: newLineLog(), done: make(chan struct{})}
	var file *os.File
	if logPath != "" {
		var err error
		file, err = os.Create(logPath)
		if err != nil {
			return nil, fmt.Errorf("log file of %s: %w", name, err)
		}
		p.log.file = file
	}
	cmd.Stderr = p.log
	cmd.Stdout = p.log
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		if file != nil {
			_ = file.Close() // the start failure is the error to report
		}
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		if file != nil {
			if err := p.log.closeFile(); err != nil {
				p.err = errors.Join(p.err, fmt.Errorf("log file: %w", err))
			}
		}
		close(p.done)
	}()
	g.mu.Lock()
	g.procs = append(g.procs, p)
	g.mu.Unlock()
	return p, nil
}

// hold lets d pass (or ctx end): used only to observe that something does
// not happen.
func (g *procGroup) hold(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

func (g *procGroup) stopAll() {
	g.mu.Lock()
	procs := append([]*nodeProc(nil), g.procs...)
	g.mu.Unlock()
	for _, p := range procs {
		if !p.exited() {
			// ErrProcessDone: it exited (and was reaped) since exited().
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
				g.t.Errorf("SIGTERM to %s: %v", p.name, err)
			}
		}
	}
	grace := time.After(cmp.Or(g.grace, 20*time.Second))
	for _, p := range procs {
		select {
		case <-p.done:
		case <-grace:
		}
		if !p.exited() {
			g.t.Logf("%s did not leave within the grace period; SIGKILL", p.name)
			// ErrProcessDone: it exited after all, since exited().
			if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
				g.t.Errorf("SIGKILL to %s: %v", p.name, err)
				continue // it may never exit: do not wait for it
			}
			<-p.done
		}
	}
	if g.t.Failed() {
		g.t.Logf("logs of the processes:\n%s", g.tails())
	}
}

// tails returns the last lines of every process's log, for failure messages.
func (g *procGroup) tails() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var b strings.Builder
	for _, p := range g.procs {
		fmt.Fprintf(&b, "--- %s (pid %d) ---\n%s\n", p.name, p.cmd.Process.Pid, p.log.tail(25))
	}
	return b.String()
}

// unfinished is the number of jobs the journal holds that are not done yet
// (-1 when it cannot be read).
func (g *procGroup) unfinished(dbPath string) int {
	st, ok := tryRecoverState(dbPath)
	if !ok {
		return -1
	}
	c := st.Counts()
	return c.Pending + c.InProgress
}

// masterHost tells which backend hosts the master: from the frontend's
// GET /status when its HTTP API answers, else from the logs (the live master
// is the activation with the highest journal epoch: any older one is fenced
// by the journal). It returns the backend and that epoch.
func (g *procGroup) masterHost(t *testing.T, httpPort int, backends ...*nodeProc) (*nodeProc, int) {
	t.Helper()
	best, epoch := (*nodeProc)(nil), 0
	for _, b := range backends {
		if e := maxEpoch(b.log.lines(), time.Time{}); e > epoch {
			best, epoch = b, e
		}
	}
	require.NotNil(t, best, "no backend logged \"master recovered\"\n%s", g.tails())
	if addr, err := statusMaster(httpPort); err == nil && addr != "" {
		for _, b := range backends {
			if strings.HasSuffix(addr, ":"+b.cmd.Args[1]) {
				t.Logf("GET /status: master at %s", addr)
				return b, maxEpoch(b.log.lines(), time.Time{})
			}
		}
	}
	return best, epoch
}

// statusMaster asks a frontend's GET /status where the master runs.
func statusMaster(port int) (addr string, err error) {
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/status", port))
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, resp.Body.Close()) }()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /status: %s", resp.Status)
	}
	var st struct {
		Master struct {
			Reachable bool   `json:"reachable"`
			Address   string `json:"address"`
		} `json:"master"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return "", err
	}
	if !st.Master.Reachable {
		return "", errors.New("GET /status: master not reachable")
	}
	return st.Master.Address, nil
}

var epochRE = regexp.MustCompile(`msg="master recovered".* epoch=(\d+)`)

// maxEpoch is the highest epoch of the "master recovered" lines logged at
// or after since.
func maxEpoch(lines []logLine, since time.Time) int {
	highest := 0
	for _, l := range lines {
		if l.at.Before(since) {
			continue
		}
		if m := epochRE.FindStringSubmatch(l.text); m != nil {
			if e, err := strconv.Atoi(m[1]); err == nil && e > highest {
				highest = e
			}
		}
	}
	return highest
}

// nodeProc is one foreman process and its log.
type nodeProc struct {
	name string
	cmd  *exec.Cmd
	log  *lineLog
	done chan struct{}
	err  error
}

func (p *nodeProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits until the process is gone.
func (p *nodeProc) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL), "killing %s", p.name)
	<-p.done
}

func (p *nodeProc) count(substr string) int { return p.log.count(substr) }

// distinct counts the distinct work ids of the lines containing substr.
func (p *nodeProc) distinct(substr string) int {
	ids := map[string]bool{}
	for _, l := range p.log.lines() {
		if strings.Contains(l.text, substr) {
			if m := workIDRE.FindStringSubmatch(l.text); m != nil {
				ids[m[1]] = true
			}
		}
	}
	return len(ids)
}

var workIDRE = regexp.MustCompile(`work_id=(\S+)`)

// firstAfter is how long after t0 the first line containing substr came
// (-1 if none did).
func (p *nodeProc) firstAfter(substr string, t0 time.Time) time.Duration {
	for _, l := range p.log.lines() {
		if !l.at.Before(t0) && strings.Contains(l.text, substr) {
			return l.at.Sub(t0)
		}
	}
	return -1
}

// waitLine waits until the log has at least n lines containing substr and
// every one of also.
func (p *nodeProc) waitLine(t *testing.T, substr string, n int, within time.Duration, also ...string) {
	t.Helper()
	scanned, c := 0, 0 // lines only grow: count incrementally
	p.waitFor(t, fmt.Sprintf("%d lines %q %q from %s", n, substr, also, p.name), within, func(lines []logLine) bool {
	next:
		for _, l := range lines[scanned:] {
			if !strings.Contains(l.text, substr) {
				continue
			}
			for _, a := range also {
				if !strings.Contains(l.text, a) {
					continue next
				}
			}
			c++
		}
		scanned = len(lines)
		return c >= n
	})
}

// quietFor waits until no line containing substr came for quiet (at most
// within).
func (p *nodeProc) quietFor(t *testing.T, substr string, quiet, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		last := time.Time{}
		for _, l := range p.log.lines() {
			if strings.Contains(l.text, substr) {
				last = l.at
			}
		}
		wait := quiet - time.Since(last)
		if wait <= 0 {
			return
		}
		require.True(t, time.Now().Add(wait).Before(deadline), "%s kept logging %q for %v", p.name, substr, within)
		time.Sleep(wait) // waiting out a quiet period, not synchronising
	}
}

// waitFor waits until cond holds on the log's lines, failing with what was
// awaited and the log's tail.
func (p *nodeProc) waitFor(t *testing.T, what string, within time.Duration, cond func([]logLine) bool) {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		changed := p.log.changed()
		if cond(p.log.lines()) {
			return
		}
		select {
		case <-changed:
		case <-p.done:
			if cond(p.log.lines()) {
				return
			}
			require.Failf(t, "process exited", "waiting for %s: %s exited (%v)\n%s", what, p.name, p.err, p.log.tail(40))
		case <-timer.C:
			require.Failf(t, "timed out", "waiting %v for %s\n%s", within, what, p.log.tail(40))
		}
	}
}

// logLine is one line of a process's output and when it was read.
type logLine struct {
	at   time.Time
	text string
}

// lineLog collects a process's output line by line; readers wait on
// changed() for new lines. With a file, the output is written there too.
type lineLog struct {
	mu      sync.Mutex
	partial []byte
	all     []logLine
	ch      chan struct{}
	file    *os.File
	fileErr error
}

func newLineLog() *lineLog { return &lineLog{ch: make(chan struct{})} }

// Write implements io.Writer for exec.Cmd.
func (l *lineLog) Write(b []byte) (int, error) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil && l.fileErr == nil {
		_, l.fileErr = l.file.Write(b) // kept for closeFile: the lines are still collected
	}
	l.partial = append(l.partial, b...)
	added := false
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.all = append(l.all, logLine{at: now, text: string(l.partial[:i])})
		l.partial = l.partial[i+1:]
		added = true
	}
	if added {
		close(l.ch)
		l.ch = make(chan struct{})
	}
	return len(b), nil
}

// closeFile closes the log file and returns the first error writing or
// closing it.
func (l *lineLog) closeFile() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := errors.Join(l.fileErr, l.file.Close())
	l.file = nil
	return err
}

// changed returns a channel closed at the next new line.
func (l *lineLog) changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ch
}

func (l *lineLog) lines() []logLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all[:len(l.all):len(l.all)]
}

func (l *lineLog) count(substr string) int {
	c := 0
	for _, x := range l.lines() {
		if strings.Contains(x.text, substr) {
			c++
		}
	}
	return c
}

func (l *lineLog) tail(n int) string {
	lines := l.lines()
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var b strings.Builder
	for _, x := range lines {
		b.WriteString(x.text)
		b.WriteByte('\n')
	}
	return b.String()
}
