package httpapi_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// TestSubmitConn: a SubmitConn answers as Client.Submit does (ids, errors,
// 503 retried with the same id) while keeping one connection, and dials
// again when the server closed it.
func TestSubmitConn(t *testing.T) {
	t.Parallel()
	s := startStack(t, withServer(httpapi.WithSubmitTimeout(200*time.Millisecond)))
	var conns atomic.Int64
	ts := httptest.NewUnstartedServer(s.srv.Handler())
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 4*testkit.Timeout())
	defer cancel()
	newConn := func(t *testing.T, opts ...httpapi.ClientOption) *httpapi.SubmitConn {
		t.Helper()
		c, err := httpapi.NewClient(ts.URL, opts...)
		require.NoError(t, err)
		sc, err := c.NewSubmitConn()
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, sc.Close()) })
		return sc
	}

	t.Run("KeepsOneConnection", func(t *testing.T) {
		sc := newConn(t)
		before := conns.Load()
		for _, id := range []string{"sc-1", "sc-2", "sc-3"} {
			got, err := sc.Submit(ctx, httpapi.SubmitRequest{ID: id, Type: "square", Payload: json.RawMessage("5")})
			require.NoError(t, err)
			require.Equal(t, id, got)
			require.JSONEq(t, "25", string(s.waitResult(t, id).GetResult()))
		}
		require.Equal(t, before+1, conns.Load(), "three jobs, one connection")
	})
	t.Run("NamesTheWork", func(t *testing.T) {
		sc := newConn(t, httpapi.WithClientIDGenerator(func() string { return "sc-gen" }))
		got, err := sc.Submit(ctx, httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage("2")})
		require.NoError(t, err)
		require.Equal(t, "sc-gen", got)
	})
	t.Run("InvalidIsAnAPIError", func(t *testing.T) {
		sc := newConn(t)
		_, err := sc.Submit(ctx, httpapi.SubmitRequest{ID: "x"})
		require.ErrorIs(t, err, httpapi.ErrInvalid)
		require.ErrorContains(t, err, `missing "type"`)
		got, err := sc.Submit(ctx, httpapi.SubmitRequest{ID: "sc-after-400", Type: "square"})
		require.NoError(t, err, "the connection serves on after an error answer")
		require.Equal(t, "sc-after-400", got)
	})
	t.Run("DialsAgainAfterTheServerClosedIt", func(t *testing.T) {
		sc := newConn(t)
		_, err := sc.Submit(ctx, httpapi.SubmitRequest{ID: "sc-a", Type: "square"})
		require.NoError(t, err)
		ts.CloseClientConnections()
		got, err := sc.Submit(ctx, httpapi.SubmitRequest{ID: "sc-b", Type: "square"})
		require.NoError(t, err)
		require.Equal(t, "sc-b", got)
	})
	t.Run("UnreachableSaysWhere", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		c, err := httpapi.NewClient(addr)
		require.NoError(t, err)
		sc, err := c.NewSubmitConn()
		require.NoError(t, err)
		_, err = sc.Submit(ctx, httpapi.SubmitRequest{Type: "square"})
		require.ErrorContains(t, err, "cannot reach http://"+addr)
	})
	t.Run("RefusesAForeignHTTPClient", func(t *testing.T) {
		c, err := httpapi.NewClient(ts.URL, httpapi.WithHTTPClient(ts.Client()))
		require.NoError(t, err)
		_, err = c.NewSubmitConn()
		require.ErrorIs(t, err, httpapi.ErrInvalidOption)
	})
}

// TestSubmitConnRetriesUnavailable: a 503 (the master did not acknowledge
// in time) is sent again with the same id; the job runs once.
func TestSubmitConnRetriesUnavailable(t *testing.T) {
	t.Parallel()
	s := startStack(t, withServer(httpapi.WithSubmitTimeout(200*time.Millisecond)))
	c := s.client(t)
	sc, err := c.NewSubmitConn()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sc.Close()) })
	s.journal.stall()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*testkit.Timeout())
		defer cancel()
		_, err := sc.Submit(ctx, httpapi.SubmitRequest{ID: "sc-503", Type: "square", Payload: json.RawMessage("3")})
		done <- err
	}()
	select { // the first attempt timed out: the server answered 503
	case <-s.backend.submits:
	case <-time.After(4 * testkit.Timeout()):
		t.Fatal("the server never finished the first submission")
	}
	s.journal.release()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(4 * testkit.Timeout()):
		t.Fatal("the submitter never got its acknowledgement")
	}
	require.JSONEq(t, "9", string(s.waitResult(t, "sc-503").GetResult()))
	info, err := c.Work(t.Context(), "sc-503")
	require.NoError(t, err)
	require.Equal(t, int32(1), info.Attempts, "sent again with the same id, run once")
}

// TestSubmitConnGivesUp: ctx ending while the server holds the request
// ends Submit with ctx's error.
func TestSubmitConnGivesUp(t *testing.T) {
	t.Parallel()
	s := startStack(t, withServer(httpapi.WithSubmitTimeout(2*time.Second)))
	sc, err := s.client(t).NewSubmitConn()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sc.Close()) })
	s.journal.stall()
	t.Cleanup(s.journal.release)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err = sc.Submit(ctx, httpapi.SubmitRequest{Type: "square"})
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestSubmitConnAnswers: a SubmitConn reads every shape of answer as the
// Client does: plain ones, chunked ones, Retry-After, Connection: close.
func TestSubmitConnAnswers(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("too long; ", 500) // over net/http's 2 KiB: sent chunked
	var unavailable atomic.Int64
	var conns atomic.Int64
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req httpapi.SubmitRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch req.ID {
		case "chunked":
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": long})
			return
		case "busy":
			if unavailable.Add(1) == 1 {
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"error":"the master did not acknowledge in time"}`))
				return
			}
		case "close":
			w.Header().Set("Connection", "close")
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(httpapi.SubmitResponse{ID: req.ID})
	}))
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	c, err := httpapi.NewClient(ts.URL)
	require.NoError(t, err)
	sc, err := c.NewSubmitConn()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sc.Close()) })
	ctx, cancel := context.WithTimeout(t.Context(), 4*testkit.Timeout())
	defer cancel()

	id, err := sc.Submit(ctx, httpapi.SubmitRequest{ID: "plain", Type: "t"})
	require.NoError(t, err)
	require.Equal(t, "plain", id)

	_, err = sc.Submit(ctx, httpapi.SubmitRequest{ID: "chunked", Type: "t"})
	var apiErr *httpapi.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	require.Equal(t, long, apiErr.Message)

	id, err = sc.Submit(ctx, httpapi.SubmitRequest{ID: "busy", Type: "t"})
	require.NoError(t, err, "a 503 is sent again after its Retry-After")
	require.Equal(t, "busy", id)
	require.Equal(t, int64(2), unavailable.Load())
	require.Equal(t, int64(1), conns.Load(), "one connection so far")

	id, err = sc.Submit(ctx, httpapi.SubmitRequest{ID: "close", Type: "t"})
	require.NoError(t, err)
	require.Equal(t, "close", id)
	id, err = sc.Submit(ctx, httpapi.SubmitRequest{ID: "after-close", Type: "t"})
	require.NoError(t, err)
	require.Equal(t, "after-close", id)
	require.Equal(t, int64(2), conns.Load(), "a new connection after Connection: close")
}
