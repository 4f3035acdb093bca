package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/node"
)

// binary is the foreman binary built once for the process tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "foreman-bin-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "foreman")
	build := exec.Command("go", "build", "-race", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building foreman:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintf(os.Stderr, "removing the test binaries: %v\n", err)
		code = 1
	}
	if code == 0 {
		// FindLeaks waits out protoactor's 1 s dead-letter log timers
		// first: one started by the last in-process test is not a leak (a
		// clean-clone CI run failed on exactly that once).
		if err := testkit.FindLeaks(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines left behind: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func TestBadCommandLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "NotAPort", args: []string{"backend"}, want: "2000-2999"},
		{name: "PortTooLarge", args: []string{"70000"}, want: "3000-3999"},
		{name: "UnknownFlag", args: []string{"--bogus"}, want: "flag provided but not defined: -bogus"},
		{name: "NegativeWorkers", args: []string{"--workers", "-1"}, want: "--workers -1: must be 0 or more"},
		{name: "BadDelay", args: []string{"--delay", "soon"}, want: "not a duration"},
		{name: "NegativeJobs", args: []string{"--jobs", "-5"}, want: "--jobs -5"},
		{name: "ChangeRateOffBackend", args: []string{"3001", "--change-rate"}, want: "--change-rate: only backend nodes (2000-2999) record rate limits"},
		{name: "ResultsPubSubOffFrontend", args: []string{"3001", "--results-pubsub=false"}, want: "--results-pubsub=false: only backend nodes (2000-2999) publish results"},
		{name: "JobsWithoutProducer", args: []string{"--jobs", "5", "--produce=false"}, want: "--jobs 5 submits its jobs through the simulated clients, which --produce=false turns off"},
		{name: "BadLogLevel", args: []string{"--log-level", "loud"}, want: `"loud" is not a level`},
		{name: "BadSeed", args: []string{"2551", "--seeds", "nohost"}, want: `"nohost" is not host:port`},
		{name: "ExtraArgument", args: []string{"2551", "extra"}, want: `unexpected argument "extra"`},
		{name: "BadRate", args: []string{"--rate", "square=fast"}, want: "--rate:"},
		{name: "BadAdaptive", args: []string{"--adaptive", "wild"}, want: `unknown policy: "wild"`},
		{name: "BadWindow", args: []string{"--window", "0"}, want: "--window 0: must be 1 or more"},
		{name: "NegativePrefetch", args: []string{"--prefetch", "-1"}, want: "-prefetch: must be a whole number from 0 to 4096"},
		{name: "BadPrefetch", args: []string{"--prefetch", "lots"}, want: "-prefetch: must be a whole number from 0 to 4096"},
		{name: "NegativeResultHold", args: []string{"--result-hold", "-1ms"}, want: "-result-hold: must be from 0 to 1s"},
		{name: "LongResultHold", args: []string{"--result-hold", "2s"}, want: "-result-hold: must be from 0 to 1s"},
		{name: "BadResultHold", args: []string{"--result-hold", "soon"}, want: "-result-hold: not a duration"},
		{name: "BadMetricsAddr", args: []string{"--metrics", "host:port"}, want: "--metrics: address \"host:port\""},
		{name: "MetricsPortTooLarge", args: []string{"--metrics", "99999"}, want: "not a number in 0..65535"},
		{name: "BadPprofAddr", args: []string{"--pprof", "host:port"}, want: "--pprof: address \"host:port\""},
		{name: "PprofOffLoopback", args: []string{"2551", "--pprof", "0.0.0.0:6060"}, want: "runtime profiles (--pprof) on 0.0.0.0:6060"},
		{name: "BenchExtraArgument", args: []string{"bench", "x"}, want: `unexpected argument "x"`},
		{name: "BenchBadJobs", args: []string{"bench", "--jobs", "0"}, want: "bench needs jobs"},
		{name: "BadFairWeight", args: []string{"--fair-weight", "acme"}, want: "want KEY=N with N at least 1"},
		{name: "QueueWithoutVerb", args: []string{"queue"}, want: "say what to do: list, pause TYPE or resume TYPE"},
		{name: "QueuePauseWithoutType", args: []string{"queue", "pause"}, want: "pause takes one job type"},
		{name: "QueueUnknownVerb", args: []string{"queue", "drain"}, want: `unknown "drain"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			require.Equal(t, 2, code, "stderr: %s", stderr.String())
			require.Contains(t, stderr.String(), tt.want)
		})
	}
}

// TestJobsRunToCompletion is `foreman --jobs N`: the process exits 0 once
// all N results are consumed, saying so on its last line.
func TestJobsRunToCompletion(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "--jobs", "300", "--delay", "0", "--workers", "3", "--data", data, "--log-level", "warn")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Equal(t, "consumed 300 results", lines[len(lines)-1])

	st := recoverState(t, filepath.Join(data, node.JournalFile))
	c := st.Counts()
	require.EqualValues(t, 300, c.AcceptedTotal)
	require.Equal(t, 300, c.Done)
}

// TestUnwritableDataDir: a data directory that cannot be created fails with
// a message naming it, exit 1.
func TestUnwritableDataDir(t *testing.T) {
	t.Parallel()
	// A path below a regular file cannot be created, even by root (who
	// ignores permission bits).
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	var stdout, stderr bytes.Buffer
	code := run([]string{"--jobs", "1", "--data", filepath.Join(file, "data")}, &stdout, &stderr)
	require.Equal(t, 1, code)
	require.Contains(t, stderr.String(), filepath.Join(file, "data"))
}

// TestKillAndRestart kills a node with SIGKILL in the middle of a run and
// restarts it on the same data directory: every job acked before the kill
// completes after the restart (acks are sent only once WorkAccepted is
// durable, so the journal's accepted set contains every acked job).
func TestKillAndRestart(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	dbPath := filepath.Join(data, node.JournalFile)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Run 1: many slow-ish jobs, killed once a good number is accepted and
	// some are still running.
	first := exec.CommandContext(ctx, binary, "--jobs", "100000", "--delay", "20ms", "--workers", "4", "--data", data, "--log-level", "warn")
	var stderr1 syncBuffer
	first.Stderr = &stderr1
	require.NoError(t, first.Start())
	deadline := time.Now().Add(time.Minute)
	var accepted int64
	for time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond) // polling another process's journal: no probe can see it
		if st, ok := tryRecoverState(dbPath); ok {
			c := st.Counts()
			if c.AcceptedTotal >= 500 && c.Done >= 20 {
				accepted = c.AcceptedTotal
				break
			}
		}
	}
	require.NotZero(t, accepted, "the first run accepted too little within a minute; stderr: %s", stderr1.String())
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()

	before := recoverState(t, dbPath)
	cb := before.Counts()
	require.Greater(t, cb.Pending+cb.InProgress, 0, "the kill should leave unfinished work")

	// Run 2: simulated clients only; it must finish every job the first run
	// had accepted.
	second := exec.CommandContext(ctx, binary, "--delay", "0", "--workers", "4", "--data", data, "--log-level", "info")
	var stderr2 syncBuffer
	second.Stderr = &stderr2
	require.NoError(t, second.Start())
	ids := acceptedIDs(before)
	deadline = time.Now().Add(2 * time.Minute)
	var left int
	for time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		st, ok := tryRecoverState(dbPath)
		if !ok {
			continue
		}
		left = 0
		for _, id := range ids {
			if !st.IsDone(id) {
				left++
			}
		}
		if left == 0 {
			break
		}
	}
	require.Zero(t, left, "jobs accepted before the kill are not done; stderr: %s", stderr2.String())

	// Ctrl-C: graceful stop, exit 0.
	require.NoError(t, second.Process.Signal(os.Interrupt))
	require.NoError(t, second.Wait(), "stderr: %s", stderr2.String())
	require.Contains(t, stderr2.String(), "journal closed")
}

// syncBuffer is a bytes.Buffer that a process may write while a test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func acceptedIDs(st *master.WorkState) []string {
	var ids []string
	ids = append(ids, st.PendingIDs()...)
	for _, r := range st.InProgress() {
		ids = append(ids, r.WorkID)
	}
	return ids
}

func recoverState(t *testing.T, path string) *master.WorkState {
	t.Helper()
	st, err := loadState(path)
	require.NoError(t, err)
	return st
}

func tryRecoverState(path string) (*master.WorkState, bool) {
	st, err := loadState(path)
	return st, err == nil
}

// loadState rebuilds the master's state from its journal, as a recovering
// master does (snapshot, then the events after it).
func loadState(path string) (_ *master.WorkState, err error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	j, err := journal.OpenSQLite(path)
	if err != nil {
		return nil, err
	}
	return loadStateFrom(j)
}

// loadStateFrom replays the master's stream of j (and closes j).
func loadStateFrom(j persistence.Journal) (_ *master.WorkState, err error) {
	defer func() { err = errors.Join(err, j.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := master.NewWorkState()
	from := int64(1)
	snap, ok, err := j.LoadSnapshot(ctx, master.DefaultStream)
	if err != nil {
		return nil, err
	}
	if ok {
		if st, err = master.RestoreSnapshot(snap.Msg); err != nil {
			return nil, err
		}
		from = snap.Seq + 1
	}
	err = j.Load(ctx, master.DefaultStream, from, func(ev persistence.Event) error { return st.Apply(ev.Msg) })
	return st, err
}
