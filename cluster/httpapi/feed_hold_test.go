package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/httpapi"
)

const otherToken = "zyxwvutsrqponmlkjihgfedcba987654"

// heldCall is the outcome of one request a test leaves open.
type heldCall struct {
	name string
	code int
	err  error
	at   time.Time
}

// holdServer is a server with tokens straight on the stack's ActorBackend,
// behind a handler that reports every request it starts to serve.
func holdServer(t *testing.T, s *stack, tokens *httpapi.Tokens, opts ...httpapi.Option) (base string, entered <-chan string) {
	t.Helper()
	ab, err := httpapi.NewActorBackend(s.node.Client(), nil)
	require.NoError(t, err)
	srv, err := httpapi.New(ab, append([]httpapi.Option{httpapi.WithTokens(tokens), httpapi.WithLogger(s.node.System().Logger())}, opts...)...)
	require.NoError(t, err)
	in := make(chan string, 1024)
	h := srv.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in <- r.Header.Get("X-Test-Name")
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL, in
}

// open sends a request in the background and reports on done when its
// answer was read to the end.
func open(ctx context.Context, hc *http.Client, done chan<- heldCall, name, method, url, token, body string) {
	openStarted(ctx, hc, done, nil, name, method, url, token, body)
}

// openStarted is open that also reports on started (when not nil) once
// the answer's header arrived.
func openStarted(ctx context.Context, hc *http.Client, done chan<- heldCall, started chan<- string, name, method, url, token, body string) {
	go func() {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, url, rd)
		if err != nil {
			done <- heldCall{name: name, err: err, at: time.Now()}
			return
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Test-Name", name)
		resp, err := hc.Do(req)
		if err != nil {
			done <- heldCall{name: name, err: err, at: time.Now()}
			return
		}
		if started != nil {
			started <- name
		}
		_, err = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		done <- heldCall{name: name, code: resp.StatusCode, err: err, at: time.Now()}
	}()
}

// Issue 34 item 9: a token removed from the token file (the reload SIGHUP
// does) ends that token's open result streams, long polls and waits at
// once (401 for those that had not answered yet); another token's stream
// goes on.
func TestRevokedTokenEndsItsHeldRequests(t *testing.T) {
	t.Parallel()
	s := startStack(t, withWorkers(1))
	path := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(path, []byte(goodToken+"\n"+otherToken+"\n"), 0o600))
	tokens, err := httpapi.LoadTokens(path)
	require.NoError(t, err)
	base, entered := holdServer(t, s, tokens)
	c, err := httpapi.NewClient(strings.TrimPrefix(base, "http://"), httpapi.WithToken(otherToken))
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	// One result in the feed: a stream from the start answers at once.
	info, err := c.Do(context.Background(), httpapi.SubmitRequest{ID: "sq", Type: "square", Payload: json.RawMessage("3")})
	require.NoError(t, err)
	require.Equal(t, httpapi.StatusDone, info.Status)
	_, end, err := c.ReadResults(context.Background(), "", 0, 0)
	require.NoError(t, err)

	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(hc.CloseIdleConnections)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan heldCall, 8)
	streams := make(chan string, 2)
	openStarted(ctx, hc, done, streams, "revoked stream", http.MethodGet, base+"/results/stream", goodToken, "")
	open(ctx, hc, done, "revoked long poll", http.MethodGet, base+"/results?wait=1m&after="+end, goodToken, "")
	open(ctx, hc, done, "revoked wait", http.MethodPost, base+"/work?wait=1m", goodToken, `{"id":"w","type":"sleep","payload":"1m"}`)
	openStarted(ctx, hc, done, streams, "kept stream", http.MethodGet, base+"/results/stream", otherToken, "")
	for range 4 {
		select {
		case <-entered:
		case c := <-done:
			t.Fatalf("%s ended before the token was revoked: %d %v", c.name, c.code, c.err)
		case <-time.After(testkit.Timeout()):
			t.Fatal("the requests did not reach the server")
		}
	}
	for range 2 { // both streams answered (their first event)
		select {
		case <-streams:
		case c := <-done:
			t.Fatalf("%s ended before the token was revoked: %d %v", c.name, c.code, c.err)
		case <-time.After(testkit.Timeout()):
			t.Fatal("the streams did not start")
		}
	}
	// The waited job runs: that request is in its wait.
	eventuallyStatus(t, c, "w", httpapi.StatusRunning)

	require.NoError(t, os.WriteFile(path, []byte(otherToken+"\n"), 0o600))
	require.NoError(t, tokens.Reload()) // what SIGHUP does
	revoked := time.Now()
	for range 3 {
		select {
		case c := <-done:
			require.NotEqual(t, "kept stream", c.name, "the stream of a token still valid ended: %d %v", c.code, c.err)
			require.NoError(t, c.err, c.name)
			want := http.StatusUnauthorized
			if c.name == "revoked stream" {
				want = http.StatusOK // it had started: it ends
			}
			require.Equal(t, want, c.code, c.name)
			t.Logf("%s ended %v after the reload", c.name, c.at.Sub(revoked))
		case <-time.After(testkit.Timeout()):
			t.Fatalf("a request of the revoked token is still open %v after the reload", testkit.Timeout())
		}
	}
	select {
	case c := <-done:
		t.Fatalf("%s ended though its token is valid: %d %v", c.name, c.code, c.err)
	default:
	}
}

// A revocation cancels the token's held requests one after another, and
// cancelling its waited job puts that job's outcome in the result feed: a
// long poll of the same token not cancelled yet read it and answered 200
// (a CI run under load; 1 of 20 runs of the test above). Between the new
// token set and the cancels, a held request of the dropped token answers
// 401 all the same, and shows it nothing.
func TestRevokedTokensLongPollAnswers401BeforeItsCancel(t *testing.T) {
	t.Parallel()
	s := startStack(t, withWorkers(1))
	path := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(path, []byte(goodToken+"\n"+otherToken+"\n"), 0o600))
	tokens, err := httpapi.LoadTokens(path)
	require.NoError(t, err)
	// One feed read per token: a second read turned away (429) says the
	// long poll passed the token check and holds its read.
	base, _ := holdServer(t, s, tokens, httpapi.WithFeedReadsPerClient(1))
	c, err := httpapi.NewClient(strings.TrimPrefix(base, "http://"), httpapi.WithToken(otherToken))
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	// A job done first: the master is up and the feed has a cursor.
	info, err := c.Do(context.Background(), httpapi.SubmitRequest{ID: "first", Type: "square", Payload: json.RawMessage("2")})
	require.NoError(t, err)
	require.Equal(t, httpapi.StatusDone, info.Status)
	_, end, err := c.ReadResults(context.Background(), "", 0, 0)
	require.NoError(t, err)

	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(hc.CloseIdleConnections)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan heldCall, 1)
	open(ctx, hc, done, "revoked long poll", http.MethodGet, base+"/results?wait=1m&after="+end, goodToken, "")
	held := func() bool {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/results?after="+end, nil)
		if err != nil {
			return false
		}
		req.Header.Set("Authorization", "Bearer "+goodToken)
		resp, err := hc.Do(req)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusTooManyRequests
	}
	for deadline := time.Now().Add(testkit.Timeout()); !held(); time.Sleep(5 * time.Millisecond) {
		select {
		case got := <-done:
			// A probe that held the share then turned the long poll away:
			// open it again.
			require.Equal(t, http.StatusTooManyRequests, got.code, "the long poll ended before the token was dropped: %v", got.err)
			open(ctx, hc, done, "revoked long poll", http.MethodGet, base+"/results?wait=1m&after="+end, goodToken, "")
		default:
		}
		require.True(t, time.Now().Before(deadline), "the long poll never held its feed read")
	}

	tokens.SwapWithoutRevoking(otherToken) // goodToken dropped, its cancel not run yet
	info, err = c.Do(context.Background(), httpapi.SubmitRequest{ID: "sq", Type: "square", Payload: json.RawMessage("3")})
	require.NoError(t, err)
	require.Equal(t, httpapi.StatusDone, info.Status) // a result in the feed: the long poll answers
	select {
	case got := <-done:
		require.NoError(t, got.err)
		require.Equal(t, http.StatusUnauthorized, got.code, "a long poll of a dropped token answered")
	case <-time.After(testkit.Timeout()):
		t.Fatal("the long poll did not answer the result")
	}
	require.NoError(t, tokens.Reload())
}

// Issue 34 item 4: one client (token) cannot hold more than its share of
// the master's result-feed reads: beyond it, 429 with Retry-After, while
// another token is still served; and the share frees as its reads end.
func TestFeedReadsPerClientAreBounded(t *testing.T) {
	t.Parallel()
	s := startStack(t, withWorkers(0))
	tokens, err := httpapi.NewTokens(goodToken, otherToken)
	require.NoError(t, err)
	base, _ := holdServer(t, s, tokens)

	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(hc.CloseIdleConnections)
	ctx, leave := context.WithCancel(context.Background())
	t.Cleanup(leave)
	const reads = 100
	done := make(chan heldCall, reads)
	for i := range reads {
		open(ctx, hc, done, strconv.Itoa(i), http.MethodGet, base+"/results?wait=1m", goodToken, "")
	}
	// Those beyond the share are turned away at once; the others are held.
	get := func(token, path string) (int, http.Header) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		return resp.StatusCode, resp.Header
	}
	select {
	case c := <-done:
		require.NoError(t, c.err)
		require.Equal(t, http.StatusTooManyRequests, c.code, "a read ended otherwise than turned away")
	case <-time.After(4 * testkit.Timeout()):
		t.Fatalf("%d held reads of one token, none turned away", reads)
	}
	code, h := get(goodToken, "/results")
	require.Equal(t, http.StatusTooManyRequests, code, "the token is at its share")
	n, err := strconv.Atoi(h.Get("Retry-After"))
	require.NoError(t, err, "429 without a Retry-After in seconds")
	require.Positive(t, n)
	code, _ = get(goodToken, "/results/stream")
	require.Equal(t, http.StatusTooManyRequests, code, "the stream counts in the share")
	code, _ = get(otherToken, "/results")
	require.Equal(t, http.StatusOK, code, "another token is served")

	// Once its held reads end, the token is served again.
	leave()
	require.Eventually(t, func() bool {
		code, _ := get(goodToken, "/results")
		return code == http.StatusOK
	}, testkit.Timeout(), 10*time.Millisecond)
}

// Issue 34 item 4: long polls whose clients went away free the master's
// reader slots at once: the request's context ends the master's held read.
// (One client may take them all here: its share is raised past them.)
func TestAbandonedLongPollsFreeTheMastersSlots(t *testing.T) {
	t.Parallel()
	s := startStack(t, withWorkers(0))
	tokens, err := httpapi.NewTokens(goodToken)
	require.NoError(t, err)
	base, _ := holdServer(t, s, tokens, httpapi.WithFeedReadsPerClient(1000))
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(hc.CloseIdleConnections)
	get := func(ctx context.Context, path string) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+goodToken)
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Body.Close()
	}

	// More long polls than the master has slots (256): the last ones find
	// them all taken (503).
	ctx, leave := context.WithCancel(context.Background())
	t.Cleanup(leave)
	const polls = 280
	done := make(chan heldCall, polls)
	for i := range polls {
		open(ctx, hc, done, strconv.Itoa(i), http.MethodGet, base+"/results?wait=5m", goodToken, "")
	}
	select {
	case c := <-done:
		require.NoError(t, c.err)
		require.Equal(t, http.StatusServiceUnavailable, c.code, "a long poll ended otherwise than turned away")
	case <-time.After(4 * testkit.Timeout()): // 280 connections on a loaded machine
		t.Fatalf("%d long polls held, none turned away: the master has more slots than the test expects", polls)
	}
	// Every client leaves; the master serves reads again.
	leave()
	require.Eventually(t, func() bool {
		code, err := get(context.Background(), "/results")
		return err == nil && code == http.StatusOK
	}, 4*testkit.Timeout(), 20*time.Millisecond, "the long polls of clients that left still hold the master's slots")
}
