package bench_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/cmd/foreman/internal/apitest"
	"github.com/foreman-actors/foreman/cmd/foreman/internal/bench"
)

// startFeedAPI starts a real all-in-one node (master on a memory journal,
// one worker, the square job taking 1-2 ms) behind a real HTTP API on a
// loopback port.
// The master snapshots often and keeps only retention events behind each
// snapshot, so a result-feed reader a few dozen events behind gets 410.
func startFeedAPI(t *testing.T, retention int64) string {
	t.Helper()
	addr, _ := apitest.Start(t, testkit.NewSystem(t), testkit.Timeout(), node.WithSquareDelay(time.Millisecond, 2*time.Millisecond),
		node.WithMasterOptions(master.WithMaxAttempts(1), master.WithSnapshotEvery(8), master.WithFeedRetention(retention)))
	return addr
}

// laggingFeed is the bench's HTTP transport with a slow result reader: it
// holds the first long poll of GET /results (the bench's follower; the read
// to the feed's end before the run has no wait) until release is closed,
// and sends its cursor on held. Everything else, and that read once
// released, goes to the real server unchanged.
type laggingFeed struct {
	next    *http.Transport
	held    chan string // receives the held read's cursor, once
	release chan struct{}
	once    sync.Once
}

func newLaggingFeed() *laggingFeed {
	return &laggingFeed{
		next: http.DefaultTransport.(*http.Transport).Clone(),
		held: make(chan string, 1), release: make(chan struct{}),
	}
}

func (l *laggingFeed) RoundTrip(r *http.Request) (*http.Response, error) {
	if q := r.URL.Query(); r.Method == http.MethodGet && r.URL.Path == httpapi.PathResults && q.Has("wait") {
		l.once.Do(func() { l.held <- q.Get("after") })
		select {
		case <-l.release:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	return l.next.RoundTrip(r)
}

// CloseIdleConnections lets the bench close its connections at the end.
func (l *laggingFeed) CloseIdleConnections() { l.next.CloseIdleConnections() }

// TestRunHTTPFeedGone runs the HTTP bench against a real node whose master
// keeps little of the result feed, with the bench's feed reader held back
// until every job of the run has finished and the reader's cursor is
// answered 410: the bench resumes at the oldest cursor the 410 names,
// settles the jobs it can no longer read from the feed with GET /work/{id},
// and finishes with every job counted once, saying how many were settled.
// Before, the run failed with the 410.
func TestRunHTTPFeedGone(t *testing.T) {
	t.Parallel()
	addr := startFeedAPI(t, 10)
	check, err := httpapi.NewClient(addr)
	require.NoError(t, err)
	t.Cleanup(check.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Timeout())
	defer cancel()
	// Results already in the feed: the bench starts after them, at a
	// cursor the retention can overtake (the feed's start never is).
	for i := range 3 {
		info, err := check.Do(ctx, httpapi.SubmitRequest{ID: "before-" + strconv.Itoa(i), Type: "square", Payload: []byte("3")})
		require.NoError(t, err)
		require.Equal(t, httpapi.StatusDone, info.Status)
	}

	tests := []struct {
		name     string
		payload  string
		wantDone bool
		// whileRunning releases the reader at the first 410, while jobs
		// still run, rather than once every job finished: lookups find
		// some unfinished, whose results come later in the feed.
		whileRunning bool
	}{
		{name: "Done", payload: "7", wantDone: true},
		// square cannot read "x" and the master gives up after one
		// attempt: jobs settled as dead count as not done.
		{name: "Dead", payload: `"x"`},
		{name: "WhileRunning", payload: "7", wantDone: true, whileRunning: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { // one at a time: each needs the feed to itself
			const jobs = 40
			ctx, cancel := context.WithTimeout(t.Context(), 4*testkit.Timeout())
			defer cancel()
			lag := newLaggingFeed()
			c, err := httpapi.NewClient(addr, httpapi.WithHTTPClient(&http.Client{Transport: lag}))
			require.NoError(t, err)
			runID := "gone-" + tt.name
			type outcome struct {
				res bench.HTTPResult
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := bench.RunHTTP(ctx, bench.HTTPConfig{
					Client: c, Mode: bench.HTTPBatch, Batch: 10, Jobs: jobs, Connections: 2, Type: "square",
					Payload: json.RawMessage(tt.payload), Results: true, ResultTimeout: 4 * testkit.Timeout(),
					LightJobs: 2, RunID: runID,
				})
				done <- outcome{res, err}
			}()
			var cursor string
			select {
			case cursor = <-lag.held:
			case o := <-done:
				t.Fatalf("the run ended before following the feed: %v", o.err)
			}
			// Every job of the run finishes while the reader is held...
			for i := range jobs {
				if tt.whileRunning {
					break
				}
				info := waitFinished(ctx, t, check, "hb-"+runID+"-"+strconv.Itoa(i), done)
				require.Equal(t, tt.wantDone, info.Status == httpapi.StatusDone, "job %d: %s", i, info.Status)
			}
			// ...and the master's snapshots delete the events after the
			// reader's cursor: the feed answers it 410.
			require.Eventually(t, func() bool {
				_, _, err := check.ReadResults(ctx, cursor, 0, 1)
				var apiErr *httpapi.APIError
				return errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusGone && apiErr.OldestCursor != ""
			}, testkit.Timeout(), 10*time.Millisecond, "the feed never answered cursor %s 410", cursor)
			close(lag.release)
			o := <-done

			res := o.res
			t.Logf("the bench's output:\n%s", res)
			if tt.wantDone {
				require.NoError(t, o.err)
			} else {
				require.ErrorIs(t, o.err, bench.ErrHTTPBench)
				require.ErrorContains(t, o.err, "40 of 40 jobs ended dead or cancelled")
			}
			require.Equal(t, jobs, res.Jobs)
			require.Positive(t, res.FeedGone, "the reader was answered 410")
			if !tt.whileRunning {
				require.Positive(t, res.Settled, "the jobs behind the retention were settled by their state")
			}
			require.LessOrEqual(t, res.Settled, jobs)
			require.GreaterOrEqual(t, res.Lookups, res.Settled)
			require.Contains(t, res.String(), "durable acks: 40 jobs in ")
			require.Contains(t, res.String(), "settled by GET /work/{id}: "+strconv.Itoa(res.Settled)+" of 40 jobs")
			if tt.wantDone {
				require.Zero(t, res.Failed)
				require.Positive(t, res.JobsPerSecond)
				require.Contains(t, res.String(), "end to end: 40 jobs submitted, durable and run in ")
				require.Contains(t, res.String(), "0 not done")
				require.Positive(t, res.LightResultP50, "the light phase reads its results from the feed again")
			} else {
				require.Equal(t, jobs, res.Failed)
			}
		})
	}
}

// waitFinished polls GET /work/{id} until the work is done, dead or
// cancelled (unknown: not submitted yet); the run ending first fails t.
func waitFinished[T any](ctx context.Context, t *testing.T, c *httpapi.Client, id string, run <-chan T) *httpapi.WorkInfo {
	t.Helper()
	for {
		info, err := c.Work(ctx, id)
		if err == nil && (info.Status == httpapi.StatusDone || info.Status == httpapi.StatusDead || info.Status == httpapi.StatusCancelled) {
			return info
		}
		require.True(t, err == nil || errors.Is(err, httpapi.ErrNotFound), "GET /work/%s: %v", id, err)
		select {
		case <-ctx.Done():
			t.Fatalf("work %s did not finish: %v", id, ctx.Err())
		case o := <-run:
			t.Fatalf("the run ended while its feed reader was held: %+v", o)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
