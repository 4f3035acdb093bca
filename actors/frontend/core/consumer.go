package core

import (
	"log/slog"
	"time"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/messages"
)

// Feed reading defaults of the result consumer (WithFeed).
const (
	DefaultFeedWait         = 10 * time.Second
	DefaultFeedLimit        = 1000
	DefaultFeedBackoffFirst = 100 * time.Millisecond
	DefaultFeedBackoffCap   = 2 * time.Second
	// DefaultDedupeWindow is how many recent outcomes the consumer
	// remembers to recognise duplicates.
	DefaultDedupeWindow = 1 << 16
)

// TimerFeedBackoff is the name of the feed reader's pause after a failed
// read.
const TimerFeedBackoff = "feed-backoff"

// Stats are a result consumer's counters.
type Stats struct {
	// Consumed counts results consumed (the first of each outcome while
	// deduplicating: a work id that ended, was re-submitted and ended
	// again has two outcomes).
	Consumed int64
	// Duplicates counts results whose outcome was already consumed.
	Duplicates int64
}

// ConsumerConfig configures a Consumer.
type ConsumerConfig struct {
	// Window is how many recent outcomes deduplication remembers; 0 turns
	// it off (every result is consumed).
	Window int
	// Planted is test-only: reintroduces a known bug so that the
	// simulator's tests can prove they catch it; never set in production.
	Planted Bug
	// FeedLimit, FeedWait, BackoffFirst and BackoffCap pace the feed
	// reads (defaults DefaultFeedLimit, DefaultFeedWait,
	// DefaultFeedBackoffFirst, DefaultFeedBackoffCap).
	FeedLimit                int
	FeedWait                 time.Duration
	BackoffFirst, BackoffCap time.Duration
}

func (c ConsumerConfig) withDefaults() ConsumerConfig {
	if c.FeedLimit <= 0 {
		c.FeedLimit = DefaultFeedLimit
	}
	if c.FeedWait <= 0 {
		c.FeedWait = DefaultFeedWait
	}
	if c.BackoffFirst <= 0 {
		c.BackoffFirst = DefaultFeedBackoffFirst
	}
	if c.BackoffCap < c.BackoffFirst {
		c.BackoffCap = max(DefaultFeedBackoffCap, c.BackoffFirst)
	}
	return c
}

// Consumer is the WorkResultConsumer's decisions: which results are
// consumed and which are duplicates (Consume), and, reading the durable
// result feed, where to read next (the feed methods: resume from the
// saved cursor, move on past a page, jump to the oldest retained entry on
// a cursor past the retention (410), start over on a cursor ahead of the
// journal, back off after a failed read). Not safe for concurrent use.
type Consumer struct {
	cfg     ConsumerConfig
	seen    *Dedupe // nil: deduplication off
	stats   Stats
	cur     Cursor
	backoff time.Duration
	reading bool // a ReadFeed is out (Step)
}

// NewConsumer returns a consumer.
func NewConsumer(cfg ConsumerConfig) *Consumer {
	cfg = cfg.withDefaults()
	c := &Consumer{cfg: cfg, backoff: cfg.BackoffFirst}
	if cfg.Window > 0 {
		c.seen = NewDedupe(cfg.Window, cfg.Planted)
	}
	return c
}

// Consume decides about one result; seq is the position of its finishing
// event in the result feed (0: not from the feed, e.g. pub-sub). It
// reports whether the result is consumed (true) or a duplicate.
func (c *Consumer) Consume(r *messages.WorkResult, seq int64) bool {
	if c.seen != nil && !c.seen.AddResult(r, seq) {
		c.stats.Duplicates++
		return false
	}
	c.stats.Consumed++
	return true
}

// Stats returns the counters.
func (c *Consumer) Stats() Stats { return c.stats }

// Cursor returns where the next feed read starts.
func (c *Consumer) Cursor() Cursor { return c.cur }

// FeedLimit and FeedWait are the next read's limit and long-poll wait.
func (c *Consumer) FeedLimit() int { return c.cfg.FeedLimit }

// FeedWait is how long a read waits for a first entry.
func (c *Consumer) FeedWait() time.Duration { return c.cfg.FeedWait }

// Loaded starts from the saved cursor; ok false (the store failed) starts
// from the oldest retained result.
func (c *Consumer) Loaded(cur Cursor, ok bool) {
	if !ok {
		cur = Cursor{}
	}
	c.cur = cur
}

// Read is what follows a successful read: the page's entries are to be
// consumed, then the cursor saved (when there were entries), before the
// next read from Next.
func (c *Consumer) Read(p *FeedPage) {
	c.backoff = c.cfg.BackoffFirst
	c.cur = p.Next
}

// Gone moves past a cursor older than the retention: on to oldest (the
// results between are lost to this reader). The next read goes at once.
func (c *Consumer) Gone(oldest Cursor) { c.cur = oldest }

// Ahead starts over from the oldest retained result: the cursor is ahead
// of the journal (it was replaced). The next read goes at once.
func (c *Consumer) Ahead() { c.cur = Cursor{} }

// Failed returns the pause before the next read after a failed one (the
// master failing over, a timeout); the pause doubles up to the cap.
func (c *Consumer) Failed() time.Duration {
	d := c.backoff
	c.backoff = min(2*c.backoff, c.cfg.BackoffCap)
	return d
}

// Inputs of Consumer.Step (besides effect.Fired).
type (
	// CursorLoaded is the saved cursor (OK false: the store failed): the
	// first read follows.
	CursorLoaded struct {
		Cursor Cursor
		OK     bool
	}
	// FeedRead is a read's page.
	FeedRead struct{ Page *FeedPage }
	// FeedGone is a read refused with 410: the cursor is past the
	// retention; Oldest is the oldest still readable.
	FeedGone struct{ Oldest Cursor }
	// FeedAhead is a read refused because the cursor is ahead of the
	// journal.
	FeedAhead struct{}
	// FeedFailed is a read that failed otherwise (no master, a timeout).
	FeedFailed struct{}
	// Pushed is a result delivered directly (pub-sub), with no feed
	// position.
	Pushed struct{ Result *messages.WorkResult }
)

// Effects of Consumer.Step (besides effect.Timer and effect.Log).
type (
	// ReadFeed reads the feed after After (at most Limit entries, waiting
	// up to Wait for the first); the answer comes back as FeedRead,
	// FeedGone, FeedAhead or FeedFailed.
	ReadFeed struct {
		After Cursor
		Limit int
		Wait  time.Duration
	}
	// Consumed hands Result to the application (WithOnResult); Seq is its
	// feed position (0: pub-sub).
	Consumed struct {
		Result *messages.WorkResult
		Seq    int64
	}
	// Duplicate is a result whose outcome was consumed already.
	Duplicate struct {
		Result *messages.WorkResult
		Seq    int64
	}
	// SaveCursor saves the cursor after a consumed page; a crash before it
	// consumes the page again (at least once), never skips it.
	SaveCursor struct{ Cursor Cursor }
)

// IsEffect marks ReadFeed as an effect.Effect.
func (ReadFeed) IsEffect() {}

// IsEffect marks Consumed as an effect.Effect.
func (Consumed) IsEffect() {}

// IsEffect marks Duplicate as an effect.Effect.
func (Duplicate) IsEffect() {}

// IsEffect marks SaveCursor as an effect.Effect.
func (SaveCursor) IsEffect() {}

// Step takes one input (CursorLoaded, FeedRead, FeedGone, FeedAhead,
// FeedFailed, Pushed, effect.Fired) at now and returns the effects: the
// consumer on the result feed as the WorkResultConsumer runs it.
func (c *Consumer) Step(now time.Time, in any) []effect.Effect {
	var out []effect.Effect
	switch m := in.(type) {
	case Pushed:
		return c.consumeOne(out, m.Result, 0)
	case CursorLoaded:
		c.Loaded(m.Cursor, m.OK)
		if !m.OK {
			out = append(out, effect.Log{Level: slog.LevelError, Msg: "cannot load the result cursor; reading the feed from its oldest result"})
		}
		return c.read(out)
	case FeedRead:
		if !c.reading {
			return nil
		}
		c.reading = false
		c.Read(m.Page)
		for _, e := range m.Page.Entries {
			out = c.consumeOne(out, &messages.WorkResult{WorkId: e.GetWorkId(), JobType: e.GetJobType(), Result: e.GetResult(),
				Status: e.GetStatus(), Error: e.GetError()}, e.GetSeq())
		}
		if len(m.Page.Entries) > 0 {
			out = append(out, SaveCursor{Cursor: m.Page.Next})
		}
		return c.read(out)
	case FeedGone:
		if !c.reading {
			return nil
		}
		c.reading = false
		out = append(out, effect.Log{Level: slog.LevelWarn, Msg: "result cursor is past the feed's retention; results between are not consumed",
			Attrs: []any{"cursor", c.cur.String(), "oldest", m.Oldest.String()}})
		c.Gone(m.Oldest)
		return c.read(out)
	case FeedAhead:
		if !c.reading {
			return nil
		}
		c.reading = false
		out = append(out, effect.Log{Level: slog.LevelWarn, Msg: "result cursor is ahead of the master's journal (replaced?); reading from its oldest result",
			Attrs: []any{"cursor", c.cur.String()}})
		c.Ahead()
		return c.read(out)
	case FeedFailed:
		if !c.reading {
			return nil
		}
		c.reading = false
		d := c.Failed()
		return append(out, effect.Timer{Name: TimerFeedBackoff, At: now.Add(d)})
	case effect.Fired:
		if m.Name == TimerFeedBackoff && !c.reading {
			return c.read(out)
		}
	}
	return out
}

func (c *Consumer) read(out []effect.Effect) []effect.Effect {
	c.reading = true
	return append(out, ReadFeed{After: c.cur, Limit: c.cfg.FeedLimit, Wait: c.cfg.FeedWait})
}

func (c *Consumer) consumeOne(out []effect.Effect, r *messages.WorkResult, seq int64) []effect.Effect {
	if c.Consume(r, seq) {
		return append(out, Consumed{Result: r, Seq: seq})
	}
	return append(out, Duplicate{Result: r, Seq: seq})
}
