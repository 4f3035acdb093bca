package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// metricsAddr is the --metrics address a process logged ("metrics
// listening addr=URL"), as host:port on loopback.
func metricsAddr(t *testing.T, p *nodeProc) (scheme, addr string) {
	t.Helper()
	for _, l := range p.log.lines() {
		if !strings.Contains(l.text, "metrics listening") {
			continue
		}
		for _, f := range strings.Fields(l.text) {
			if u, ok := strings.CutPrefix(f, "addr="); ok {
				scheme, rest, _ := strings.Cut(strings.Trim(u, `"`), "://")
				hostport, _, _ := strings.Cut(rest, "/")
				_, port, err := net.SplitHostPort(hostport)
				require.NoError(t, err, "%s", l.text)
				return scheme, net.JoinHostPort("127.0.0.1", port)
			}
		}
	}
	t.Fatalf("%s logged no metrics address", p.name)
	return "", ""
}

// TestMetricsBindIsSecured: --metrics on an address beyond loopback follows
// the HTTP API's rule. Without TLS and without --insecure the node refuses
// to start (exit 2, naming --insecure); with --insecure it starts with the
// one WARN naming the metrics listener; with the node's TLS and tokens the
// metrics are served over HTTPS and a scrape needs the bearer token, as a
// Prometheus scrape config with tls_config.ca_file and authorization
// credentials_file does it.
func TestMetricsBindIsSecured(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// 1. Plain, beyond loopback, no --insecure: refused.
	rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
	out, err := runForeman(rctx, t, "--metrics", "0.0.0.0:0", "--data", t.TempDir(), "--produce=false", "--workers", "0")
	rcancel()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "the node started with plain metrics on 0.0.0.0:\n%s", out)
	require.Equal(t, 2, ee.ExitCode(), out)
	require.Contains(t, out, "metrics (--metrics) on 0.0.0.0:0 without TLS")
	require.Contains(t, out, "--insecure")

	g := newProcGroup(t)
	// 2. With --insecure: one WARN, and it names the metrics listener.
	ins := g.start(ctx, "insecure", "--metrics", "0.0.0.0:0", "--data", t.TempDir(), "--produce=false", "--workers", "0", "--insecure")
	ins.waitLine(t, "metrics listening", 1, 30*time.Second)
	require.Equal(t, 1, ins.count(`level=WARN msg="--insecure`), "\n%s", ins.log.tail(20))
	require.Equal(t, 1, ins.count("metrics (--metrics) on 0.0.0.0:0 without TLS"))

	// 3. TLS and tokens: HTTPS, and the token is needed.
	pki := t.TempDir()
	for _, args := range [][]string{
		{"certs", "ca", "--dir", pki},
		{"certs", "node", "--dir", pki, "--name", "node", "--hosts", "127.0.0.1"},
		{"certs", "token", "--append", filepath.Join(pki, "tokens")},
	} {
		out, err := runForeman(ctx, t, args...)
		require.NoError(t, err, "foreman %v: %s", args, out)
	}
	tokenBytes, err := os.ReadFile(filepath.Join(pki, "tokens"))
	require.NoError(t, err)
	token := strings.TrimSpace(string(tokenBytes))
	sec := g.start(ctx, "secure", append([]string{"--metrics", "0.0.0.0:0", "--data", t.TempDir(), "--produce=false", "--workers", "1",
		"--api-token-file", filepath.Join(pki, "tokens")}, tlsArgs(pki, "node")...)...)
	sec.waitLine(t, "metrics listening", 1, 30*time.Second, "tls=true", "tokens=true")
	require.Zero(t, sec.count("level=WARN msg=\"--insecure"))
	scheme, addr := metricsAddr(t, sec)
	require.Equal(t, "https", scheme)

	trust := rogueTrust(t, pki) // the cluster CA
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: trust}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	scrape := func(url, auth string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, body := scrape("https://"+addr+"/metrics", "Bearer "+token)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "foreman_cluster_members{role=\"all\"} 1")
	code, body = scrape("https://"+addr+"/metrics", "")
	require.Equal(t, http.StatusUnauthorized, code, body)
	require.Contains(t, body, "Authorization: Bearer")
	code, _ = scrape("https://"+addr+"/metrics", "Bearer not-the-token-not-the-token")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = scrape("http://"+addr+"/metrics", "Bearer "+token)
	require.Equal(t, http.StatusBadRequest, code, "plain HTTP to the HTTPS metrics listener")
	require.Zero(t, sec.count(token), "the token was logged")
}
