package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/foreman-actors/foreman/actors/tracing"
)

// The Client's side of POST /work?wait= and the result feed.

// SubmitWait posts req with ?wait=wait and waits for the answer: the
// outcome and done true (200: done, dead or cancelled) when the work
// finished within wait, or its id and status with done false (202: the job
// goes on). ctx is the caller's interest: when it ends before the answer,
// the request is abandoned, and the server cancels the job (not started, or
// its ctx cancelled). 503 answers are retried with the same id as Submit
// does. wait is capped at MaxWait.
func (c *Client) SubmitWait(ctx context.Context, req SubmitRequest, wait time.Duration) (info *WorkInfo, done bool, err error) {
	if req.ID == "" {
		req.ID = c.newID()
	}
	if err := checkSubmitText(req); err != nil {
		return nil, false, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	wait = min(max(wait, 0), MaxWait)
	path := PathWork + "?wait=" + url.QueryEscape(wait.String())
	for {
		info, done, err := c.postWait(ctx, path, body)
		var apiErr *APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusServiceUnavailable {
			return info, done, err
		}
		t := time.NewTimer(max(apiErr.RetryAfter, 100*time.Millisecond))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, false, fmt.Errorf("%w (gave up retrying: %w)", err, ctx.Err())
		}
	}
}

func (c *Client) postWait(ctx context.Context, path string, body []byte) (*WorkInfo, bool, error) {
	resp, data, err := c.send(ctx, http.MethodPost, path, body, "application/json")
	if err != nil {
		return nil, false, err
	}
	switch resp.code {
	case http.StatusOK:
		var info WorkInfo
		if err := json.Unmarshal(data, &info); err != nil {
			return nil, false, fmt.Errorf("%w: the answer to POST %s is not the expected JSON: %w", ErrServer, path, err)
		}
		return &info, true, nil
	case http.StatusAccepted, http.StatusCreated:
		var p WaitPending
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, false, fmt.Errorf("%w: the answer to POST %s is not the expected JSON: %w", ErrServer, path, err)
		}
		if p.Status == "" {
			p.Status = StatusAccepted
		}
		return &WorkInfo{ID: p.ID, Status: p.Status, Result: json.RawMessage("null")}, false, nil
	default:
		return nil, false, apiError(resp.code, resp.header, data)
	}
}

// Do submits req and returns its outcome: the seed's doTheWork over HTTP.
// It waits with POST /work?wait= as long as ctx allows (MaxWait at a time;
// after a 202 it polls GET /work/{id}, and from then on ctx ending no
// longer cancels the job). ctx ending while the request is held cancels the
// job. A dead or cancelled work is returned with an error saying so.
func (c *Client) Do(ctx context.Context, req SubmitRequest) (*WorkInfo, error) {
	wait := MaxWait
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl))
	}
	info, done, err := c.SubmitWait(ctx, req, wait)
	if err != nil {
		return nil, err
	}
	if !done {
		if info, err = c.Wait(ctx, info.ID, 0); err != nil {
			return info, err
		}
	}
	switch info.Status {
	case StatusDead:
		return info, fmt.Errorf("httpapi: work %q is dead: %s", info.ID, info.LastError)
	case StatusCancelled:
		return info, fmt.Errorf("httpapi: work %q was cancelled: %s", info.ID, info.LastError)
	}
	return info, nil
}

// ReadResults reads the result feed after cursor (GET /results): up to
// limit lines (0: the server's default), holding the request up to wait for
// the first one. It returns the lines and the cursor to resume from. A
// cursor past the retention is an *APIError with StatusCode 410 whose
// OldestCursor is the oldest cursor still readable: resume from it (the
// results before it are gone from the feed; GET /work/{id} may still know
// them).
func (c *Client) ReadResults(ctx context.Context, cursor string, wait time.Duration, limit int) ([]ResultLine, string, error) {
	q := url.Values{}
	if cursor != "" {
		q.Set("after", cursor)
	}
	if wait > 0 {
		q.Set("wait", min(wait, MaxWait).String())
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := PathResults + "?" + q.Encode()
	resp, data, err := c.send(ctx, http.MethodGet, path, nil, "application/x-ndjson")
	if err != nil {
		return nil, cursor, err
	}
	if resp.code != http.StatusOK {
		e := apiError(resp.code, resp.header, data)
		if resp.code == http.StatusGone {
			var g FeedGone
			if json.Unmarshal(data, &g) == nil {
				e.OldestCursor = g.OldestCursor
			}
		}
		return nil, cursor, e
	}
	var lines []ResultLine
	// The answer is in memory: its lines are cut from it (a Scanner's
	// buffer was a 64 KiB allocation per read, most of a follower's).
	for text := range bytes.Lines(data) {
		text = bytes.TrimSuffix(bytes.TrimSuffix(text, []byte("\n")), []byte("\r"))
		if len(text) == 0 {
			continue
		}
		l, err := decodeResultLine(text)
		if err != nil {
			return nil, cursor, fmt.Errorf("%w: a line of GET %s is not the expected JSON: %w", ErrServer, PathResults, err)
		}
		lines = append(lines, l)
	}
	next := resp.header.Get(HeaderNextCursor)
	if next == "" && len(lines) > 0 {
		next = lines[len(lines)-1].Cursor
	}
	if next == "" {
		next = cursor
	}
	return lines, next, nil
}

// Results iterates over the result feed from cursor ("" or "0": the oldest
// retained), long-polling for more, until ctx ends or a read fails: the
// failure is yielded once and the iteration ends. Persist each line's
// Cursor once handled to resume there after a restart. 503 answers (a
// master failover) and 429 (this client has its share of feed reads open
// elsewhere) are waited out, for their Retry-After.
func (c *Client) Results(ctx context.Context, cursor string) iter.Seq2[ResultLine, error] {
	return func(yield func(ResultLine, error) bool) {
		for ctx.Err() == nil {
			lines, next, err := c.ReadResults(ctx, cursor, 30*time.Second, 0)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				var apiErr *APIError
				if errors.As(err, &apiErr) && (apiErr.StatusCode == http.StatusServiceUnavailable || apiErr.StatusCode == http.StatusTooManyRequests) {
					t := time.NewTimer(max(apiErr.RetryAfter, 100*time.Millisecond))
					select {
					case <-t.C:
						continue
					case <-ctx.Done():
						t.Stop()
						return
					}
				}
				yield(ResultLine{}, err)
				return
			}
			for _, l := range lines {
				if !yield(l, nil) {
					return
				}
			}
			cursor = next
		}
	}
}

// sent is the status and header of an answer whose body was read and
// closed.
type sent struct {
	code   int
	header http.Header
}

// send makes one request and reads the whole answer (at most
// maxAnswerBytes).
func (c *Client) send(ctx context.Context, method, path string, body []byte, accept string) (sent, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return sent{}, nil, fmt.Errorf("httpapi: %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	if parent := tracing.Parent(ctx); parent != "" { // the caller's trace goes on at the server
		req.Header.Set(traceParentHeader, parent)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return sent{}, nil, fmt.Errorf("httpapi: %s %s at %s: %w", method, path, c.base, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return sent{}, nil, fmt.Errorf("httpapi: reading the answer to %s %s: %w", method, path, err)
	}
	return sent{code: resp.StatusCode, header: resp.Header}, data, nil
}
