package frontend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/frontend/core"
	"github.com/foreman-actors/foreman/messages"
)

// The WorkResultConsumer on the durable result feed (WithFeed): it reads
// every finished work from its cursor, consumes the batch, then saves the
// cursor. A crash between the two consumes the batch again (at least once,
// duplicates counted), never skips one; a master failover only delays the
// next read.

// CursorStore keeps a feed reader's cursor across its restarts.
type CursorStore interface {
	// Load returns the saved cursor (the zero Cursor when none was saved).
	Load() (Cursor, error)
	// Save replaces the saved cursor.
	Save(Cursor) error
}

// MemoryCursor is a CursorStore in memory: the cursor lasts as long as the
// process. Safe for concurrent use.
type MemoryCursor struct {
	mu  sync.Mutex
	cur Cursor
}

// Load implements CursorStore.
func (m *MemoryCursor) Load() (Cursor, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur, nil
}

// Save implements CursorStore.
func (m *MemoryCursor) Save(c Cursor) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cur = c
	return nil
}

// FileCursor is a CursorStore in a file holding the cursor's token. Save
// writes a temporary file beside it, syncs it and renames it over the old
// one, so a crash leaves the old cursor or the new one, never a torn one.
type FileCursor struct {
	// Path of the file; its directory must exist.
	Path string
}

// Load implements CursorStore: a missing file is the zero Cursor.
func (f FileCursor) Load() (Cursor, error) {
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return Cursor{}, nil
	}
	if err != nil {
		return Cursor{}, fmt.Errorf("frontend: read the cursor file: %w", err)
	}
	c, err := ParseCursor(strings.TrimSpace(string(b)))
	if err != nil {
		return Cursor{}, fmt.Errorf("frontend: cursor file %s: %w; delete it to read the feed from its oldest result", f.Path, err)
	}
	return c, nil
}

// Save implements CursorStore.
func (f FileCursor) Save(c Cursor) error {
	tmp, err := os.CreateTemp(filepath.Dir(f.Path), filepath.Base(f.Path)+".tmp*")
	if err != nil {
		return fmt.Errorf("frontend: save the cursor: %w", err)
	}
	_, err = tmp.WriteString(c.String() + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.Path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("frontend: save the cursor to %s: %w", f.Path, err)
	}
	return nil
}

// WithFeed makes the WorkResultConsumer read the durable result feed
// through client instead of (or, with the EventStream, besides) pub-sub,
// resuming from store's cursor and saving it after each consumed batch.
// With both, a completion may be consumed once from each: pub-sub's
// results do not carry their position in the feed, which deduplication
// needs to tell a re-run's end from a repeated one.
// A nil store keeps the cursor in memory (MemoryCursor). For: ConsumerProps.
func WithFeed(client *Client, store CursorStore) Option {
	if store == nil {
		store = &MemoryCursor{}
	}
	return func(c *config) { c.feedClient, c.feedStore = client, store }
}

// Feed read pacing of the consumer.
const (
	feedConsumerWait  = 10 * time.Second
	feedConsumerLimit = 1000
	feedBackoffFirst  = 100 * time.Millisecond
	feedBackoffCap    = 2 * time.Second
)

// feedBatch is a page read by the consumer's reader, consumed by the actor,
// which closes done once the cursor is saved.
type feedBatch struct {
	page *FeedPage
	done chan struct{}
}

// startFeed starts the reader goroutine; stopFeed (in Stopping) ends it.
func (r *consumer) startFeed(c actor.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	r.stopFeed = cancel
	root, self := c.ActorSystem().Root, c.Self()
	client, store, log := r.cfg.feedClient, r.cfg.feedStore, r.log
	r.feedDone = make(chan struct{})
	go func() {
		defer close(r.feedDone)
		// The reader's own core value: it decides where to read next
		// (the actor's decides what is consumed), so each goroutine keeps
		// to its own.
		feed := core.NewConsumer(core.ConsumerConfig{FeedLimit: feedConsumerLimit, FeedWait: feedConsumerWait,
			BackoffFirst: feedBackoffFirst, BackoffCap: feedBackoffCap})
		cur, err := store.Load()
		if err != nil {
			log.Error("cannot load the result cursor; reading the feed from its oldest result", "error", err)
		}
		feed.Loaded(cur, err == nil)
		for ctx.Err() == nil {
			cur := feed.Cursor()
			page, err := client.ReadFeed(ctx, cur, feed.FeedLimit(), feed.FeedWait())
			var gone *FeedGoneError
			switch {
			case ctx.Err() != nil:
				return
			case errors.As(err, &gone):
				log.Warn("result cursor is past the feed's retention; results between are not consumed", "cursor", cur.String(), "oldest", gone.Oldest.String())
				feed.Gone(gone.Oldest)
				continue
			case errors.Is(err, ErrFeedAhead):
				log.Warn("result cursor is ahead of the master's journal (replaced?); reading from its oldest result", "cursor", cur.String())
				feed.Ahead()
				continue
			case err != nil:
				backoff := feed.Failed()
				log.Debug("reading the result feed failed; retrying", "error", err, "backoff", backoff)
				t := time.NewTimer(backoff)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return
				}
				continue
			}
			if len(page.Entries) > 0 {
				b := &feedBatch{page: page, done: make(chan struct{})}
				root.Send(self, b)
				select {
				case <-b.done:
				case <-ctx.Done():
					return
				}
			}
			feed.Read(page)
		}
	}()
}

// consumeBatch consumes a feed page and saves its cursor.
func (r *consumer) consumeBatch(b *feedBatch) {
	defer close(b.done)
	for _, e := range b.page.Entries {
		r.consume(&messages.WorkResult{WorkId: e.GetWorkId(), JobType: e.GetJobType(), Result: e.GetResult(),
			Status: e.GetStatus(), Error: e.GetError()}, e.GetSeq())
	}
	if err := r.cfg.feedStore.Save(b.page.Next); err != nil {
		// The batch is consumed again after a restart: at least once.
		r.log.Error("cannot save the result cursor", "cursor", b.page.Next.String(), "error", err)
	}
}
