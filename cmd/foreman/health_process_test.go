package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// probe GETs url and returns the status code and body (0 and the error
// text when the request fails).
func probe(ctx context.Context, url string) (int, string) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitProbe waits until url answers code with a body containing want.
func waitProbe(ctx context.Context, t *testing.T, g *procGroup, url string, code int, want string, within time.Duration) {
	t.Helper()
	var (
		last     int
		lastBody string
	)
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		last, lastBody = probe(ctx, url)
		if last == code && strings.Contains(lastBody, want) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: want %d with %q within %v, last %d %q\n%s", url, code, want, within, last, lastBody, g.tails())
}

// TestHealthProbesProcess runs a frontend and a worker node before any
// backend, each with --metrics: both are live but not ready, and their
// /readyz?verbose names the failing check (masters, registered). A backend
// on a PostgreSQL journal joins: all three turn ready, on the metrics
// listeners and on the frontend's HTTP API. PostgreSQL stops: the backend
// turns not ready naming its journal while it stays live; PostgreSQL
// starts again: the backend is ready again.
func TestHealthProbesProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and real processes; skipped with -short")
	}
	pg := startTestPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	ports := pickWalkPorts(t)
	seeds := "--seeds=127.0.0.1:" + strconv.Itoa(ports.backend1)
	mb, mf, mw := freePort(t), freePort(t), freePort(t)
	url := func(port int, path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", port, path) }
	api := ports.frontend + 5000
	g := newProcGroup(t)

	front := g.startCmd("frontend", exec.CommandContext(ctx, binary, strconv.Itoa(ports.frontend), seeds, "--shards", "2",
		"--produce=false", "--metrics", strconv.Itoa(mf)), "")
	g.startCmd("worker", exec.CommandContext(ctx, binary, "0", seeds, "--shards", "2", "--workers", "2",
		"--metrics", strconv.Itoa(mw)), "")
	front.waitLine(t, "HTTP API listening", 1, 60*time.Second)

	// No backend yet: live, not ready, the failing check named.
	for _, u := range []string{url(mf, "/livez"), url(mw, "/livez"), url(api, "/livez")} {
		waitProbe(ctx, t, g, u, http.StatusOK, "ok", 30*time.Second)
	}
	waitProbe(ctx, t, g, url(mf, "/readyz"), http.StatusServiceUnavailable, "[-]masters failed", 30*time.Second)
	waitProbe(ctx, t, g, url(api, "/readyz?verbose"), http.StatusServiceUnavailable, "[-]masters failed", 30*time.Second)
	waitProbe(ctx, t, g, url(mw, "/readyz"), http.StatusServiceUnavailable, "[-]registered failed", 30*time.Second)

	// The backend joins: everyone turns ready.
	b := g.startCmd("backend", exec.CommandContext(ctx, binary, strconv.Itoa(ports.backend1), seeds, "--shards", "2",
		"--journal", pg.dsn, "--data", t.TempDir(), "--metrics", strconv.Itoa(mb)), "")
	b.waitLine(t, "node started", 1, 60*time.Second)
	start := time.Now()
	waitProbe(ctx, t, g, url(mb, "/readyz?verbose"), http.StatusOK, "[+]joined ok\n[+]journal ok\nreadyz check passed", 60*time.Second)
	waitProbe(ctx, t, g, url(mf, "/readyz"), http.StatusOK, "ok", 60*time.Second)
	waitProbe(ctx, t, g, url(api, "/readyz"), http.StatusOK, "ok", 60*time.Second)
	waitProbe(ctx, t, g, url(mw, "/readyz?verbose"), http.StatusOK, "[+]registered ok", 60*time.Second)
	t.Logf("all three ready %v after the backend started", time.Since(start).Round(time.Millisecond))
	code, body := probe(ctx, url(api, "/healthz"))
	require.Equal(t, http.StatusOK, code, body)

	// PostgreSQL goes away: the backend is not ready, names its journal,
	// and stays live (a restart would not bring the database back).
	pg.ctl(t, "-m", "immediate", "stop")
	stopped := time.Now()
	waitProbe(ctx, t, g, url(mb, "/readyz"), http.StatusServiceUnavailable, "[-]journal failed: reason withheld", 30*time.Second)
	t.Logf("backend not ready %v after PostgreSQL stopped", time.Since(stopped).Round(time.Millisecond))
	code, body = probe(ctx, url(mb, "/readyz"))
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "[+]joined ok")
	code, body = probe(ctx, url(mb, "/livez"))
	require.Equal(t, http.StatusOK, code, body)
	b.waitLine(t, "health check failed", 1, 10*time.Second, "check=journal")

	pg.start(t)
	waitProbe(ctx, t, g, url(mb, "/readyz"), http.StatusOK, "ok", 30*time.Second)
}
