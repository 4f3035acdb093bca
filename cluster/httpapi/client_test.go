package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/httpapi"
)

func TestClient(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	c := s.client(t, httpapi.WithClientIDGenerator(func() string { return "cli-1" }))
	ctx, cancel := context.WithTimeout(t.Context(), 4*testkit.Timeout())
	defer cancel()

	t.Run("SubmitNamesTheWork", func(t *testing.T) {
		id, err := c.Submit(ctx, httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage("12")})
		require.NoError(t, err)
		require.Equal(t, "cli-1", id)
		info, err := c.Wait(ctx, id, 10*time.Millisecond)
		require.NoError(t, err)
		require.Equal(t, httpapi.StatusDone, info.Status)
		require.JSONEq(t, "144", string(info.Result))
	})
	t.Run("UnknownWork", func(t *testing.T) {
		_, err := c.Work(ctx, "nobody")
		require.ErrorIs(t, err, httpapi.ErrNotFound)
		var apiErr *httpapi.APIError
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, http.StatusNotFound, apiErr.StatusCode)
		require.Contains(t, apiErr.Message, `work "nobody" is unknown`)
		_, err = c.Wait(ctx, "nobody", 0)
		require.ErrorIs(t, err, httpapi.ErrNotFound, "Wait stops on 404")
	})
	t.Run("InvalidSubmit", func(t *testing.T) {
		_, err := c.Submit(ctx, httpapi.SubmitRequest{ID: "x"})
		require.ErrorIs(t, err, httpapi.ErrInvalid)
		require.ErrorContains(t, err, `missing "type"`)
	})
	t.Run("StatusAndHealthz", func(t *testing.T) {
		require.NoError(t, c.Healthz(ctx))
		info, err := c.Status(ctx)
		require.NoError(t, err)
		require.True(t, info.Master.Reachable)
		require.Len(t, info.Members, 1)
	})
}

func TestClientRetriesUnavailable(t *testing.T) {
	t.Parallel()
	s := startStack(t, withServer(httpapi.WithSubmitTimeout(200*time.Millisecond)))
	c := s.client(t)
	s.journal.stall()
	type result struct {
		id  string
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*testkit.Timeout())
		defer cancel()
		id, err := c.Submit(ctx, httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage("3")})
		done <- result{id, err}
	}()
	select { // the first attempt timed out: the server answered 503
	case <-s.backend.submits:
	case <-time.After(4 * testkit.Timeout()):
		t.Fatal("the server never finished the first submission")
	}
	s.journal.release()
	var r result
	select {
	case r = <-done:
	case <-time.After(4 * testkit.Timeout()):
		t.Fatal("the client never got its acknowledgement")
	}
	require.NoError(t, r.err)
	require.Len(t, r.id, 32)
	require.JSONEq(t, "9", string(s.waitResult(t, r.id).GetResult()))
	info, err := c.Work(t.Context(), r.id)
	require.NoError(t, err)
	require.Equal(t, int32(1), info.Attempts, "retried with the same id, run once")
}

func TestClientGivesUp(t *testing.T) {
	t.Parallel()
	s := startStack(t, withServer(httpapi.WithSubmitTimeout(100*time.Millisecond)))
	c := s.client(t)
	s.journal.stall()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := c.Submit(ctx, httpapi.SubmitRequest{Type: "square"})
	require.ErrorIs(t, err, httpapi.ErrUnavailable)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestClientUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nobody listens there now
	c, err := httpapi.NewClient(addr)
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	_, err = c.Status(t.Context())
	require.ErrorContains(t, err, "cannot reach http://"+addr)
	var apiErr *httpapi.APIError
	require.False(t, errors.As(err, &apiErr))
}

func TestNewClientAddress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		addr string
		want string // "" = error
	}{
		{name: "HostPort", addr: "127.0.0.1:8001", want: "http://127.0.0.1:8001"},
		{name: "Spaces", addr: " localhost:8001 ", want: "http://localhost:8001"},
		{name: "URL", addr: "http://127.0.0.1:8001/", want: "http://127.0.0.1:8001"},
		{name: "HTTPSWithPrefix", addr: "https://example.org/foreman", want: "https://example.org/foreman"},
		{name: "Empty", addr: ""},
		{name: "OtherScheme", addr: "ftp://127.0.0.1:21"},
		{name: "NoHost", addr: "http://"},
		{name: "Query", addr: "http://h:1/?x=1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := httpapi.NewClient(tc.addr)
			if tc.want == "" {
				require.ErrorIs(t, err, httpapi.ErrInvalidOption)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, c.Base())
		})
	}
}

func TestAPIErrorIs(t *testing.T) {
	t.Parallel()
	all := []error{httpapi.ErrInvalid, httpapi.ErrNotFound, httpapi.ErrTooLarge, httpapi.ErrUnavailable, httpapi.ErrServer}
	tests := []struct {
		name string
		code int
		want error // nil: matches none
	}{
		{name: "BadRequest", code: 400, want: httpapi.ErrInvalid},
		{name: "NotFound", code: 404, want: httpapi.ErrNotFound},
		{name: "TooLarge", code: 413, want: httpapi.ErrTooLarge},
		{name: "Unavailable", code: 503, want: httpapi.ErrUnavailable},
		{name: "Internal", code: 500, want: httpapi.ErrServer},
		{name: "BadGateway", code: 502, want: httpapi.ErrServer},
		{name: "MethodNotAllowed", code: 405},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := error(&httpapi.APIError{StatusCode: tc.code, Message: "m"})
			for _, s := range all {
				require.Equal(t, s == tc.want, errors.Is(err, s), //nolint:errorlint // s == tc.want compares two sentinels for identity; err is matched with errors.Is
					"errors.Is(%d, %v)", tc.code, s)
			}
		})
	}
}
