package frontend

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/foreman-actors/foreman/messages"
)

// Cursor is a position in the result feed: for each shard of the work (one
// master and journal stream each), the journal sequence number of the last
// event read. Its token is "s0:SEQ[,s1:SEQ...]"; the zero Cursor (token
// "0" or "") is the oldest result still retained. Work is not sharded yet
// (N=1: shard 0 is the master), but a cursor already names its shards so
// that tokens stay valid once it is.
type Cursor struct {
	seqs []int64
}

// ParseCursor reads a cursor token. "", "0" and "s0:0" are the start.
func ParseCursor(token string) (Cursor, error) {
	token = strings.TrimSpace(token)
	if token == "" || token == "0" {
		return Cursor{}, nil
	}
	var c Cursor
	for i, part := range strings.Split(token, ",") {
		name, seq, ok := strings.Cut(part, ":")
		if !ok || name != "s"+strconv.Itoa(i) {
			return Cursor{}, fmt.Errorf("%w: %.60q: want s0:SEQ[,s1:SEQ...] with shards in order (part %d is %.20q)", ErrInvalidCursor, token, i, part)
		}
		n, err := strconv.ParseInt(seq, 10, 64)
		if err != nil || n < 0 {
			return Cursor{}, fmt.Errorf("%w: %.60q: shard %d: %.20q is not a sequence number", ErrInvalidCursor, token, i, seq)
		}
		c.seqs = append(c.seqs, n)
	}
	return c, nil
}

// String returns the cursor's token ("s0:0" for the start).
func (c Cursor) String() string {
	if len(c.seqs) == 0 {
		return "s0:0"
	}
	var b strings.Builder
	for i, s := range c.seqs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("s" + strconv.Itoa(i) + ":" + strconv.FormatInt(s, 10))
	}
	return b.String()
}

// Shards returns how many shards the cursor names (0 for the start).
func (c Cursor) Shards() int { return len(c.seqs) }

// Seq returns the sequence number of shard i (0 when the cursor does not
// name it: its start).
func (c Cursor) Seq(i int) int64 {
	if i < 0 || i >= len(c.seqs) {
		return 0
	}
	return c.seqs[i]
}

// With returns a copy of c with shard i at seq.
func (c Cursor) With(i int, seq int64) Cursor {
	n := max(len(c.seqs), i+1)
	seqs := make([]int64, n)
	copy(seqs, c.seqs)
	seqs[i] = seq
	return Cursor{seqs: seqs}
}

// IsZero reports whether c is the start of the feed.
func (c Cursor) IsZero() bool {
	for _, s := range c.seqs {
		if s != 0 {
			return false
		}
	}
	return true
}

// FeedEntry is one finished work read from the feed, with the cursor just
// after it: resume from Cursor to read what follows.
type FeedEntry struct {
	Cursor Cursor
	*messages.FeedEntry
}

// FeedPage is what one ReadFeed returns.
type FeedPage struct {
	// Entries in journal order (per shard).
	Entries []FeedEntry
	// Next is where the next read starts; it may be past the last entry
	// (events that finished nothing were read too).
	Next Cursor
}

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
// master's default), waiting up to wait for the first one when none is there
// yet (a long poll; 0 answers at once). It returns *FeedGoneError (matching
// ErrFeedGone) for a cursor past the retention, an error wrapping
// ErrFeedAhead for one ahead of the journal, ErrInvalidCursor for a cursor
// naming more shards than there are, and the ask's errors (ErrTimeout,
// route.ErrNoMaster, ctx's).
func (c *Client) ReadFeed(ctx context.Context, cursor Cursor, limit int, wait time.Duration) (*FeedPage, error) {
	if cursor.Shards() > 1 {
		return nil, fmt.Errorf("%w: %s names %d shards; this cluster has 1", ErrInvalidCursor, cursor, cursor.Shards())
	}
	wait = max(wait, 0)
	res, err := c.askFor(ctx, &messages.ReadResults{AfterSeq: cursor.Seq(0), Limit: int32(min(limit, 1<<30)), WaitMs: wait.Milliseconds()},
		wait+c.cfg.askTimeout)
	if err != nil {
		return nil, err
	}
	p, ok := res.(*messages.ResultsPage)
	if !ok {
		return nil, fmt.Errorf("%w: %T answering ReadResults", ErrUnexpectedReply, res)
	}
	switch {
	case p.GetGone():
		return nil, &FeedGoneError{Cursor: cursor, Oldest: cursor.With(0, p.GetOldestSeq())}
	case p.GetAhead():
		return nil, fmt.Errorf("%w: %s", ErrFeedAhead, p.GetError())
	case p.GetError() != "":
		return nil, fmt.Errorf("%w: %s", ErrTimeout, p.GetError()) // the master is recovering or busy: retry
	}
	page := &FeedPage{Entries: make([]FeedEntry, 0, len(p.GetEntries())), Next: cursor.With(0, max(p.GetNextSeq(), cursor.Seq(0)))}
	for _, e := range p.GetEntries() {
		page.Entries = append(page.Entries, FeedEntry{Cursor: cursor.With(0, e.GetSeq()), FeedEntry: e})
	}
	return page, nil
}
