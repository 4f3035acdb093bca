//go:build linux

package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
)

// exampleBinary builds this program into the test's temporary directory
// (never into the tree).
func exampleBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("real processes: skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "emailcampaign")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build:\n%s", out)
	return bin
}

// alive reports whether process pid exists (and is not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: Z is a zombie.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func senderPIDs(t *testing.T, out string) []int {
	t.Helper()
	var pids []int
	for _, m := range regexp.MustCompile(`sender started: pid (\d+)`).FindAllStringSubmatch(out, -1) {
		pid, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		pids = append(pids, pid)
	}
	return pids
}

func summaryNumber(t *testing.T, out, pattern string) int64 {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(out)
	require.NotNil(t, m, "no %q in the output:\n%s", pattern, out)
	n, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	return n
}

// TestClusterCampaignProcesses runs the campaign across real processes: a
// coordinator and 2 senders (4 workers of window 2 each); one sender is
// SIGKILLed after 1 s and replaced. Every recipient gets the email, the
// duplicates are at most what the killed sender held (4 x 2), the largest
// mailbox stays bounded by the workers, and every sender is gone after the
// coordinator exits.
func TestClusterCampaignProcesses(t *testing.T) {
	bin := exampleBinary(t)
	const recipients, concurrency, window = 3000, 4, 2
	ctx, cancel := context.WithTimeout(context.Background(), 12*testkit.Timeout())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-recipients", strconv.Itoa(recipients), "-senders", "2",
		"-concurrency", strconv.Itoa(concurrency), "-window", strconv.Itoa(window),
		"-smtp-latency", "2ms", "-kill-sender-after", "1s", "-progress", "500ms")
	out, err := cmd.CombinedOutput()
	text := string(out)
	require.NoError(t, err, "coordinator failed:\n%s", text)
	t.Logf("output:\n%s", text)

	require.Equal(t, int64(recipients), summaryNumber(t, text, `distinct (\d+)`), "every recipient got the email")
	dups := summaryNumber(t, text, `duplicates (\d+)`)
	require.LessOrEqual(t, dups, int64(concurrency*window), "only what the killed sender held is sent twice")
	require.Equal(t, int64(3), summaryNumber(t, text, `senders: (\d+) started`))
	require.Equal(t, int64(1), summaryNumber(t, text, `(\d+) killed`))
	mailbox := summaryNumber(t, text, `largest mailbox: (\d+)`)
	require.Positive(t, mailbox)
	require.LessOrEqual(t, mailbox, int64(10*3*concurrency), "mailboxes stay bounded by the workers, not the recipients")

	pids := senderPIDs(t, text)
	require.Len(t, pids, 3)
	for _, pid := range pids {
		require.False(t, alive(pid), "sender %d outlived the coordinator", pid)
	}
}

// TestClusterCampaignSendersDieWithCoordinator SIGKILLs the coordinator
// mid-campaign: its senders die with it (Pdeathsig), none is left running.
func TestClusterCampaignSendersDieWithCoordinator(t *testing.T) {
	bin := exampleBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*testkit.Timeout())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-recipients", "20000", "-senders", "2", "-concurrency", "2",
		"-smtp-latency", "20ms")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var pids []int
	sc := bufio.NewScanner(stdout)
	for len(pids) < 2 && sc.Scan() {
		pids = append(pids, senderPIDs(t, sc.Text())...)
	}
	require.Len(t, pids, 2, "the coordinator started no senders")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait() // killed: its exit status says so
	require.Eventually(t, func() bool {
		for _, pid := range pids {
			if alive(pid) {
				return false
			}
		}
		return true
	}, testkit.Timeout(), 20*time.Millisecond, "senders outlived their coordinator")
}
