package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// How the HTTP benchmark reads results back. A follower long-polls GET
// /results from the feed's end as it was before the run. The master keeps a
// bounded number of events behind its snapshots (master.WithFeedRetention):
// a follower further behind is answered 410 with the oldest cursor still
// readable, and the results between its cursor and that one are gone from
// the feed. The follower then resumes from the oldest cursor and, once it
// has read up to the feed's end again, asks a settler for a round: the
// settler looks up with GET /work/{id} every job of the run sent before the
// 410 whose result has not been read, and records those that finished
// (done, or dead or cancelled: not done) as settled. A job still running
// finishes after the lookup, so its result comes later in the feed, or,
// should the follower fall behind again, in the next round. The settler
// runs beside the follower, so a long round does not make the follower
// fall behind the retention once more.

const (
	// settleLookups is the most GET /work/{id} lookups in flight at once
	// (fewer with fewer connections): a round of many lookups must not take
	// over the frontend the measured jobs go through.
	settleLookups = 16
	// followWait is how long a read of the follower is held by the server
	// for a first result.
	followWait = 30 * time.Second
)

// feedGone returns the oldest cursor of a 410 answer of GET /results (the
// cursor read from is older than the feed's retention); ok is false for any
// other error, and for a 410 that names no cursor to resume from.
func feedGone(err error) (oldest string, ok bool) {
	var apiErr *httpapi.APIError
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusGone && apiErr.OldestCursor != "" {
		return apiErr.OldestCursor, true
	}
	return "", false
}

// feedEnd reads the result feed to its current end and returns the cursor
// there. A page answered 410 (the retention passed the read meanwhile) goes
// on from the oldest cursor: nothing of the run is in the feed yet.
func feedEnd(ctx context.Context, c *httpapi.Client) (string, error) {
	cursor := ""
	for {
		lines, next, err := c.ReadResults(ctx, cursor, 0, httpapi.MaxResultsLimit)
		if oldest, ok := feedGone(err); ok {
			cursor = oldest
			continue
		}
		if err != nil {
			return "", fmt.Errorf("%w: reading GET %s to its end before starting (does this frontend serve the result feed? --results=false measures acks only): %w",
				ErrHTTPBench, httpapi.PathResults, err)
		}
		cursor = next
		if len(lines) < httpapi.MaxResultsLimit {
			return cursor, nil
		}
	}
}

// followResults reads the feed from cursor into h, and settles by their
// state the jobs a 410 made it skip, until ctx ends (nil) or a read or a
// lookup fails (that error). It returns once the follower and the settler
// have both ended.
func followResults(ctx context.Context, c *httpapi.Client, cursor string, h *httpRun, lookups int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &settler{c: c, h: h, lookups: lookups, ask: make(chan struct{}, 1)}
	settleErr := make(chan error, 1)
	go func() {
		err := s.run(ctx)
		if err != nil {
			cancel() // the follower stops too
		}
		settleErr <- err
	}()
	err := follow(ctx, c, cursor, h, s.request)
	cancel()
	if serr := <-settleErr; serr != nil {
		return serr
	}
	return err
}

// follow reads the feed from cursor into h until ctx ends (nil) or a read
// fails with anything but 503 (a master failing over: waited out) or 410.
// After a 410 it resumes from the oldest cursor and calls settle, with when
// the 410 came, once it has read up to the feed's end (or at the next 410,
// if it never gets there).
func follow(ctx context.Context, c *httpapi.Client, cursor string, h *httpRun, settle func(sentBefore time.Time)) error {
	var gone time.Time // when the latest 410 came, until settle is asked
	for ctx.Err() == nil {
		lines, next, err := c.ReadResults(ctx, cursor, followWait, httpapi.DefaultResultsLimit)
		if ctx.Err() != nil {
			continue // the read failed because the run is over
		}
		if oldest, ok := feedGone(err); ok {
			if !gone.IsZero() {
				settle(gone) // behind again before catching up: settle what is known
			}
			gone = time.Now()
			h.feedGone()
			cursor = oldest
			continue
		}
		var apiErr *httpapi.APIError
		if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusServiceUnavailable {
			t := time.NewTimer(max(apiErr.RetryAfter, 100*time.Millisecond))
			select {
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
				return nil
			}
		}
		if err != nil {
			return err
		}
		now := time.Now()
		for _, l := range lines {
			h.finish(l.ID, l.Status, now, false)
		}
		cursor = next
		if !gone.IsZero() && len(lines) < httpapi.DefaultResultsLimit {
			settle(gone)
			gone = time.Time{}
		}
	}
	return nil
}

// settler looks up, with GET /work/{id}, the jobs whose results the feed
// may have skipped, in rounds asked for by the follower.
type settler struct {
	c       *httpapi.Client
	h       *httpRun
	lookups int           // lookups in flight at most
	ask     chan struct{} // a round is wanted; asks made during a round coalesce into the next
	mu      sync.Mutex    // guards before
	before  time.Time     // the next round looks up the unread jobs sent before this
}

// request asks for a round over the unread jobs sent before sentBefore;
// it does not wait.
func (s *settler) request(sentBefore time.Time) {
	s.mu.Lock()
	if sentBefore.After(s.before) {
		s.before = sentBefore
	}
	s.mu.Unlock()
	select {
	case s.ask <- struct{}{}:
	default: // a round is asked for already: it will read the new bound
	}
}

// run runs the rounds asked for until ctx ends (nil) or a lookup fails.
func (s *settler) run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.ask:
		}
		s.mu.Lock()
		before := s.before
		s.mu.Unlock()
		// A round cut short by ctx is no failure: the run is over.
		if ids := s.h.unread(before); len(ids) > 0 {
			if err := s.round(ctx, ids); err != nil && ctx.Err() == nil {
				return fmt.Errorf("looking up %d jobs the result feed may have skipped: %w", len(ids), err)
			}
		}
	}
}

// round looks up ids, oldest sent first (the likeliest to have finished),
// with at most s.lookups in flight, recording those that finished. It
// returns the first failure.
func (s *settler) round(ctx context.Context, ids []string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan string)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range min(s.lookups, len(ids)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range next {
				if err := s.settle(ctx, id); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		}()
	}
feed:
	for _, id := range ids {
		select {
		case next <- id:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// settle looks up one job and records it if it finished. Unknown (not
// accepted yet) and unfinished jobs are left to the feed; 503 answers (a
// master failing over) are asked again.
func (s *settler) settle(ctx context.Context, id string) error {
	for {
		info, err := s.c.Work(ctx, id)
		s.h.lookedUp()
		var apiErr *httpapi.APIError
		switch {
		case err == nil:
			if slices.Contains([]string{httpapi.StatusDone, httpapi.StatusDead, httpapi.StatusCancelled}, info.Status) {
				s.h.finish(id, info.Status, time.Now(), true)
			}
			return nil
		case errors.Is(err, httpapi.ErrNotFound):
			return nil
		case errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusServiceUnavailable:
			t := time.NewTimer(max(apiErr.RetryAfter, 100*time.Millisecond))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		default:
			return fmt.Errorf("GET %s/%s: %w", httpapi.PathWork, id, err)
		}
	}
}
