package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProfileServer(t *testing.T) {
	ctx := context.Background()
	stop, addr, err := startProfileServer(ctx, nodeArgs{pprof: "0"}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer stop()
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, addr, "a bare port binds loopback")

	get := func(path string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, body := get("/debug/pprof/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "goroutine")
	code, body = get("/debug/pprof/goroutine?debug=1")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "TestProfileServer", "the goroutine profile shows this test's stack")
	code, _ = get("/metrics")
	require.Equal(t, http.StatusNotFound, code, "the profile listener serves profiles only")

	off, none, err := startProfileServer(ctx, nodeArgs{}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	off()
	require.Empty(t, none, "no --pprof, no listener")
}
