package health_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/health"
)

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
	require.NoError(t, err)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestProbes serves a checker whose journal check fails while down is
// set: /readyz answers 200 "ok", then 503 naming the failing check (its
// reason withheld), then 200 again; ?verbose lists every check; ?exclude
// leaves one out; /livez is unaffected.
func TestProbes(t *testing.T) {
	var down atomic.Bool
	c, err := health.New(
		health.WithLive(health.Check{Name: "actors", Run: func(context.Context) error { return nil }}),
		health.WithReady(
			health.Check{Name: "joined", Run: func(context.Context) error { return nil }},
			health.Check{Name: "journal", Run: func(context.Context) error {
				if down.Load() {
					return errors.New("dial tcp 10.0.0.1:5432: connection refused")
				}
				return nil
			}}),
	)
	require.NoError(t, err)
	mux := http.NewServeMux()
	c.Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	code, body := get(t, srv, "/readyz")
	require.Equal(t, 200, code)
	require.Equal(t, "ok", body)
	code, body = get(t, srv, "/readyz?verbose")
	require.Equal(t, 200, code)
	require.Equal(t, "[+]ping ok\n[+]joined ok\n[+]journal ok\nreadyz check passed\n", body)

	down.Store(true)
	code, body = get(t, srv, "/readyz")
	require.Equal(t, 503, code)
	require.Equal(t, "[+]ping ok\n[+]joined ok\n[-]journal failed: reason withheld\nreadyz check failed\n", body)
	require.NotContains(t, body, "10.0.0.1", "reasons are not served")
	require.Equal(t, []string{"journal"}, c.Ready(t.Context()).Failed())
	require.ErrorContains(t, c.Ready(t.Context()).Err(), "journal: dial tcp")

	code, body = get(t, srv, "/readyz?exclude=journal")
	require.Equal(t, 200, code, body)
	code, body = get(t, srv, "/livez")
	require.Equal(t, 200, code)
	require.Equal(t, "ok", body)

	down.Store(false)
	code, _ = get(t, srv, "/readyz")
	require.Equal(t, 200, code)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/livez", nil)
	require.NoError(t, err)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, 405, resp.StatusCode)
}

// TestCheckTimeout: a check that never returns fails after the timeout
// instead of holding the probe.
func TestCheckTimeout(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	c, err := health.New(health.WithTimeout(50*time.Millisecond),
		health.WithLive(health.Check{Name: "stuck", Run: func(context.Context) error { <-block; return nil }}))
	require.NoError(t, err)
	start := time.Now()
	rep := c.Live(t.Context())
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, []string{"stuck"}, rep.Failed())
	require.ErrorIs(t, rep.Err(), context.DeadlineExceeded)
}

// TestNewRefusesBadChecks: duplicate or malformed names are refused.
func TestNewRefusesBadChecks(t *testing.T) {
	ok := func(context.Context) error { return nil }
	_, err := health.New(health.WithReady(health.Check{Name: "a", Run: ok}, health.Check{Name: "a", Run: ok}))
	require.ErrorContains(t, err, `two checks are named "a"`)
	_, err = health.New(health.WithReady(health.Check{Name: "ping", Run: ok}))
	require.Error(t, err)
	_, err = health.New(health.WithReady(health.Check{Name: "a b", Run: ok}))
	require.Error(t, err)
	_, err = health.New(health.WithReady(health.Check{Name: "x"}))
	require.Error(t, err)
}
