package frontend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/foreman-actors/foreman/actors/frontend/core"
	"github.com/foreman-actors/foreman/messages"
)

// Cursor is a position in the result feed: for each shard of the work (one
// master and journal stream each), the journal sequence number of the last
// event read. Its token is "s0:SEQ[,s1:SEQ...]"; the zero Cursor (token
// "0" or "") is the oldest result still retained. With one shard, shard 0
// is the master; with N, shard k is master/k (see route.ShardOf). It is
// core.Cursor, which the feed consumer's pure core and the simulator use.
type Cursor = core.Cursor

// ParseCursor reads a cursor token. "", "0" and "s0:0" are the start.
func ParseCursor(token string) (Cursor, error) { return core.ParseCursor(token) }

// FeedEntry is one finished work read from the feed, with the cursor just
// after it: resume from Cursor to read what follows.
type FeedEntry = core.FeedEntry

// FeedPage is what one ReadFeed returns: Entries in journal order (per
// shard), and Next, where the next read starts (it may be past the last
// entry: events that finished nothing were read too).
type FeedPage = core.FeedPage

// FeedGoneError is a cursor older than the retention: the events after it
// were deleted. Oldest is the oldest cursor still readable (the results
// between are lost to this reader; GET /work/{id} may still know them).
type FeedGoneError struct {
	Cursor Cursor
	Oldest Cursor
}

// Error describes the gap.
func (e *FeedGoneError) Error() string {
	return fmt.Sprintf("%v: cursor %s; the oldest still readable is %s", ErrFeedGone, e.Cursor, e.Oldest)
}

// Is reports whether target is ErrFeedGone.
func (e *FeedGoneError) Is(target error) bool { return target == ErrFeedGone }

// ReadFeed reads the result feed after cursor: at most limit entries (0: the
// master's default, per shard), waiting up to wait for the first one when
// none is there yet (a long poll; 0 answers at once). It returns
// *FeedGoneError (matching ErrFeedGone) for a cursor past the retention, an
// error wrapping ErrFeedAhead for one ahead of the journal, ErrInvalidCursor
// for a cursor naming more shards than there are, and the ask's errors
// (ErrTimeout, route.ErrNoMaster, ctx's).
//
// With several shards it reads every shard's feed at once and returns
// their entries shard by shard; each entry's Cursor resumes just after it
// (every shard before it in the page read to its end). A shard that does
// not answer (its master failing over) is left where the cursor had it,
// so the others go on; only when no shard answers is the error returned.
func (c *Client) ReadFeed(ctx context.Context, cursor Cursor, limit int, wait time.Duration) (*FeedPage, error) {
	n := c.master.Shards()
	if cursor.Shards() > n {
		return nil, fmt.Errorf("%w: %s names %d shards; this cluster has %d", ErrInvalidCursor, cursor, cursor.Shards(), n)
	}
	wait = max(wait, 0)
	if n == 1 {
		p, err := c.readShard(ctx, cursor, 0, limit, wait)
		if err != nil {
			return nil, err
		}
		return core.MergePages(cursor, p), nil
	}
	pages, err := c.readShards(ctx, cursor, n, limit, 0)
	if err == nil && wait > 0 && pages.empty() {
		pages, err = c.readShards(ctx, cursor, n, limit, wait)
	}
	if err != nil {
		return nil, err
	}
	return pages.page(cursor), nil
}

// shardPage is one shard's part of a page.
type shardPage = core.ShardPage

type shardPages []shardPage

func (ps shardPages) empty() bool {
	for _, p := range ps {
		if len(p.Page.GetEntries()) > 0 {
			return false
		}
	}
	return true
}

// page merges the shards' pages, shard by shard, keeping the cursor of
// each entry resumable (core.MergePages).
func (ps shardPages) page(cursor Cursor) *FeedPage { return core.MergePages(cursor, ps...) }

// readShards reads every shard at once. With wait, it returns as soon as
// one shard has entries (the others' reads are dropped: their cursors stay
// where they were).
func (c *Client) readShards(ctx context.Context, cursor Cursor, n, limit int, wait time.Duration) (shardPages, error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		k   int
		p   shardPage
		err error
	}
	ch := make(chan answer, n)
	for k := range n {
		go func() {
			p, err := c.readShard(rctx, cursor, k, limit, wait)
			ch <- answer{k: k, p: p, err: err}
		}()
	}
	pages := make(shardPages, n)
	var firstErr error
	answered := 0
	for range n {
		a := <-ch
		pages[a.k] = shardPage{Shard: a.k}
		switch {
		case a.err == nil:
			pages[a.k] = a.p
			answered++
			if wait > 0 && len(a.p.Page.GetEntries()) > 0 {
				cancel() // enough for this page; the rest answer at once
			}
		case errors.Is(a.err, ErrFeedGone) || errors.Is(a.err, ErrFeedAhead):
			return nil, a.err
		case errors.Is(a.err, context.Canceled) && ctx.Err() == nil:
			// Dropped here once another shard had entries: its cursor stays.
		case firstErr == nil:
			firstErr = a.err
		}
	}
	if answered == 0 {
		if firstErr == nil {
			firstErr = ctx.Err()
		}
		return nil, firstErr
	}
	return pages, nil
}

// readShard reads shard k's feed after cursor's position in it.
func (c *Client) readShard(ctx context.Context, cursor Cursor, k, limit int, wait time.Duration) (shardPage, error) {
	// A held read has the master watch its reply address: when ctx ends
	// first, the address is removed and the master drops the read (see
	// replyBox), so a reader that left does not keep one of its slots.
	res, err := c.askTo(ctx, c.master.Shard(k), &messages.ReadResults{AfterSeq: cursor.Seq(k), Limit: int32(min(limit, 1<<30)),
		WaitMs: wait.Milliseconds(), WatchReader: wait > 0}, wait+c.cfg.askTimeout)
	if err != nil {
		return shardPage{}, err
	}
	p, ok := res.(*messages.ResultsPage)
	if !ok {
		return shardPage{}, fmt.Errorf("%w: %T answering ReadResults", ErrUnexpectedReply, res)
	}
	switch {
	case p.GetGone():
		return shardPage{}, &FeedGoneError{Cursor: cursor, Oldest: cursor.With(k, p.GetOldestSeq())}
	case p.GetAhead():
		if c.master.Shards() > 1 {
			return shardPage{}, fmt.Errorf("%w: shard %d: %s", ErrFeedAhead, k, p.GetError())
		}
		return shardPage{}, fmt.Errorf("%w: %s", ErrFeedAhead, p.GetError())
	case p.GetError() != "":
		return shardPage{}, fmt.Errorf("%w: %s", ErrTimeout, p.GetError()) // the master is recovering or busy: retry
	}
	return shardPage{Shard: k, Page: p}, nil
}
