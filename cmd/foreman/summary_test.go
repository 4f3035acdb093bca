package main

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMainJobOutput is `foreman --jobs 1000` at the default log level: a
// user sees a short log, the progress line and the summary (jobs, rate,
// latency percentiles, where the journal is), not one line per result
// (issue 40 item 5: it printed 1,000 "Consumed result" lines before).
func TestMainJobOutput(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "--jobs", "1000", "--delay", "0", "--data", data)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())

	out := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Len(t, out, 4, "stdout: %s", stdout.String())
	require.Regexp(t, `^jobs      1000 in \S+ \([\d,]+ jobs/s\)$`, out[0])
	require.Regexp(t, `^latency   submit -> result: p50 \S+, p90 \S+, p99 \S+, max \S+$`, out[1])
	require.Equal(t, "journal   sqlite:"+data+"/journal.db", out[2])
	require.Equal(t, "consumed 1000 results", out[3])

	errLines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	require.Less(t, len(out)+len(errLines), 30, "far more lines than a user reads: %s", stderr.String())
	require.NotContains(t, stderr.String(), "Consumed result", "per-result lines belong at debug")
	require.Regexp(t, regexp.MustCompile(`(?m)^results 1,000/1,000 \(100\.0%\) .* done in `), stderr.String(), "the progress line")
}

// TestMainJobResultsAtDebug: the per-result lines are still there for who
// asks for them.
func TestMainJobResultsAtDebug(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "--jobs", "20", "--delay", "0", "--data", t.TempDir(), "--log-level", "debug")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
	require.Equal(t, 20, strings.Count(stderr.String(), `level=DEBUG msg="Consumed result"`))
}

func TestQuantile(t *testing.T) {
	t.Parallel()
	ms := func(n ...int) []time.Duration {
		var d []time.Duration
		for _, v := range n {
			d = append(d, time.Duration(v)*time.Millisecond)
		}
		return d
	}
	lat := ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	require.Equal(t, 5*time.Millisecond, quantile(lat, 0.5))
	require.Equal(t, 9*time.Millisecond, quantile(lat, 0.9))
	require.Equal(t, 10*time.Millisecond, quantile(lat, 0.99))
	require.Equal(t, 10*time.Millisecond, quantile(lat, 1))
	require.Equal(t, time.Duration(0), quantile(nil, 0.5))
	require.Equal(t, time.Millisecond, quantile(ms(1), 0.01))
	require.Equal(t, "0", thousands(0))
	require.Equal(t, "999", thousands(999))
	require.Equal(t, "1,000", thousands(1000))
	require.Equal(t, "12,345,678", thousands(12345678))
}
