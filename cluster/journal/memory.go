package journal

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/persistence"
)

// Memory is an in-memory persistence.Journal for tests and for single-process runs that
// need no durability. It keeps messages marshalled, exactly as a disk
// backend would, so a type that is not registered or does not round-trip
// fails here too. Its contents are lost when the program ends.
//
// Leases are measured on the journal's clock (WithClock; the real clock by
// default), so a test can let a lease lapse by advancing a clock.Manual.
//
// Memory is safe for concurrent use. The zero value is not usable: call
// NewMemory.
type Memory struct {
	clock clock.Clock

	mu      sync.Mutex
	closed  bool                  // guarded by mu
	streams map[string]*memStream // guarded by mu
	leases  map[string]memLease   // guarded by mu

	async *completer
}

// memLease is one stream's lease.
type memLease struct {
	holder  string
	expires time.Time
}

// memStream is one stream's state.
type memStream struct {
	epoch   int64
	lastSeq int64
	events  []record // contiguous, ascending seq; a prefix may be deleted
	snap    *record  // newest snapshot
}

var _ persistence.Journal = (*Memory)(nil)

// NewMemory returns an empty in-memory journal. Close it when done: it runs
// one goroutine that delivers AppendAsync outcomes. Of the options it reads
// only WithClock. It panics on an invalid option (WithClock(nil)), a wiring
// mistake that OpenSQLite would return as an error.
func NewMemory(opts ...Option) *Memory {
	cfg, err := newConfig(opts)
	if err != nil {
		panic(err)
	}
	return &Memory{clock: cfg.clock, streams: make(map[string]*memStream), leases: make(map[string]memLease), async: newCompleter()}
}

// stream returns the state of name, creating it. m.mu must be held.
func (m *Memory) stream(name string) *memStream {
	s, ok := m.streams[name]
	if !ok {
		s = &memStream{}
		m.streams[name] = s
	}
	return s
}

// AcquireEpoch implements persistence.Journal.
func (m *Memory) AcquireEpoch(ctx context.Context, stream string) (epoch, lastSeq int64, err error) {
	if err := checkStream(stream); err != nil {
		return 0, 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, 0, persistence.ErrClosed
	}
	s := m.stream(stream)
	s.epoch++
	return s.epoch, s.lastSeq, nil
}

// Append implements persistence.Journal.
func (m *Memory) Append(ctx context.Context, stream string, epoch int64, events []persistence.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return m.append(stream, epoch, events)
}

func (m *Memory) append(stream string, epoch int64, events []persistence.Event) error {
	recs, err := encodeEvents(stream, events)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return persistence.ErrClosed
	}
	s := m.stream(stream)
	if epoch != s.epoch {
		return fenced(stream, epoch, s.epoch)
	}
	if len(recs) == 0 {
		return nil
	}
	if recs[0].seq != s.lastSeq+1 {
		return conflict(stream, recs[0].seq, s.lastSeq)
	}
	s.events = append(s.events, recs...)
	s.lastSeq = recs[len(recs)-1].seq
	return nil
}

// AppendAsync implements persistence.Journal. The append is applied at once, in call
// order; done runs on the journal's delivery goroutine, in call order too.
func (m *Memory) AppendAsync(stream string, epoch int64, events []persistence.Event, done func(error)) {
	err := m.append(stream, epoch, events)
	m.async.push(func() { done(err) })
}

// Load implements persistence.Journal.
func (m *Memory) Load(ctx context.Context, stream string, fromSeq int64, fn func(persistence.Event) error) error {
	return m.load(ctx, stream, fromSeq, nil, fn)
}

var _ persistence.TypedLoader = (*Memory)(nil)

// LoadTypes implements persistence.TypedLoader.
func (m *Memory) LoadTypes(ctx context.Context, stream string, fromSeq int64, types []protoreflect.FullName, fn func(persistence.Event) error) error {
	return m.load(ctx, stream, fromSeq, types, fn)
}

// load is Load, decoding only the events of types when types is not nil.
func (m *Memory) load(ctx context.Context, stream string, fromSeq int64, types []protoreflect.FullName, fn func(persistence.Event) error) error {
	if err := checkStream(stream); err != nil {
		return err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return persistence.ErrClosed
	}
	var recs []record
	if s, ok := m.streams[stream]; ok {
		for i, r := range s.events {
			if r.seq >= fromSeq {
				recs = s.events[i:len(s.events):len(s.events)]
				break
			}
		}
	}
	m.mu.Unlock()
	// Records are never modified once stored, so reading them unlocked is
	// safe, and fn may call back into the journal.
	for _, r := range recs {
		if err := ctx.Err(); err != nil {
			return err
		}
		ev, err := decodeEvent(stream, r, types)
		if err != nil {
			return err
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	return nil
}

// SaveSnapshot implements persistence.Journal. Only the snapshot with the highest Seq is
// kept; saving one at a lower Seq than the stored one changes nothing.
func (m *Memory) SaveSnapshot(ctx context.Context, stream string, epoch int64, snap persistence.Snapshot) error {
	if err := checkStream(stream); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	rec, err := encode(stream, snap.Seq, snap.Msg)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return persistence.ErrClosed
	}
	s := m.stream(stream)
	if epoch != s.epoch {
		return fenced(stream, epoch, s.epoch)
	}
	if err := checkSnapSeq(stream, snap.Seq, s.lastSeq); err != nil {
		return err
	}
	if s.snap == nil || rec.seq >= s.snap.seq {
		s.snap = &rec
	}
	return nil
}

// LoadSnapshot implements persistence.Journal.
func (m *Memory) LoadSnapshot(ctx context.Context, stream string) (persistence.Snapshot, bool, error) {
	if err := checkStream(stream); err != nil {
		return persistence.Snapshot{}, false, err
	}
	if err := ctx.Err(); err != nil {
		return persistence.Snapshot{}, false, err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return persistence.Snapshot{}, false, persistence.ErrClosed
	}
	var rec *record
	if s, ok := m.streams[stream]; ok {
		rec = s.snap
	}
	m.mu.Unlock()
	if rec == nil {
		return persistence.Snapshot{}, false, nil
	}
	msg, err := decode(stream, rec.seq, rec.name, rec.data)
	if err != nil {
		return persistence.Snapshot{}, false, err
	}
	return persistence.Snapshot{Seq: rec.seq, Msg: msg}, true, nil
}

// DeleteEvents implements persistence.Journal.
func (m *Memory) DeleteEvents(ctx context.Context, stream string, epoch int64, toSeq int64) error {
	if err := checkStream(stream); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return persistence.ErrClosed
	}
	s := m.stream(stream)
	if epoch != s.epoch {
		return fenced(stream, epoch, s.epoch)
	}
	n := 0
	for n < len(s.events) && s.events[n].seq <= toSeq {
		n++
	}
	// Copy so the deleted prefix can be garbage collected; slices handed
	// to running Loads stay valid.
	s.events = append([]record(nil), s.events[n:]...)
	return nil
}

// Lease implements persistence.Journal on the journal's clock.
func (m *Memory) Lease(ctx context.Context, stream, holder string, ttl time.Duration) (persistence.LeaseState, error) {
	if err := checkLease(stream, holder, ttl); err != nil {
		return persistence.LeaseState{}, err
	}
	if err := ctx.Err(); err != nil {
		return persistence.LeaseState{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return persistence.LeaseState{}, persistence.ErrClosed
	}
	now := m.clock.Now()
	cur, exists := m.leases[stream]
	if !leaseGrantable(exists, cur.holder, cur.expires, now, holder) {
		st := persistence.LeaseState{Holder: cur.holder, Remaining: cur.expires.Sub(now)}
		return st, leaseHeld(stream, st)
	}
	m.leases[stream] = memLease{holder: holder, expires: now.Add(ttl)}
	return persistence.LeaseState{Holder: holder, Remaining: ttl}, nil
}

// ReleaseLease implements persistence.Journal.
func (m *Memory) ReleaseLease(ctx context.Context, stream, holder string) error {
	if err := checkRelease(stream, holder); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return persistence.ErrClosed
	}
	if m.leases[stream].holder == holder {
		delete(m.leases, stream)
	}
	return nil
}

// Close implements persistence.Journal: it waits until every AppendAsync callback has
// run. A second Close returns persistence.ErrClosed.
func (m *Memory) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return persistence.ErrClosed
	}
	m.closed = true
	m.mu.Unlock()
	m.async.close()
	return nil
}

// checkSnapSeq rejects a snapshot that claims events the stream lacks.
func checkSnapSeq(stream string, seq, lastSeq int64) error {
	if seq < 0 {
		return fmt.Errorf("%w: stream %q: snapshot seq %d is negative", persistence.ErrInvalid, stream, seq)
	}
	if seq > lastSeq {
		return fmt.Errorf("%w: stream %q: snapshot at seq %d but the last stored seq is %d (snapshot only journaled state)", persistence.ErrConflict, stream, seq, lastSeq)
	}
	return nil
}

// completer runs callbacks one at a time, in push order, on its own
// goroutine, so callers never run user code under a lock or on their own
// stack.
type completer struct {
	mu     sync.Mutex
	queue  []func()
	closed bool
	wake   chan struct{}
	done   chan struct{}
}

func newCompleter() *completer {
	c := &completer{wake: make(chan struct{}, 1), done: make(chan struct{})}
	go c.run()
	return c
}

// push queues f. After close, f still runs (on a fresh goroutine), so a
// done callback is never lost.
func (c *completer) push(f func()) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		go f()
		return
	}
	c.queue = append(c.queue, f)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *completer) run() {
	defer close(c.done)
	for {
		c.mu.Lock()
		batch := c.queue
		c.queue = nil
		closed := c.closed
		c.mu.Unlock()
		for _, f := range batch {
			f()
		}
		if len(batch) == 0 {
			if closed {
				return
			}
			<-c.wake
		}
	}
}

// close runs what is queued and stops the goroutine.
func (c *completer) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	<-c.done
}
