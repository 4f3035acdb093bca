package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRateProcesses runs `foreman rate` against real processes on
// loopback: a backend with --rate square=20/s and the API token, a
// frontend (the HTTP API). `rate list` shows the throttler (timer mode, 20/s,
// on the backend); `rate set square=50/s --strict` changes it, which the
// list then shows; without the token the change is refused; after the
// backend is SIGKILLed and started again (same --rate), the list still
// shows 50/s strict: the change is durable.
func TestRateProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real cluster processes; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data := t.TempDir()
	ports := pickWalkPorts(t)
	backend, frontend := ports.backend1, ports.frontend
	seeds := fmt.Sprintf("--seeds=127.0.0.1:%d", backend)
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	const token = "rate-cli-token-0123456789abcdef"
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	g := newProcGroup(t)
	startBackend := func(name string) *nodeProc {
		p := g.start(ctx, name, strconv.Itoa(backend), seeds, "--data", data, "--rate=square=20/s")
		p.waitLine(t, "node started", 1, 60*time.Second)
		return p
	}
	b := startBackend("backend")
	front := g.start(ctx, "frontend", strconv.Itoa(frontend), seeds, "--produce=false", "--api-token-file", tokenFile)
	front.waitLine(t, "node started", 1, 60*time.Second)
	to := "127.0.0.1:" + strconv.Itoa(frontend+5000)

	rate := func(args ...string) (string, string, error) {
		cmd := exec.CommandContext(ctx, binary, append([]string{"rate"}, args...)...)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}
	// listShows waits until `rate list` prints a square row with want
	// (the throttler may still be placed, or moving after a restart).
	listShows := func(want ...string) string {
		var last string
		require.Eventually(t, func() bool {
			out, errOut, err := rate("list", "--to", to, "--token-file", tokenFile)
			last = out + errOut
			if err != nil {
				return false
			}
			for _, line := range strings.Split(out, "\n") {
				if f := strings.Fields(line); len(f) >= len(want) && f[0] == "square" && strings.Join(f[1:len(want)], " ") == strings.Join(want[1:], " ") {
					return true
				}
			}
			return false
		}, remaining(ctx, t), 250*time.Millisecond, "rate list never showed %q; last:\n%s\n%s", want, last, g.tails())
		return last
	}
	out := listShows("square", "20/s", "timer", "127.0.0.1:"+strconv.Itoa(backend))
	require.Contains(t, out, "TYPE  ")

	_, errOut, err := rate("set", "square=50/s", "--strict", "--to", to)
	require.Error(t, err, "without the token")
	require.Contains(t, errOut, "server answered 401")

	out, errOut, err = rate("set", "square=50/s", "--strict", "--to", to, "--token-file", tokenFile)
	require.NoError(t, err, "%s%s", out, errOut)
	require.Equal(t, "rate of square set to 50/s (strict)\n", out)
	listShows("square", "50/s", "strict")

	_, errOut, err = rate("set", "cube=5/s", "--to", to, "--token-file", tokenFile)
	require.Error(t, err, "a job type without a limit")
	require.Contains(t, errOut, "server answered 404")

	// The change survives the throttler's node: SIGKILL the backend and
	// start it again with the same --rate.
	b.kill(t)
	startBackend("backend-again")
	listShows("square", "50/s", "strict")
}
