package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// runBenchCmd runs `foreman bench ARGS` and returns its exit code and output.
func runBenchCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Timeout())
	defer cancel()
	var out, errOut bytes.Buffer
	code := runBench(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestBenchOverHTTP drives a real node's HTTP API (master, one worker,
// the square job) with `foreman bench --to`, in both modes, after results
// of other jobs are already in the feed: the run must count only its own.
func TestBenchOverHTTP(t *testing.T) {
	t.Parallel()
	addr, _ := startAPI(t)
	c, err := httpapi.NewClient(addr)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Timeout())
	defer cancel()
	for i := range 3 {
		info, err := c.Do(ctx, httpapi.SubmitRequest{ID: "before-" + strconv.Itoa(i), Type: "square", Payload: []byte("3")})
		require.NoError(t, err)
		require.Equal(t, httpapi.StatusDone, info.Status)
	}

	tests := []struct {
		name     string
		args     []string
		requests int
	}{
		// The node runs in this process: --cpu-of measures it by PID.
		{name: "Single", args: []string{"--jobs", "60", "--connections", "8", "--light", "3", "--cpu-of", "node=" + strconv.Itoa(os.Getpid())}, requests: 60},
		// 250 jobs in batches of 100: two full requests and one of 50.
		{name: "Batch", args: []string{"--mode", "batch", "--batch", "100", "--jobs", "250", "--connections", "2", "--light", "0"}, requests: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runBenchCmd(t, append([]string{"--to", addr}, tt.args...)...)
			require.Equal(t, 0, code, errOut)
			jobs := tt.args[slices.Index(tt.args, "--jobs")+1]
			require.Contains(t, out, "durable acks: "+jobs+" jobs in ")
			require.Contains(t, out, "("+strconv.Itoa(tt.requests)+" requests")
			require.Contains(t, out, "end to end: "+jobs+" jobs submitted, durable and run in ")
			require.Contains(t, out, "0 not done")
			require.Regexp(t, regexp.MustCompile(`= [1-9][0-9]* jobs/s \(results read`), out)
			// The load generator's CPU per job is always there; a node's when asked.
			require.Regexp(t, regexp.MustCompile(`CPU per job \(µs, over `+jobs+` jobs\): load-generator [0-9.]+ \([^)]+\);`), out)
			if slices.Contains(tt.args, "--cpu-of") {
				require.Regexp(t, regexp.MustCompile(` node [0-9.]+ \([^)]+\);`), out)
			}
			if slices.Index(tt.args, "3") >= 0 {
				require.Contains(t, out, "light load (one job in flight)")
			} else {
				require.NotContains(t, out, "light load")
			}
		})
	}

	t.Run("Grouped", func(t *testing.T) {
		code, out, errOut := runBenchCmd(t, "--to", addr, "--mode", "grouped", "--jobs", "200", "--connections", "16", "--light", "0")
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "durable acks: 200 jobs in ")
		require.Contains(t, out, "(16 submitters sharing one SubmitGroup, POST /work/batch)")
		require.Contains(t, out, "end to end: 200 jobs submitted, durable and run in ")
		require.Contains(t, out, "0 not done")
	})

	t.Run("AcksOnly", func(t *testing.T) {
		code, out, errOut := runBenchCmd(t, "--to", addr, "--jobs", "20", "--results=false")
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "end to end: not measured")
		require.NotContains(t, out, "light load")
	})

	t.Run("JobsNotDone", func(t *testing.T) {
		// The node's master gives up after one attempt; a payload square
		// cannot read fails every job: the run says so and exits 1.
		code, _, errOut := runBenchCmd(t, "--to", addr, "--jobs", "4", "--payload", `"x"`, "--light", "0", "--result-timeout", "30s")
		require.Equal(t, 1, code)
		require.Contains(t, errOut, "4 of 4 jobs ended dead or cancelled")
	})

	t.Run("Unreachable", func(t *testing.T) {
		code, _, errOut := runBenchCmd(t, "--to", freeAddr(t), "--jobs", "1", "--result-timeout", time.Second.String())
		require.Equal(t, 1, code)
		require.Contains(t, errOut, "cannot reach")
	})
}

func TestBenchFlagsRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "OneProcessFlagWithTo", args: []string{"--to", "127.0.0.1:1", "--workers", "2"}, wantErr: "--workers sizes the node of the one-process mode"},
		{name: "HTTPFlagWithoutTo", args: []string{"--mode", "batch"}, wantErr: "--mode drives a running cluster"},
		{name: "BadMode", args: []string{"--to", "127.0.0.1:1", "--mode", "bulk"}, wantErr: `mode "bulk" is not "single", "batch" or "grouped"`},
		{name: "BatchTooLarge", args: []string{"--to", "127.0.0.1:1", "--mode", "batch", "--batch", "10001"}, wantErr: "batch must be 1..10000"},
		{name: "PayloadNotJSON", args: []string{"--to", "127.0.0.1:1", "--payload", "seven"}, wantErr: `payload "seven" is not JSON`},
		{name: "LightWithoutResults", args: []string{"--to", "127.0.0.1:1", "--results=false", "--light", "5"}, wantErr: "the light phase measures results"},
		{name: "BadAddress", args: []string{"--to", "ftp://x"}, wantErr: "--to:"},
		{name: "CPUOfNotPIDOrURL", args: []string{"--to", "127.0.0.1:1", "--cpu-of", "backend=localhost:9100"}, wantErr: "is neither a PID nor an http:// URL"},
		{name: "CPUOfNoName", args: []string{"--cpu-of", "4242"}, wantErr: "is not NAME=PID or NAME=URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runBenchCmd(t, tt.args...)
			require.Equal(t, 2, code)
			require.Empty(t, out, "nothing is announced for a refused command line")
			require.Contains(t, errOut, tt.wantErr)
		})
	}
}
