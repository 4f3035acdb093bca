package master

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/messages"
)

// The durable result feed: every work that finished (completed, dead,
// cancelled) in journal order, read from the master's own stream. A reader
// keeps a cursor, the sequence number of the last event it read, so it
// resumes where it left off across its restarts and the master's failovers.
//
// The master answers ReadResults off its goroutine: it only knows which
// sequence numbers are durable (feedHub), and each read is a range read of
// the journal. A read that finds nothing new is held until a finishing
// event is durable or its wait ends (a long poll).

// Feed limits.
const (
	// DefaultFeedLimit is the most entries a ReadResults returns when it
	// asks for none (limit 0).
	DefaultFeedLimit = 1000
	// MaxFeedLimit caps the entries of one ReadResults.
	MaxFeedLimit = 10_000
	// MaxFeedWait caps how long a ReadResults is held for a result.
	MaxFeedWait = 5 * time.Minute
	// feedScanFactor bounds the events one read scans per entry asked for
	// (at least feedMinScan; a WorksAccepted counts as its works): a read
	// over a stretch without finishing events returns early with an
	// advanced cursor rather than scan the journal.
	feedScanFactor = 8
	feedMinScan    = 4096
	// maxFeedReaders bounds the reads in flight; more are answered busy.
	maxFeedReaders = 256
	// feedTailSize is how many of the newest feed entries the master keeps
	// in memory, so that readers following the feed are served without a
	// journal read (which scans and decodes every event of the range, about
	// three per finished work). The tail keeps up to twice this many
	// before it is trimmed back.
	feedTailSize = 16_384
)

// Errors of ReadFeed.
var (
	// ErrFeedGone means the events after the cursor were deleted: the
	// reader is behind the feed's retention (WithFeedRetention).
	ErrFeedGone = errors.New("master: result feed: cursor is past the retention")
	// ErrFeedAhead means the cursor is past the stream's last durable
	// event (the journal was replaced): read from 0 again.
	ErrFeedAhead = errors.New("master: result feed: cursor is ahead of the journal")
)

// feedHub tells the feed's readers how far the stream is durable. The master
// advances it once finishing events are durable; readers wait on changed.
//
// It also holds the feed's tail: the newest finishing entries, in sequence
// order, complete for every sequence number in (tailFrom, durable]. A read
// whose cursor is in that range, and recent enough that the journal cannot
// have deleted the events after it (retain), is answered from the tail
// exactly as the journal would answer it.
//
// It also knows the reads in flight: each runs on a goroutine of its own,
// which the master joins when it stops (close), and a held read whose reader
// asked to be watched (ReadResults.watch_reader) ends, unanswered, when
// that reader terminates (readerGone), so that it frees its slot at once.
type feedHub struct {
	mu       sync.Mutex
	durable  int64
	changed  chan struct{} // closed and replaced on every advance
	readers  chan struct{} // semaphore of reads in flight
	stopped  chan struct{} // closed when the master stops: held reads answer
	stop     sync.Once
	tail     []*messages.FeedEntry // read-only once added
	tailFrom int64
	retain   int64 // the journal keeps at least this many events behind the durable one

	ctx    context.Context    //nolint:containedctx // the master's lifetime, for the reads' journal reads: cancelled when it stops; never a reader's context
	cancel context.CancelFunc // of ctx
	reads  sync.WaitGroup     // the reads' goroutines
	// held are the reads whose reader the master watches, by the reader's
	// PID (address/id): a reader may have several.
	held map[string]map[*heldRead]struct{}
}

// heldRead is one read whose reader the master watches; gone is closed
// when that reader terminated.
type heldRead struct {
	gone chan struct{}
}

func newFeedHub(retain int64) *feedHub {
	ctx, cancel := context.WithCancel(context.Background())
	return &feedHub{changed: make(chan struct{}), readers: make(chan struct{}, maxFeedReaders), stopped: make(chan struct{}), retain: retain,
		ctx: ctx, cancel: cancel, held: make(map[string]map[*heldRead]struct{})}
}

// readerKey names a reader's PID in held.
func readerKey(pid *actor.PID) string { return pid.GetAddress() + "/" + pid.GetId() }

// hold records a read of the reader key, until done is called.
func (h *feedHub) hold(key string) (r *heldRead, done func()) {
	r = &heldRead{gone: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	rs := h.held[key]
	if rs == nil {
		rs = make(map[*heldRead]struct{}, 1)
		h.held[key] = rs
	}
	rs[r] = struct{}{}
	return r, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if rs := h.held[key]; rs != nil {
			delete(rs, r)
			if len(rs) == 0 {
				delete(h.held, key)
			}
		}
	}
}

// readerGone ends the held reads of the reader key (it terminated); it
// returns how many there were.
func (h *feedHub) readerGone(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	rs := h.held[key]
	delete(h.held, key)
	for r := range rs {
		close(r.gone)
	}
	return len(rs)
}

// resetTail empties the tail at a recovery: it covers nothing before durable.
func (h *feedHub) resetTail(durable int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tail, h.tailFrom = nil, durable
}

// addTail appends the entries of events that just became durable (in
// sequence order, after every entry added before) and trims the oldest.
func (h *feedHub) addTail(entries []*messages.FeedEntry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tail = append(h.tail, entries...)
	if n := len(h.tail) - feedTailSize; n > feedTailSize {
		h.tailFrom = h.tail[n-1].GetSeq()
		h.tail = append([]*messages.FeedEntry(nil), h.tail[n:]...)
	}
}

// fromTail answers a read of at most limit entries after the cursor after,
// up to durable, from the tail; ok is false when the tail cannot answer it
// as the journal would (the cursor is older than the tail, or old enough
// that the journal may have deleted what follows it).
func (h *feedHub) fromTail(after, durable int64, limit int) (page *messages.ResultsPage, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if after < h.tailFrom || after < durable-h.retain {
		return nil, false
	}
	i := sort.Search(len(h.tail), func(i int) bool { return h.tail[i].GetSeq() > after })
	page = &messages.ResultsPage{NextSeq: durable}
	for ; i < len(h.tail) && h.tail[i].GetSeq() <= durable; i++ {
		if len(page.Entries) == limit {
			page.NextSeq = page.Entries[limit-1].GetSeq()
			break
		}
		page.Entries = append(page.Entries, h.tail[i])
	}
	return page, true
}

// close answers the held reads and cancels their journal reads (the master
// stops), then waits for their goroutines to end: none outlives the master.
func (h *feedHub) close() {
	h.stop.Do(func() {
		close(h.stopped)
		h.cancel()
	})
	h.reads.Wait()
}

// advance records that the stream is durable up to seq; wake wakes the
// waiting readers (a finishing event is among the new ones): the others
// have nothing new for them.
func (h *feedHub) advance(seq int64, wake bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if seq > h.durable {
		h.durable = seq
		if wake {
			close(h.changed)
			h.changed = make(chan struct{})
		}
	}
}

func (h *feedHub) state() (int64, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.durable, h.changed
}

// onReadResults starts a feed read on a goroutine of its own; it answers the
// sender with a ResultsPage. A read that may be held and asks for it
// (watch_reader) has its reader watched: when the reader terminates, the
// read ends unanswered (onReaderTerminated).
func (a *masterActor) onReadResults(c actor.Context, m *messages.ReadResults) {
	sender := c.Sender()
	if sender == nil {
		return
	}
	if !a.rt.Recovered() {
		c.Respond(&messages.ResultsPage{NextSeq: m.GetAfterSeq(), Error: "master: recovering from the journal; retry later"})
		return
	}
	select {
	case a.feed.readers <- struct{}{}:
	default:
		c.Respond(&messages.ResultsPage{NextSeq: m.GetAfterSeq(), Error: fmt.Sprintf("master: %d result-feed reads in flight; retry later", maxFeedReaders)})
		return
	}
	limit := int(m.GetLimit())
	if limit <= 0 {
		limit = DefaultFeedLimit
	}
	limit = min(limit, MaxFeedLimit)
	wait := min(time.Duration(m.GetWaitMs())*time.Millisecond, MaxFeedWait)
	j, stream, hub, root, self, clk := a.j, a.cfg.stream, a.feed, a.root, a.self, a.clock
	timeout := a.cfg.journalTimeout
	var gone <-chan struct{} // nil: not watched, never closed
	done := func() {}
	if m.GetWatchReader() && wait > 0 {
		var r *heldRead
		r, done = hub.hold(readerKey(sender))
		gone = r.gone
		// A reader that is already gone answers Terminated at once (the
		// dead-letter process does, for a Watch).
		c.Watch(sender)
	}
	hub.reads.Add(1)
	go func() {
		defer hub.reads.Done()
		defer func() { <-hub.readers }()
		defer done()
		page := &messages.ResultsPage{NextSeq: m.GetAfterSeq()}
		after := m.GetAfterSeq()
		timer := clk.NewTimer(wait)
		defer timer.Stop()
	read:
		for {
			durable, changed := hub.state()
			if after < durable {
				if p, ok := hub.fromTail(after, durable, limit); ok {
					page = p
				} else {
					ctx, cancel := context.WithTimeout(hub.ctx, timeout)
					p, err := ReadFeed(ctx, j, stream, after, durable, limit)
					cancel()
					switch {
					case err == nil:
						page = p
					case errors.Is(err, ErrFeedGone):
						page = p
					default:
						page = &messages.ResultsPage{NextSeq: after, Error: err.Error()}
					}
				}
				if len(page.GetEntries()) > 0 || page.GetGone() || page.GetError() != "" {
					break read
				}
				after = page.GetNextSeq()
			} else if after > durable {
				page = &messages.ResultsPage{NextSeq: after, Ahead: true, OldestSeq: 0,
					Error: fmt.Sprintf("%v: cursor %d, last durable event %d", ErrFeedAhead, after, durable)}
				break read
			}
			if wait <= 0 {
				break read
			}
			select {
			case <-changed:
			case <-timer.C():
				break read
			case <-hub.stopped:
				break read
			case <-gone:
				return // no one to answer: the slot is free again
			}
		}
		if page.GetError() == "" && !page.GetGone() && !page.GetAhead() && page.GetNextSeq() < after {
			page.NextSeq = after
		}
		select {
		case <-gone: // the reader left during a journal read
			return
		default:
		}
		root.RequestWithCustomSender(sender, page, self)
	}()
}

// onReaderTerminated ends the held reads of a reader that terminated (the
// master watched it: ReadResults.watch_reader). The master watches nothing
// else.
func (a *masterActor) onReaderTerminated(t *actor.Terminated) {
	if n := a.feed.readerGone(readerKey(t.GetWho())); n > 0 {
		a.log.Debug("result-feed reader gone; its held reads end", "reader", t.GetWho().String(), "reads", n, "why", t.GetWhy().String())
	}
}

// errFeedStop ends a Load early.
var errFeedStop = errors.New("stop")

// ReadFeed reads the result feed of the master's journal stream in j: the
// finishing events after afterSeq and at most upTo (the last durable
// event), at most limit entries, scanning a bounded number of events. The page's NextSeq is the last event scanned. When events after
// afterSeq were deleted (afterSeq > 0 and the oldest stored one is past
// afterSeq+1) it returns a page with Gone and OldestSeq set and an error
// wrapping ErrFeedGone; afterSeq 0 starts at the oldest event still stored.
//
// The master serves it through ReadResults; it is exported for tools that
// read a shared journal directly.
func ReadFeed(ctx context.Context, j persistence.Journal, stream string, afterSeq, upTo int64, limit int) (*messages.ResultsPage, error) {
	if limit <= 0 {
		limit = DefaultFeedLimit
	}
	page := &messages.ResultsPage{NextSeq: afterSeq}
	scanned, first := 0, true
	err := loadFinishing(ctx, j, stream, afterSeq+1, func(ev persistence.Event) error {
		if ev.Seq > upTo {
			return errFeedStop
		}
		if first {
			first = false
			if afterSeq > 0 && ev.Seq > afterSeq+1 {
				page.Gone, page.OldestSeq = true, ev.Seq-1
				return errFeedStop
			}
		}
		if e := feedEntry(ev.Seq, ev.Msg); e != nil {
			page.Entries = append(page.Entries, e)
		}
		page.NextSeq = ev.Seq
		scanned++
		if g, ok := ev.Msg.(*messages.WorksAccepted); ok {
			scanned += len(g.GetWorks()) - 1 // decoded as many works
		}
		if len(page.Entries) >= limit || scanned >= max(feedScanFactor*limit, feedMinScan) {
			return errFeedStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFeedStop) {
		return nil, fmt.Errorf("master: read the result feed of %q after %d: %w", stream, afterSeq, err)
	}
	if first && afterSeq > 0 && afterSeq < upTo {
		// Nothing stored after the cursor though events up to upTo are
		// durable: they were deleted.
		page.Gone, page.OldestSeq = true, upTo
	}
	if page.Gone {
		return page, fmt.Errorf("%w: cursor %d, oldest available %d", ErrFeedGone, afterSeq, page.OldestSeq)
	}
	return page, nil
}

// finishingTypes are the events that may finish a work (finishingID): the
// only ones a feed read decodes when the journal can leave the others be.
var finishingTypes = []protoreflect.FullName{
	(*messages.WorkCompleted)(nil).ProtoReflect().Descriptor().FullName(),
	(*messages.WorkerFailed)(nil).ProtoReflect().Descriptor().FullName(),
	(*messages.WorkerTimedOut)(nil).ProtoReflect().Descriptor().FullName(),
	(*messages.WorkExpired)(nil).ProtoReflect().Descriptor().FullName(),
}

// loadFinishing loads the events of stream from fromSeq, decoding only the
// finishing ones when j is a persistence.TypedLoader (the others come with
// a nil Msg): a reader catching up skips the acceptances, with their
// payloads, and the hand-outs, two thirds of the events.
func loadFinishing(ctx context.Context, j persistence.Journal, stream string, fromSeq int64, fn func(persistence.Event) error) error {
	if tl, ok := j.(persistence.TypedLoader); ok {
		return tl.LoadTypes(ctx, stream, fromSeq, finishingTypes, fn)
	}
	return j.Load(ctx, stream, fromSeq, fn)
}

// feedEntry returns the feed entry of a finishing event, nil for others.
func feedEntry(seq int64, ev proto.Message) *messages.FeedEntry {
	switch ev := ev.(type) {
	case *messages.WorkCompleted:
		return &messages.FeedEntry{Seq: seq, WorkId: ev.GetWorkId(), JobType: ev.GetJobType(), Status: messages.WorkStatus_WORK_STATUS_DONE,
			Result: ev.GetResult(), AtUnixNano: ev.GetAtUnixNano()}
	case *messages.WorkerFailed:
		switch {
		case ev.GetCancelled():
			return &messages.FeedEntry{Seq: seq, WorkId: ev.GetWorkId(), JobType: ev.GetJobType(), Status: messages.WorkStatus_WORK_STATUS_CANCELLED,
				Error: ev.GetError(), AtUnixNano: ev.GetAtUnixNano()}
		case ev.GetDead():
			return &messages.FeedEntry{Seq: seq, WorkId: ev.GetWorkId(), JobType: ev.GetJobType(), Status: messages.WorkStatus_WORK_STATUS_DEAD,
				Error: ev.GetError(), AtUnixNano: ev.GetAtUnixNano()}
		}
	case *messages.WorkerTimedOut:
		if ev.GetDead() {
			return &messages.FeedEntry{Seq: seq, WorkId: ev.GetWorkId(), JobType: ev.GetJobType(), Status: messages.WorkStatus_WORK_STATUS_DEAD,
				Error: "work timed out", AtUnixNano: ev.GetAtUnixNano()}
		}
	case *messages.WorkExpired:
		return &messages.FeedEntry{Seq: seq, WorkId: ev.GetWorkId(), JobType: ev.GetJobType(), Status: messages.WorkStatus_WORK_STATUS_DEAD,
			Error: ev.GetReason(), AtUnixNano: ev.GetAtUnixNano()}
	}
	return nil
}
