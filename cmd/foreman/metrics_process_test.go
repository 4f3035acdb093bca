package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// freePort returns a port that was free a moment ago on 127.0.0.1.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// scrapeSum fetches url and sums the samples whose line matches re (the
// value is the last field); found says whether any did.
func scrapeSum(t *testing.T, url string, re *regexp.Regexp) (sum float64, found bool) {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a loopback scrape in a test
	if err != nil {
		return 0, false
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		return 0, false
	}
	for _, m := range re.FindAllStringSubmatch(string(body), -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		sum += v
		found = true
	}
	return sum, found
}

// TestMetricsOnEveryNode runs a backend, a frontend and a worker as
// processes, each with --metrics, and scrapes all three (and the frontend's
// HTTP API) while jobs run: the values move.
func TestMetricsOnEveryNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real cluster processes; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	ports := pickWalkPorts(t)
	seeds := fmt.Sprintf("--seeds=127.0.0.1:%d", ports.backend1)
	mb, mf, mw := freePort(t), freePort(t), freePort(t)
	g := newProcGroup(t)
	b := g.start(ctx, "backend", strconv.Itoa(ports.backend1), seeds, "--data", t.TempDir(), "--metrics", strconv.Itoa(mb))
	b.waitLine(t, "node started", 1, 60*time.Second)
	front := g.start(ctx, "frontend", strconv.Itoa(ports.frontend), seeds, "--jobs", "400", "--metrics", strconv.Itoa(mf))
	g.start(ctx, "worker", "0", seeds, "--workers", "2", "--delay", "20ms", "--metrics", fmt.Sprintf("127.0.0.1:%d", mw))
	front.waitLine(t, "Consumed result", 20, 60*time.Second)

	url := func(port int) string { return fmt.Sprintf("http://127.0.0.1:%d/metrics", port) }
	line := func(sample string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^` + sample + ` (\S+)$`)
	}
	completed := line(`foreman_jobs_completed_total\{job_type="[^"]+"\}`)
	first, ok := scrapeSum(t, url(mb), completed)
	require.True(t, ok, "the backend reports completed jobs\n%s", g.tails())
	require.Positive(t, first)
	require.Eventually(t, func() bool {
		now, _ := scrapeSum(t, url(mb), completed)
		return now >= first+20
	}, 60*time.Second, 200*time.Millisecond, "completed jobs move on the backend\n%s", g.tails())

	checks := []struct {
		node, url, sample string
	}{
		{"backend", url(mb), `foreman_master_epoch`},
		{"backend", url(mb), `foreman_journal_commit_batch_events_count`},
		{"backend", url(mb), `foreman_jobs_accepted_total\{job_type="[^"]+"\}`},
		{"backend", url(mb), `foreman_cluster_members\{role="backend"\}`},
		{"backend", url(mb), `foreman_cluster_members\{role="worker"\}`},
		{"frontend", url(mf), `foreman_results_consumed_total\{job_type="[^"]+"\}`},
		{"frontend API", fmt.Sprintf("http://127.0.0.1:%d/metrics", ports.frontend+5000), `foreman_results_consumed_total\{job_type="[^"]+"\}`},
		{"worker", url(mw), `foreman_cluster_members\{role="backend"\}`},
	}
	for _, c := range checks {
		v, found := scrapeSum(t, c.url, line(c.sample))
		require.True(t, found, "%s: no %s at %s", c.node, c.sample, c.url)
		require.Positive(t, v, "%s: %s", c.node, c.sample)
	}
	_, found := scrapeSum(t, url(mw), line(`foreman_actor_mailbox_messages\{actor="worker"\}`))
	require.True(t, found, "the worker's mailboxes are counted")
}
