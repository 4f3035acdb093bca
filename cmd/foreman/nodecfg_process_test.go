package main

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBackendsDisagreeOnConfig is issue 34 item 10: two backends started
// at the same moment on one fresh journal, one with --shards 1 and no
// --rate, the other with --shards 4 and --rate square=10/s. The first to
// record its configuration in the journal runs; the other refuses to start
// (exit 1), naming what the journal records and what it was given, for
// the number of shards and for the rates alike. A backend that then agrees
// on the shards but not on the rates refuses too, until it is started with
// --change-rate, which records its rates for every later start.
func TestBackendsDisagreeOnConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data := t.TempDir()
	ports := pickWalkPorts(t)
	seeds := fmt.Sprintf("--seeds=127.0.0.1:%d,127.0.0.1:%d", ports.backend1, ports.backend2)
	type backendCfg struct {
		port   int
		shards string
		rate   string // "" for none
	}
	cfgs := []backendCfg{
		{port: ports.backend1, shards: "1"},
		{port: ports.backend2, shards: "4", rate: "square=10/s"},
	}
	args := func(c backendCfg, extra ...string) []string {
		a := []string{strconv.Itoa(c.port), seeds, "--shards", c.shards, "--data", data}
		if c.rate != "" {
			a = append(a, "--rate", c.rate)
		}
		return append(a, extra...)
	}
	g := newProcGroup(t)
	procs := make([]*nodeProc, len(cfgs))
	for i, c := range cfgs {
		procs[i] = g.start(ctx, fmt.Sprintf("backend-%d", c.port), args(c)...)
	}
	// Each either starts or exits.
	for _, p := range procs {
		p.waitFor(t, p.name+" to start or exit", 90*time.Second, func(lines []logLine) bool {
			return p.exited() || p.count("node started") > 0
		})
	}
	var winner, loser int
	switch {
	case procs[0].exited() && !procs[1].exited():
		winner, loser = 1, 0
	case procs[1].exited() && !procs[0].exited():
		winner, loser = 0, 1
	default:
		t.Fatalf("want exactly one backend to refuse its configuration; exited: %v, %v\n%s\n%s",
			procs[0].exited(), procs[1].exited(), procs[0].log.tail(10), procs[1].log.tail(10))
	}
	w, l := cfgs[winner], cfgs[loser]
	t.Logf("backend %d (--shards %s, --rate %q) recorded its configuration first", w.port, w.shards, w.rate)
	lost := procs[loser]
	require.Error(t, lost.err, "the refusing backend must exit non-zero")
	out := strings.Join(linesText(lost.log.lines()), "\n")
	t.Logf("%s refused:\n%s", lost.name, lost.log.tail(2))
	for _, want := range []string{
		fmt.Sprintf("started with %s shard(s) (--shards %s) but the journal records %s", l.shards, l.shards, w.shards),
		fmt.Sprintf("start every node with --shards %s", w.shards),
		"this backend was given " + rateText(l.rate) + " but the journal records " + rateText(w.rate),
		"--change-rate",
	} {
		require.Contains(t, out, want)
	}

	// Same shards, other rates: refused, naming the rates.
	other := backendCfg{port: l.port, shards: w.shards, rate: "square=99/m:strict"}
	code, stderr := runIn(t, args(other)...)
	require.Equal(t, 1, code, "stderr: %s", stderr)
	require.Contains(t, stderr, "this backend was given "+rateText(other.rate)+" but the journal records "+rateText(w.rate))
	require.NotContains(t, stderr, "shard")

	// --change-rate records them: the backend starts, and a later backend
	// with the first rates is the one refused.
	changed := g.start(ctx, "backend-change-rate", args(other, "--change-rate")...)
	changed.waitLine(t, "node started", 1, 90*time.Second)
	require.Equal(t, 1, changed.count("rate limits changed"), "\n%s", changed.log.tail(20))
	require.NoError(t, procs[winner].cmd.Process.Signal(syscall.SIGTERM))
	<-procs[winner].done
	code, stderr = runIn(t, args(w)...)
	require.Equal(t, 1, code, "stderr: %s", stderr)
	require.Contains(t, stderr, "this backend was given "+rateText(w.rate)+" but the journal records "+rateText(other.rate))
}

// rateText is how the refusal names a --rate value.
func rateText(spec string) string {
	if spec == "" {
		return "no --rate (no limits)"
	}
	return "--rate " + strconv.Quote(spec)
}

// runIn runs foreman in this process (for a start that must fail before
// it joins a cluster) and returns its exit code and stderr.
func runIn(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stderr.String()
}

func linesText(lines []logLine) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.text
	}
	return out
}
