package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// waitServer is a server straight on the stack's ActorBackend (the stack's
// counting wrapper hides its CallBackend and FeedBackend).
func waitServer(t *testing.T, s *stack) (base string, c *httpapi.Client) {
	t.Helper()
	ab, err := httpapi.NewActorBackend(s.node.Client(), nil)
	require.NoError(t, err)
	srv, err := httpapi.New(ab, httpapi.WithAddr("127.0.0.1:0"), httpapi.WithLogger(s.node.System().Logger()))
	require.NoError(t, err)
	require.NoError(t, srv.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx))
	})
	c, err = httpapi.NewClient(srv.Addr())
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	return "http://" + srv.Addr(), c
}

func eventuallyStatus(t *testing.T, c *httpapi.Client, id, want string) {
	t.Helper()
	require.Eventually(t, func() bool {
		info, err := c.Work(context.Background(), id)
		return err == nil && info.Status == want
	}, 4*testkit.Timeout(), 10*time.Millisecond, "work %s never became %s", id, want)
}

func TestSubmitWait(t *testing.T) {
	t.Parallel()
	s := startStack(t, withWorkers(2))
	base, c := waitServer(t, s)
	ctx := context.Background()

	t.Run("AnswersTheOutcome", func(t *testing.T) {
		info, done, err := c.SubmitWait(ctx, httpapi.SubmitRequest{ID: "sq", Type: "square", Payload: json.RawMessage("7")}, 10*time.Second)
		require.NoError(t, err)
		require.True(t, done)
		require.Equal(t, httpapi.StatusDone, info.Status)
		require.JSONEq(t, "49", string(info.Result))
		// A second wait on the finished id answers at once.
		info, done, err = c.SubmitWait(ctx, httpapi.SubmitRequest{ID: "sq", Type: "square", Payload: json.RawMessage("7")}, 10*time.Second)
		require.NoError(t, err)
		require.True(t, done)
		require.JSONEq(t, "49", string(info.Result))
	})

	t.Run("AcceptedWhenTheWaitEndsFirstAndTheJobGoesOn", func(t *testing.T) {
		info, done, err := c.SubmitWait(ctx, httpapi.SubmitRequest{ID: "slow", Type: "sleep", Payload: json.RawMessage(`"300ms"`)}, 50*time.Millisecond)
		require.NoError(t, err)
		require.False(t, done)
		require.Equal(t, "slow", info.ID)
		eventuallyStatus(t, c, "slow", httpapi.StatusDone)
	})

	t.Run("ClientLeavingCancelsTheRunningJob", func(t *testing.T) {
		rctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			_, _, err := c.SubmitWait(rctx, httpapi.SubmitRequest{ID: "long", Type: "sleep", Payload: json.RawMessage(`"60s"`)}, time.Minute)
			errc <- err
		}()
		eventuallyStatus(t, c, "long", httpapi.StatusRunning)
		cancel()
		require.ErrorIs(t, <-errc, context.Canceled)
		eventuallyStatus(t, c, "long", httpapi.StatusCancelled)
		info, err := c.Work(ctx, "long")
		require.NoError(t, err)
		require.Equal(t, int32(1), info.Attempts, "a cancelled job is not retried")
	})

	t.Run("DoReturnsTheOutcome", func(t *testing.T) {
		info, err := c.Do(ctx, httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage("3")})
		require.NoError(t, err)
		require.JSONEq(t, "9", string(info.Result))
		_, err = c.Do(ctx, httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage(`"x"`)})
		require.ErrorContains(t, err, "is dead")
	})

	t.Run("BadWaitIs400", func(t *testing.T) {
		for _, q := range []string{"wait=abc", "wait=-1s", "wait=1h"} {
			resp, err := http.Post(base+"/work?"+q, "application/json", strings.NewReader(`{"type":"square","payload":1}`))
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, q)
		}
	})

	t.Run("ResultFeed", func(t *testing.T) {
		lines, next, err := c.ReadResults(ctx, "", 0, 0)
		require.NoError(t, err)
		byID := map[string]httpapi.ResultLine{}
		for _, l := range lines {
			byID[l.ID] = l
		}
		require.Equal(t, httpapi.StatusDone, byID["sq"].Status)
		require.JSONEq(t, "49", string(byID["sq"].Result))
		require.Equal(t, "square", byID["sq"].Type)
		require.Equal(t, httpapi.StatusCancelled, byID["long"].Status)
		require.Equal(t, lines[len(lines)-1].Cursor, next)

		// Paging with limit=1 reads the same lines in the same order.
		var paged []string
		cur := ""
		for range len(lines) {
			ls, n, err := c.ReadResults(ctx, cur, 0, 1)
			require.NoError(t, err)
			require.Len(t, ls, 1)
			paged = append(paged, ls[0].ID)
			cur = n
		}
		var all []string
		for _, l := range lines {
			all = append(all, l.ID)
		}
		require.Equal(t, all, paged)

		// The iterator long-polls for what comes next.
		ictx, cancel := context.WithTimeout(ctx, 4*testkit.Timeout())
		defer cancel()
		go func() {
			_, _ = c.Do(ctx, httpapi.SubmitRequest{ID: "next", Type: "square", Payload: json.RawMessage("5")})
		}()
		for l, err := range c.Results(ictx, next) {
			require.NoError(t, err)
			require.Equal(t, "next", l.ID)
			break
		}

		// Server-Sent Events resume from Last-Event-ID.
		req, err := http.NewRequestWithContext(ictx, http.MethodGet, base+httpapi.PathResultsStream, nil)
		require.NoError(t, err)
		req.Header.Set("Last-Event-ID", lines[0].Cursor)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		sc := bufio.NewScanner(resp.Body)
		var id, data string
		for sc.Scan() && data == "" {
			switch line := sc.Text(); {
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			}
		}
		var got httpapi.ResultLine
		require.NoError(t, json.Unmarshal([]byte(data), &got))
		require.Equal(t, lines[1].ID, got.ID)
		require.Equal(t, lines[1].Cursor, id)

		for _, bad := range []string{"after=zz", "after=s0:99999999", "limit=0"} {
			resp, err := http.Get(base + "/results?" + bad)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, bad)
		}
	})
}

// goneBackend answers every feed read with a cursor past the retention.
type goneBackend struct{ nopBackend }

func (goneBackend) ReadFeed(_ context.Context, cur frontend.Cursor, _ int, _ time.Duration) (*frontend.FeedPage, error) {
	return nil, &frontend.FeedGoneError{Cursor: cur, Oldest: frontend.Cursor{}.With(0, 500)}
}

func TestResultsGone(t *testing.T) {
	t.Parallel()
	srv, err := httpapi.New(goneBackend{}, httpapi.WithAddr("127.0.0.1:0"))
	require.NoError(t, err)
	require.NoError(t, srv.Start(context.Background()))
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	c, err := httpapi.NewClient(srv.Addr())
	require.NoError(t, err)
	_, _, err = c.ReadResults(context.Background(), "s0:3", 0, 0)
	var apiErr *httpapi.APIError
	require.True(t, errors.As(err, &apiErr), "got %v", err)
	require.Equal(t, http.StatusGone, apiErr.StatusCode)
	require.Equal(t, "s0:500", apiErr.OldestCursor)
}
