package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/route"
)

// The durable result feed over HTTP: every completed, dead or cancelled work
// in journal order, read from a cursor the client keeps.
//
//	GET /results?after=CURSOR&wait=10s&limit=1000   long poll, JSON lines
//	GET /results/stream                             Server-Sent Events
//	GET /results/stream?progress=true               and running jobs' progress
//
// Each line (event) carries its cursor; resume after the last one handled.
// No after (or after=0) starts at the oldest result retained; a cursor past
// the retention answers 410 with the oldest cursor still available.

// Paths and limits of the result feed.
const (
	// PathResults serves the feed as JSON lines (GET).
	PathResults = "/results"
	// PathResultsStream serves the feed as Server-Sent Events (GET).
	PathResultsStream = "/results/stream"
	// HeaderNextCursor carries the cursor to resume from after a GET
	// /results answer (also when it holds no line).
	HeaderNextCursor = "Foreman-Next-Cursor"
	// DefaultResultsLimit is the most lines of one GET /results.
	DefaultResultsLimit = 1000
	// MaxResultsLimit caps limit.
	MaxResultsLimit = 10_000
	// streamWait is how long the stream holds each read; an empty one
	// writes a keep-alive comment.
	streamWait = 15 * time.Second
)

// ResultLine is one line of GET /results and the data of one event of GET
// /results/stream: a finished work.
type ResultLine struct {
	// Cursor is the feed position just after this result: resume from it.
	Cursor string `json:"cursor"`
	// ID is the work id.
	ID string `json:"id"`
	// Type is the job type.
	Type string `json:"type,omitempty"`
	// Status is StatusDone, StatusDead or StatusCancelled.
	Status string `json:"status"`
	// Result is the job's result (as in WorkInfo), null unless done.
	Result json.RawMessage `json:"result"`
	// Error is the last error of a dead or cancelled work.
	Error string `json:"error,omitempty"`
	// FinishedAt is when the master recorded the outcome.
	FinishedAt time.Time `json:"finished_at"`
}

// FeedGone is the body of a 410 answer: the cursor is older than the
// retention.
type FeedGone struct {
	// Error says what happened.
	Error string `json:"error"`
	// OldestCursor is the oldest cursor still readable.
	OldestCursor string `json:"oldest_cursor"`
}

// FeedBackend is a Backend that serves the result feed. [ActorBackend]
// implements it.
type FeedBackend interface {
	// ReadFeed reads up to limit results after cursor, holding the read
	// up to wait for the first one; errors as frontend.Client.ReadFeed.
	ReadFeed(ctx context.Context, cursor frontend.Cursor, limit int, wait time.Duration) (*frontend.FeedPage, error)
}

// ReadFeed implements FeedBackend.
func (b *ActorBackend) ReadFeed(ctx context.Context, cursor frontend.Cursor, limit int, wait time.Duration) (*frontend.FeedPage, error) {
	return b.client.ReadFeed(ctx, cursor, limit, wait)
}

// feedQuery reads the feed's parameters shared by both routes.
func (s *Server) feedQuery(r *http.Request, after string) (FeedBackend, frontend.Cursor, int, error) {
	fb, ok := s.backend.(FeedBackend)
	if !ok {
		return nil, frontend.Cursor{}, 0, fmt.Errorf("%w: this server has no result feed (its backend cannot read one)", ErrNotFound)
	}
	cur, err := frontend.ParseCursor(after)
	if err != nil {
		return nil, cur, 0, fmt.Errorf("%w: after: %w; use the cursor of the last line you handled, or 0 for the oldest", ErrInvalid, err)
	}
	limit := DefaultResultsLimit
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxResultsLimit {
			return nil, cur, 0, fmt.Errorf("%w: limit=%.20q must be 1..%d", ErrInvalid, v, MaxResultsLimit)
		}
		limit = n
	}
	return fb, cur, limit, nil
}

// feedErr writes the answer of a failed read before anything was written.
func (s *Server) feedErr(w http.ResponseWriter, r *http.Request, err error) {
	var gone *frontend.FeedGoneError
	switch {
	case errors.As(err, &gone):
		writeJSON(w, http.StatusGone, FeedGone{Error: fmt.Sprintf("cursor %s is older than the feed's retention; results between it and the oldest cursor are no longer in the feed (GET /work/{id} may still know them)", gone.Cursor),
			OldestCursor: gone.Oldest.String()})
	case errors.Is(err, frontend.ErrFeedAhead), errors.Is(err, frontend.ErrInvalidCursor):
		s.fail(w, r, fmt.Errorf("%w: %w; read from after=0 again", ErrInvalid, err))
	case errors.Is(err, ErrInvalid), errors.Is(err, ErrNotFound):
		s.fail(w, r, err)
	case errors.Is(err, frontend.ErrTimeout), errors.Is(err, route.ErrNoMaster), errors.Is(err, context.DeadlineExceeded):
		s.fail(w, r, fmt.Errorf("%w: reading the result feed: %w", ErrUnavailable, err))
	default:
		s.fail(w, r, fmt.Errorf("%w: reading the result feed: %w", ErrServer, err))
	}
}

// handleResults: GET /results?after=&wait=&limit=.
func (s *Server) handleResults(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	fb, cur, limit, err := s.feedQuery(r, q.Get("after"))
	if err == nil {
		var wait time.Duration
		if wait, err = parseWait("wait", q.Get("wait"), 0); err == nil {
			release, ok := s.takeFeedShare(w, r)
			if !ok {
				return
			}
			defer release()
			holdFor(w, wait)
			var page *frontend.FeedPage
			page, err = fb.ReadFeed(r.Context(), cur, limit, wait)
			if revoked(r) {
				// Even when the read returned a page: the revocation cancels
				// the token's waited jobs, and their outcomes can end the
				// read before the ended context does.
				s.leftOrRevoked(w, r)
				return
			}
			if err == nil {
				h := w.Header()
				h.Set("Content-Type", "application/x-ndjson")
				h.Set("X-Content-Type-Options", "nosniff")
				h.Set(HeaderNextCursor, page.Next.String())
				w.WriteHeader(http.StatusOK)
				writeResultLines(w, page.Entries)
				return
			}
		}
	}
	if r.Context().Err() != nil {
		s.leftOrRevoked(w, r) // the client left, or its token was revoked
		return
	}
	s.feedErr(w, r, err)
}

// handleResultsStream: GET /results/stream (Server-Sent Events). The cursor
// is Last-Event-ID, else ?after=.
func (s *Server) handleResultsStream(w http.ResponseWriter, r *http.Request) {
	after := r.Header.Get("Last-Event-ID")
	if after == "" {
		after = r.URL.Query().Get("after")
	}
	fb, cur, limit, err := s.feedQuery(r, after)
	var progress *progressFeed
	if err == nil {
		var on bool
		if on, err = parseProgress(r.URL.Query().Get("progress")); on {
			progress = newProgressFeed(s.backend)
		}
	}
	if err != nil {
		s.feedErr(w, r, err)
		return
	}
	release, ok := s.takeFeedShare(w, r)
	if !ok {
		return
	}
	defer release()
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream has no end
	ctx := r.Context()
	started := false
	for ctx.Err() == nil {
		page, err := fb.ReadFeed(ctx, cur, limit, progress.wait(time.Now(), streamWait))
		if err != nil {
			if ctx.Err() != nil {
				if !started {
					s.leftOrRevoked(w, r)
				}
				return
			}
			if !started {
				s.feedErr(w, r, err)
				return
			}
			var gone *frontend.FeedGoneError
			if errors.As(err, &gone) {
				b, _ := json.Marshal(FeedGone{Error: err.Error(), OldestCursor: gone.Oldest.String()})
				_, _ = fmt.Fprintf(w, "event: gone\ndata: %s\n\n", b)
				_ = rc.Flush()
				return
			}
			// The master is away (failover): say so and read again.
			_, _ = fmt.Fprintf(w, ": %s\n\n", oneLine(err.Error()))
			_ = rc.Flush()
			t := time.NewTimer(s.cfg.retryAfter)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		if !started {
			started = true
			h := w.Header()
			h.Set("Content-Type", "text/event-stream")
			h.Set("Cache-Control", "no-cache")
			h.Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusOK)
		}
		if !writeResultEvents(w, page.Entries) || !progress.write(ctx, w, time.Now()) {
			return
		}
		if len(page.Entries) == 0 {
			_, _ = fmt.Fprint(w, ": keep-alive\n\n")
		}
		if err := rc.Flush(); err != nil {
			return
		}
		cur = page.Next
	}
}

// feedWriteChunk is about how many bytes of lines are gathered before one
// Write: whole lines, so a client never waits on half of one.
const feedWriteChunk = 32 << 10

// writeResultLines writes one JSON line per entry (GET /results).
func writeResultLines(w io.Writer, entries []frontend.FeedEntry) {
	writeChunked(w, entries, func(buf []byte, e frontend.FeedEntry) []byte {
		return append(appendResultLine(buf, e), '\n')
	})
}

// writeResultEvents writes one Server-Sent Event per entry (GET
// /results/stream); false when the client left.
func writeResultEvents(w io.Writer, entries []frontend.FeedEntry) bool {
	return writeChunked(w, entries, func(buf []byte, e frontend.FeedEntry) []byte {
		buf = append(buf, "id: "...)
		buf, _ = e.Cursor.AppendText(buf)
		buf = append(buf, "\nevent: result\ndata: "...)
		return append(appendResultLine(buf, e), "\n\n"...)
	})
}

// writeChunked appends each entry's text (one) and writes whole entries in
// writes of about feedWriteChunk bytes; false when a write failed (the
// client left).
func writeChunked(w io.Writer, entries []frontend.FeedEntry, one func([]byte, frontend.FeedEntry) []byte) bool {
	buf := make([]byte, 0, min(len(entries)*200, feedWriteChunk+1024))
	for _, e := range entries {
		buf = one(buf, e)
		if len(buf) >= feedWriteChunk {
			if _, err := w.Write(buf); err != nil {
				return false
			}
			buf = buf[:0]
		}
	}
	if len(buf) > 0 {
		if _, err := w.Write(buf); err != nil {
			return false
		}
	}
	return true
}

func resultLine(e frontend.FeedEntry) ResultLine {
	name, _ := statusName(e.GetStatus())
	return ResultLine{Cursor: e.Cursor.String(), ID: e.GetWorkId(), Type: e.GetJobType(), Status: name,
		Result: resultJSON(e.GetResult()), Error: e.GetError(), FinishedAt: time.Unix(0, e.GetAtUnixNano()).UTC()}
}

// oneLine keeps an SSE comment on one line.
func oneLine(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '\n' || c == '\r' {
			b[i] = ' '
		}
	}
	return string(b)
}
