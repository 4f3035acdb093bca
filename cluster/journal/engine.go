package journal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/foreman-actors/foreman/actors/persistence"
)

// backend is what a disk store provides to the group-commit engine: one
// writer transaction at a time, and reads.
type backend interface {
	// begin starts a write transaction that excludes every other writer of
	// the store (other processes included) until commit or rollback.
	begin(ctx context.Context) (txn, error)
	// loadPage returns up to loadPage events of stream with seq >= from,
	// in order; a short page is the last one.
	loadPage(ctx context.Context, stream string, from int64) ([]record, error)
	// loadSnapshot returns the stored snapshot of stream, if any.
	loadSnapshot(ctx context.Context, stream string) (record, bool, error)
	close() error
}

// txn is one write transaction.
type txn interface {
	// states returns the current epoch and last seq of each of streams
	// (sorted, distinct), locking them against other writers where the store
	// needs it; an unknown stream may be missing from the map (0, 0).
	states(streams []string) (map[string]streamPos, error)
	// putStates stores the streams' epochs and last seqs.
	putStates(pos []streamPos) error
	insertEvents(stream string, recs []record) error
	saveSnapshot(stream string, rec record) error
	deleteEvents(stream string, toSeq int64) error
	// lease makes holder the lease holder of stream for ttl if the lease is
	// free, lapsed or holder's (granted true, st is holder's new lease), or
	// returns the live lease of another holder (granted false). err is a
	// store error only.
	lease(stream, holder string, ttl time.Duration) (st persistence.LeaseState, granted bool, err error)
	// releaseLease deletes holder's lease of stream, if holder has it.
	releaseLease(stream, holder string) error
	commit() error
	rollback() error
}

type opKind uint8

const (
	opAppend opKind = iota + 1
	opAcquire
	opSnapshot
	opDelete
	opLease
	opRelease
	opFail // a request that failed before it was queued; kept for ordering
)

// op is one queued write.
type op struct {
	kind opKind
	// callerErrFunc is the waiting caller's ctx.Err (nil for AppendAsync):
	// the writer skips a request whose caller gave up before it was
	// written. The op keeps only that question, not the ctx: its
	// transaction serves the whole batch and must not be cancelled by one
	// caller.
	callerErrFunc func() error
	stream        string
	epoch         int64
	recs          []record      // opAppend
	snap          record        // opSnapshot
	toSeq         int64         // opDelete
	holder        string        // opLease, opRelease
	ttl           time.Duration // opLease
	failed        error         // opFail

	// Outcome, set by the writer before done runs.
	err      error
	outEpoch int64
	outLast  int64
	outLease persistence.LeaseState
	done     func(*op)
}

// engine is the group-commit writer shared by the disk backends: one
// goroutine takes every queued write, runs them in one transaction and
// completes each with its own outcome.
type engine struct {
	name     string // what the store is, for errors
	log      *slog.Logger
	maxBatch int
	be       backend

	mu      sync.Mutex
	queue   []*op
	closed  bool
	reads   sync.WaitGroup
	wake    chan struct{}
	stopped chan struct{}
	comp    *completer

	commitObserver func(CommitStats) // nil: none (observe.go)
}

func newEngine(name string, cfg config, be backend) *engine {
	e := &engine{
		name:     name,
		log:      cfg.logger,
		maxBatch: cfg.maxBatch,
		be:       be,
		wake:     make(chan struct{}, 1),
		stopped:  make(chan struct{}),
		comp:     newCompleter(),

		commitObserver: cfg.commitObserver,
	}
	go e.run()
	return e
}

// submit queues o, or completes it with persistence.ErrClosed.
func (e *engine) submit(o *op) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		o.err = persistence.ErrClosed
		e.comp.push(func() { o.done(o) })
		return
	}
	e.queue = append(e.queue, o)
	n := len(e.queue)
	e.mu.Unlock()
	if n == 1 {
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
}

// call submits o and waits for its outcome or for ctx.
func (e *engine) call(ctx context.Context, o *op) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ch := make(chan struct{})
	o.callerErrFunc = ctx.Err
	o.done = func(*op) { close(ch) }
	e.submit(o)
	select {
	case <-ch:
		return o.err
	case <-ctx.Done():
		// The write may still be committed: the caller cannot know.
		return ctx.Err()
	}
}

// take returns the next batch: everything queued, up to maxBatch events,
// waiting while nothing is. It returns nil once closed and drained.
func (e *engine) take() []*op {
	e.mu.Lock()
	for len(e.queue) == 0 {
		if e.closed {
			e.mu.Unlock()
			return nil
		}
		e.mu.Unlock()
		<-e.wake
		e.mu.Lock()
	}
	n, events := 0, 0
	for n < len(e.queue) {
		k := max(1, len(e.queue[n].recs))
		if n > 0 && events+k > e.maxBatch {
			break
		}
		events += k
		n++
	}
	batch := e.queue[:n:n]
	if n == len(e.queue) {
		e.queue = nil
	} else {
		e.queue = e.queue[n:]
	}
	e.mu.Unlock()
	return batch
}

func (e *engine) run() {
	defer close(e.stopped)
	for {
		batch := e.take()
		if batch == nil {
			return
		}
		e.commit(batch)
		e.comp.push(func() {
			for _, o := range batch {
				o.done(o)
			}
		})
	}
}

// streamPos is a stream's stored position.
type streamPos struct {
	stream      string
	epoch, last int64
}

// streamState is a stream's position as seen inside one transaction.
type streamState struct {
	epoch, last int64
	dirty       bool
}

// commit runs batch in one transaction. A request that is fenced, conflicts
// or is invalid fails alone; a store error fails the transaction, and then
// every request of a multi-request batch is retried in a transaction of its
// own so a request that provokes it fails alone too.
func (e *engine) commit(batch []*op) {
	live := batch[:0:0]
	for _, o := range batch {
		o.err = nil
		if o.kind == opFail {
			o.err = o.failed
			continue
		}
		if o.callerErrFunc != nil {
			if err := o.callerErrFunc(); err != nil {
				o.err = err // abandoned before it was written
				continue
			}
		}
		live = append(live, o)
	}
	if len(live) == 0 {
		return
	}
	start := time.Now()
	began, err := e.tryCommit(live)
	e.observeCommit(live, start, err)
	if err == nil {
		return
	}
	if began && len(live) > 1 {
		e.log.Warn("journal batch failed; retrying its requests one by one", "store", e.name, "requests", len(live), "error", err)
		for _, o := range live {
			e.commit([]*op{o})
		}
		return
	}
	e.log.Error("journal write failed", "store", e.name, "requests", len(live), "error", err)
	for _, o := range live {
		o.err = fmt.Errorf("journal: write to %s failed: %w", e.name, err)
	}
}

// tryCommit runs ops in one transaction. On a store error it rolls back and
// returns the error (the ops' outcomes are then meaningless); began tells
// whether the transaction had started (if not, as when another process holds
// the lock past the busy timeout, retrying request by request is no use).
func (e *engine) tryCommit(ops []*op) (began bool, err error) {
	tx, err := e.be.begin(context.Background())
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			if rbErr := tx.rollback(); rbErr != nil {
				e.log.Warn("journal rollback failed", "store", e.name, "error", rbErr)
			}
		}
	}()
	// Read (and, where the store needs it, lock) every stream of the batch
	// in one statement, in sorted order so that writers in other processes
	// lock them in the same order. Leases are not fenced by the epoch, so
	// their streams are left out.
	names := make([]string, 0, 4)
	seen := make(map[string]bool, 4)
	for _, o := range ops {
		if o.kind != opLease && o.kind != opRelease && !seen[o.stream] {
			seen[o.stream] = true
			names = append(names, o.stream)
		}
	}
	slices.Sort(names)
	positions := map[string]streamPos{}
	if len(names) > 0 {
		if positions, err = tx.states(names); err != nil {
			return true, err
		}
	}
	states := make(map[string]*streamState, len(names))
	for _, name := range names {
		p := positions[name]
		states[name] = &streamState{epoch: p.epoch, last: p.last}
	}
	for _, o := range ops {
		switch o.kind {
		case opLease:
			st, granted, err := tx.lease(o.stream, o.holder, o.ttl)
			if err != nil {
				return true, err
			}
			if o.outLease = st; !granted {
				o.err = leaseHeld(o.stream, st)
			}
			continue
		case opRelease:
			if err := tx.releaseLease(o.stream, o.holder); err != nil {
				return true, err
			}
			continue
		}
		st := states[o.stream]
		if o.kind == opAcquire {
			st.epoch++
			st.dirty = true
			o.outEpoch, o.outLast = st.epoch, st.last
			continue
		}
		if o.epoch != st.epoch {
			o.err = fenced(o.stream, o.epoch, st.epoch)
			continue
		}
		switch o.kind {
		case opAppend:
			if len(o.recs) == 0 {
				continue
			}
			if o.recs[0].seq != st.last+1 {
				o.err = conflict(o.stream, o.recs[0].seq, st.last)
				continue
			}
			if err := tx.insertEvents(o.stream, o.recs); err != nil {
				return true, err
			}
			st.last = o.recs[len(o.recs)-1].seq
			st.dirty = true
		case opSnapshot:
			if o.err = checkSnapSeq(o.stream, o.snap.seq, st.last); o.err != nil {
				continue
			}
			if err := tx.saveSnapshot(o.stream, o.snap); err != nil {
				return true, err
			}
		case opDelete:
			if err := tx.deleteEvents(o.stream, o.toSeq); err != nil {
				return true, err
			}
		}
	}
	var dirty []streamPos
	for _, name := range names {
		if st := states[name]; st.dirty {
			dirty = append(dirty, streamPos{stream: name, epoch: st.epoch, last: st.last})
		}
	}
	if len(dirty) > 0 {
		if err := tx.putStates(dirty); err != nil {
			return true, err
		}
	}
	return true, tx.commit()
}

// beginRead registers a read, or fails if the journal is closed.
func (e *engine) beginRead() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return persistence.ErrClosed
	}
	e.reads.Add(1)
	return nil
}

// AcquireEpoch implements persistence.Journal.
func (e *engine) AcquireEpoch(ctx context.Context, stream string) (epoch, lastSeq int64, err error) {
	if err := checkStream(stream); err != nil {
		return 0, 0, err
	}
	o := &op{kind: opAcquire, stream: stream}
	if err := e.call(ctx, o); err != nil {
		return 0, 0, err
	}
	return o.outEpoch, o.outLast, nil
}

// Append implements persistence.Journal.
func (e *engine) Append(ctx context.Context, stream string, epoch int64, events []persistence.Event) error {
	recs, err := encodeEvents(stream, events)
	if err != nil {
		return err
	}
	return e.call(ctx, &op{kind: opAppend, stream: stream, epoch: epoch, recs: recs})
}

// AppendAsync implements persistence.Journal.
func (e *engine) AppendAsync(stream string, epoch int64, events []persistence.Event, done func(error)) {
	o := &op{kind: opAppend, stream: stream, epoch: epoch, done: func(o *op) { done(o.err) }}
	recs, err := encodeEvents(stream, events)
	if err != nil {
		// Fail through the queue, so callbacks keep call order.
		o.kind, o.failed = opFail, err
	}
	o.recs = recs
	e.submit(o)
}

// Load implements persistence.Journal.
func (e *engine) Load(ctx context.Context, stream string, fromSeq int64, fn func(persistence.Event) error) error {
	return e.load(ctx, stream, fromSeq, nil, fn)
}

var _ persistence.TypedLoader = (*engine)(nil)

// LoadTypes implements persistence.TypedLoader.
func (e *engine) LoadTypes(ctx context.Context, stream string, fromSeq int64, types []protoreflect.FullName, fn func(persistence.Event) error) error {
	return e.load(ctx, stream, fromSeq, types, fn)
}

// load is Load, decoding only the events of types when types is not nil.
func (e *engine) load(ctx context.Context, stream string, fromSeq int64, types []protoreflect.FullName, fn func(persistence.Event) error) error {
	if err := checkStream(stream); err != nil {
		return err
	}
	if err := e.beginRead(); err != nil {
		return err
	}
	defer e.reads.Done()
	return loadAll(ctx, e.be, stream, fromSeq, func(r record) error {
		ev, err := decodeEvent(stream, r, types)
		if err != nil {
			return err
		}
		return fn(ev)
	})
}

// SaveSnapshot implements persistence.Journal.
func (e *engine) SaveSnapshot(ctx context.Context, stream string, epoch int64, snap persistence.Snapshot) error {
	if err := checkStream(stream); err != nil {
		return err
	}
	rec, err := encode(stream, snap.Seq, snap.Msg)
	if err != nil {
		return err
	}
	return e.call(ctx, &op{kind: opSnapshot, stream: stream, epoch: epoch, snap: rec})
}

// LoadSnapshot implements persistence.Journal.
func (e *engine) LoadSnapshot(ctx context.Context, stream string) (persistence.Snapshot, bool, error) {
	if err := checkStream(stream); err != nil {
		return persistence.Snapshot{}, false, err
	}
	if err := ctx.Err(); err != nil {
		return persistence.Snapshot{}, false, err
	}
	if err := e.beginRead(); err != nil {
		return persistence.Snapshot{}, false, err
	}
	defer e.reads.Done()
	rec, ok, err := e.be.loadSnapshot(ctx, stream)
	if err != nil || !ok {
		return persistence.Snapshot{}, false, err
	}
	msg, err := decode(stream, rec.seq, rec.name, rec.data)
	if err != nil {
		return persistence.Snapshot{}, false, err
	}
	return persistence.Snapshot{Seq: rec.seq, Msg: msg}, true, nil
}

// DeleteEvents implements persistence.Journal.
func (e *engine) DeleteEvents(ctx context.Context, stream string, epoch int64, toSeq int64) error {
	if err := checkStream(stream); err != nil {
		return err
	}
	return e.call(ctx, &op{kind: opDelete, stream: stream, epoch: epoch, toSeq: toSeq})
}

// Lease implements persistence.Journal. The lease is written by the group
// commit writer like any other write, in the batch's transaction.
func (e *engine) Lease(ctx context.Context, stream, holder string, ttl time.Duration) (persistence.LeaseState, error) {
	if err := checkLease(stream, holder, ttl); err != nil {
		return persistence.LeaseState{}, err
	}
	o := &op{kind: opLease, stream: stream, holder: holder, ttl: ttl}
	err := e.call(ctx, o)
	// o is the writer's until done ran: read it only when call returned
	// the outcome, not the caller's ctx error.
	if err == nil || errors.Is(err, persistence.ErrLeaseHeld) {
		return o.outLease, err
	}
	return persistence.LeaseState{}, err
}

// ReleaseLease implements persistence.Journal.
func (e *engine) ReleaseLease(ctx context.Context, stream, holder string) error {
	if err := checkRelease(stream, holder); err != nil {
		return err
	}
	return e.call(ctx, &op{kind: opRelease, stream: stream, holder: holder})
}

// Close implements persistence.Journal: queued writes are committed, reads in progress
// finish, then the store is released.
func (e *engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return persistence.ErrClosed
	}
	e.closed = true
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	<-e.stopped
	e.comp.close()
	e.reads.Wait()
	if err := e.be.close(); err != nil {
		return fmt.Errorf("journal: close %s: %w", e.name, err)
	}
	e.log.Info("journal closed", "store", e.name)
	return nil
}

// loadAll calls fn for every event of stream with seq >= fromSeq, in order,
// reading the backend one page at a time.
func loadAll(ctx context.Context, be backend, stream string, fromSeq int64, fn func(record) error) error {
	next := fromSeq
	for {
		page, err := be.loadPage(ctx, stream, next)
		if err != nil {
			return err
		}
		for _, r := range page {
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(page) < loadPage {
			return nil
		}
		next = page[len(page)-1].seq + 1
	}
}
