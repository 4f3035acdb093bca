package core

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/foreman-actors/foreman/messages"
)

// ErrInvalidCursor means a cursor token that cannot be parsed (frontend's
// ErrInvalidCursor is this error).
var ErrInvalidCursor = errors.New("frontend: invalid result feed cursor")

// Cursor is a position in the result feed: for each shard of the work (one
// master and journal stream each), the journal sequence number of the last
// event read. Its token is "s0:SEQ[,s1:SEQ...]"; the zero Cursor (token
// "0" or "") is the oldest result still retained. With one shard, shard 0
// is the master; with N, shard k is master/k (see route.ShardOf).
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
	b, _ := c.AppendText(make([]byte, 0, 8*max(len(c.seqs), 1)))
	return string(b)
}

// AppendText appends the cursor's token (as String) to b; it never fails.
// It implements encoding.TextAppender, so a feed line is written without a
// string per cursor.
func (c Cursor) AppendText(b []byte) ([]byte, error) {
	if len(c.seqs) == 0 {
		return append(b, "s0:0"...), nil
	}
	for i, s := range c.seqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, 's')
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, s, 10)
	}
	return b, nil
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

// FeedPage is what one read of the feed returns.
type FeedPage struct {
	// Entries in journal order (per shard).
	Entries []FeedEntry
	// Next is where the next read starts; it may be past the last entry
	// (events that finished nothing were read too).
	Next Cursor
}

// ShardPage is one shard's answer to a feed read: Page is nil when the
// shard did not answer (its cursor then stays where it was).
type ShardPage struct {
	Shard int
	Page  *messages.ResultsPage
}

// MergePages merges the shards' pages read after cursor, shard by shard,
// keeping the cursor of each entry resumable: each entry's Cursor resumes
// just after it, every shard before it in the page read to its end.
func MergePages(cursor Cursor, pages ...ShardPage) *FeedPage {
	out := &FeedPage{}
	run := cursor
	for _, sp := range pages {
		if sp.Page == nil {
			continue
		}
		k := sp.Shard
		for _, e := range sp.Page.GetEntries() {
			run = run.With(k, e.GetSeq())
			out.Entries = append(out.Entries, FeedEntry{Cursor: run, FeedEntry: e})
		}
		run = run.With(k, max(sp.Page.GetNextSeq(), cursor.Seq(k)))
	}
	out.Next = run
	return out
}
