package metrics_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/health"
	"github.com/foreman-actors/foreman/cluster/metrics"
	"github.com/foreman-actors/foreman/cluster/tlsconf"
	"github.com/foreman-actors/foreman/cluster/tlsconf/tlsconftest"
)

// TestServeTLSAndBearer: with WithTLS and WithBearer the metrics listener
// answers a scrape over HTTPS with the token, 401 without it or with
// another, and refuses plain HTTP.
func TestServeTLSAndBearer(t *testing.T) {
	t.Parallel()
	pki := tlsconftest.NewPKI(t, "cluster")
	node := pki.Material(t, "node", "127.0.0.1")
	cfg, err := tlsconf.APIServerConfig(node, nil)
	require.NoError(t, err)
	const token = "a-metrics-scrape-token-0001"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, err := metrics.Serve(ctx, "127.0.0.1:0", metrics.New(), metrics.WithTLS(cfg), metrics.WithBearer(func(tok string) bool { return tok == token }))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Shutdown(context.Background())) })
	require.True(t, srv.TLS())
	require.True(t, srv.Tokens())

	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: node.Pool(), MinVersion: tls.VersionTLS12}}}
	t.Cleanup(hc.CloseIdleConnections)
	scrape := func(url, auth string) (int, http.Header, string) {
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
		return resp.StatusCode, resp.Header, string(body)
	}
	url := "https://" + srv.Addr() + "/metrics"
	code, _, body := scrape(url, "Bearer "+token)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "go_goroutines")
	code, h, body := scrape(url, "")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, `Bearer realm="foreman"`, h.Get("WWW-Authenticate"))
	require.Contains(t, body, "Authorization: Bearer TOKEN")
	code, h, _ = scrape(url, "Bearer not-the-token-at-all-0001")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Contains(t, h.Get("WWW-Authenticate"), "invalid_token")
	code, _, _ = scrape("http://"+srv.Addr()+"/metrics", "Bearer "+token)
	require.Equal(t, http.StatusBadRequest, code, "plain HTTP to the HTTPS listener")
}

// TestServeHealthWithoutToken: WithHealth serves /livez and /readyz on the
// metrics listener without a token while /metrics still wants one.
func TestServeHealthWithoutToken(t *testing.T) {
	t.Parallel()
	ready := false
	var mu sync.Mutex
	hc, err := health.New(health.WithReady(health.Check{Name: "journal", Run: func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if !ready {
			return errors.New("not yet")
		}
		return nil
	}}))
	require.NoError(t, err)
	srv, err := metrics.Serve(t.Context(), "127.0.0.1:0", metrics.New(), metrics.WithBearer(func(string) bool { return false }), metrics.WithHealth(hc))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Shutdown(context.Background())) })
	get := func(path string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+srv.Addr()+path, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, _ := get("/metrics")
	require.Equal(t, http.StatusUnauthorized, code)
	code, body := get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "[-]journal failed")
	code, body = get("/livez")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok", body)
	mu.Lock()
	ready = true
	mu.Unlock()
	code, body = get("/readyz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok", body)
}
