package pulling

import (
	"fmt"
	"slices"
	"time"
)

// ItemID identifies one item handed out by a master. IDs are unique for the
// master's lifetime (across Epics), so a late confirmation from an earlier
// Epic is recognised and ignored.
type ItemID uint64

// WorkerID is the master's key for a registered worker: its PID as
// "address/id".
type WorkerID string

// StateConfig holds the limits of a [State]. Build one with
// [DefaultStateConfig] and change the fields you need; [NewState] validates it.
type StateConfig struct {
	// BatchSize is how many items the state asks the Epic for per fetch.
	BatchSize int
	// MaxWindow caps how many items one worker may hold unconfirmed.
	MaxWindow int
	// AckTimeout is how long a handed-out item may stay unconfirmed before it
	// is handed out again.
	AckTimeout time.Duration
	// MaxAttempts is how many times an item whose work reports an error is
	// tried before it counts as failed. Worker deaths and timeouts do not
	// count: those items are re-delivered until confirmed.
	MaxAttempts int
	// MaxFetchFailures is how many consecutive Epic errors abort the Epic.
	MaxFetchFailures int
}

// Defaults of [StateConfig] and of the master's options.
const (
	DefaultBatchSize        = 1000
	DefaultMaxWindow        = 64
	DefaultAckTimeout       = time.Minute
	DefaultMaxAttempts      = 3
	DefaultMaxFetchFailures = 5
)

// DefaultStateConfig returns the configuration built from the Default
// constants.
func DefaultStateConfig() StateConfig {
	return StateConfig{
		BatchSize:        DefaultBatchSize,
		MaxWindow:        DefaultMaxWindow,
		AckTimeout:       DefaultAckTimeout,
		MaxAttempts:      DefaultMaxAttempts,
		MaxFetchFailures: DefaultMaxFetchFailures,
	}
}

func (c StateConfig) validate() error {
	switch {
	case c.BatchSize < 1:
		return fmt.Errorf("%w: batch size %d, want at least 1", ErrInvalidConfig, c.BatchSize)
	case c.MaxWindow < 1:
		return fmt.Errorf("%w: max window %d, want at least 1", ErrInvalidConfig, c.MaxWindow)
	case c.AckTimeout <= 0:
		return fmt.Errorf("%w: ack timeout %s, want more than 0", ErrInvalidConfig, c.AckTimeout)
	case c.MaxAttempts < 1:
		return fmt.Errorf("%w: max attempts %d, want at least 1", ErrInvalidConfig, c.MaxAttempts)
	case c.MaxFetchFailures < 1:
		return fmt.Errorf("%w: max fetch failures %d, want at least 1", ErrInvalidConfig, c.MaxFetchFailures)
	}
	return nil
}

// Stats are the progress counters of the current (or last) Epic.
type Stats struct {
	// Epic numbers the Epics of a master from 1; 0 before the first.
	Epic uint64
	// Running tells whether the Epic is still going.
	Running bool
	// HandedOut counts hand-outs, re-deliveries included.
	HandedOut uint64
	// Confirmed counts distinct items whose completion was confirmed.
	Confirmed uint64
	// Redelivered counts items put back for another hand-out (worker gone,
	// timeout, or an error from the work).
	Redelivered uint64
	// Failed counts items given up after MaxAttempts errors.
	Failed uint64
	// InFlight is the number of items held by workers now.
	InFlight int
	// Remaining is the number of items not yet confirmed or failed, or -1
	// when the Epic cannot tell its size.
	Remaining int64
	// Workers is the number of registered workers.
	Workers int
}

// Delivery is one item to send to a worker.
type Delivery[T any] struct {
	Worker  WorkerID
	ID      ItemID
	Attempt int
	Item    T
}

// Effects is what the shell must do after a [State] call.
type Effects[T any] struct {
	// Deliver lists items to send, in order.
	Deliver []Delivery[T]
	// Announce lists workers to tell WorkAvailable.
	Announce []WorkerID
	// Fetch, when more than 0, asks the shell to fetch up to Fetch items from
	// the Epic and to report them with [State.Fetched].
	Fetch int
	// RetryFetch asks the shell to call [State.ResumeFetch] after a delay:
	// the Epic failed and will be asked again.
	RetryFetch bool
	// Dropped lists items given up after MaxAttempts errors.
	Dropped []ItemID
	// Completed lists the items that left the state for good, in the order
	// they did: confirmed, or given up (also in Dropped). A durable master
	// journals them before it performs the other effects.
	Completed []ItemID
	// Finished reports that the Epic ended; Err tells why when it was
	// aborted. [State.Stats] has the final figures.
	Finished bool
	Err      error
}

type entry[T any] struct {
	item     T
	attempt  int
	failures int
	holder   WorkerID // "" while queued for re-delivery
	deadline time.Time
}

// freshItem is a fetched item and the id it will be handed out under (0:
// the next free one).
type freshItem[T any] struct {
	id   ItemID
	item T
}

type workerState struct {
	window int
	demand int
	held   map[ItemID]struct{}
}

// State is the master's pure logic: the Epic's buffered items, the items
// handed out and not confirmed, the registered workers with their windows
// and demand, and the progress counters. It does no I/O and reads no clock;
// every method takes now and returns the [Effects] to perform.
//
// Items are delivered at least once: an item leaves the state only when a
// worker confirms it (or after MaxAttempts reported errors). State is not
// safe for concurrent use; the master actor owns it.
type State[T any] struct {
	cfg StateConfig

	nextID ItemID
	epic   uint64
	total  int64 // -1 when unknown

	running       bool
	exhausted     bool // the Epic returned an empty batch
	fetching      bool // a fetch is in progress
	backoff       bool // a failed fetch waits for ResumeFetch
	fetchFailures int
	announce      bool // items came back; tell idle workers

	fresh   []freshItem[T]       // fetched, not yet handed out
	retry   []ItemID             // to hand out again; stale ids are skipped
	items   map[ItemID]*entry[T] // handed out, not confirmed
	workers map[WorkerID]*workerState
	order   []WorkerID     // registration order, for round robin
	states  []*workerState // states[i] is workers[order[i]]
	rr      int

	stats Stats
}

// NewState returns an idle state, or an error wrapping [ErrInvalidConfig].
func NewState[T any](cfg StateConfig) (*State[T], error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &State[T]{
		cfg:     cfg,
		total:   -1,
		items:   make(map[ItemID]*entry[T]),
		workers: make(map[WorkerID]*workerState),
	}, nil
}

// Running tells whether an Epic is in progress.
func (s *State[T]) Running() bool { return s.running }

// Epic returns the number of the current (or last) Epic.
func (s *State[T]) Epic() uint64 { return s.epic }

// Stats returns the progress counters.
func (s *State[T]) Stats() Stats {
	st := s.stats
	st.Epic = s.epic
	st.Running = s.running
	st.Workers = len(s.workers)
	st.InFlight = 0
	for _, w := range s.workers {
		st.InFlight += len(w.held)
	}
	st.Remaining = -1
	if s.total >= 0 {
		st.Remaining = max(0, s.total-int64(st.Confirmed)-int64(st.Failed))
	}
	return st
}

// Register adds worker w (or updates its window). window is clamped to
// [1, MaxWindow]. A worker that joins while an Epic runs is told
// WorkAvailable (the seed's join: a new node's workers start pulling at
// once); a known worker is told nothing.
func (s *State[T]) Register(w WorkerID, window int, now time.Time) Effects[T] {
	var eff Effects[T]
	window = min(max(window, 1), s.cfg.MaxWindow)
	if ws, ok := s.workers[w]; ok {
		ws.window = window
	} else {
		ws := &workerState{window: window, held: make(map[ItemID]struct{})}
		s.workers[w] = ws
		s.order = append(s.order, w)
		s.states = append(s.states, ws)
		if s.running {
			eff.Announce = append(eff.Announce, w)
		}
	}
	s.step(now, &eff)
	return eff
}

// WorkerGone forgets worker w; the items it held are handed out again.
func (s *State[T]) WorkerGone(w WorkerID, now time.Time) Effects[T] {
	var eff Effects[T]
	ws, ok := s.workers[w]
	if !ok {
		return eff
	}
	for _, id := range sortedIDs(ws.held) {
		s.requeue(id)
	}
	delete(s.workers, w)
	if i := slices.Index(s.order, w); i >= 0 {
		s.order = slices.Delete(s.order, i, i+1)
		s.states = slices.Delete(s.states, i, i+1)
	}
	s.step(now, &eff)
	return eff
}

// StartEpic starts a new Epic of total items (-1 when unknown): it tells
// every worker WorkAvailable and asks for the first batch. While an Epic runs
// it returns [ErrBusy] and changes nothing.
func (s *State[T]) StartEpic(total int64, now time.Time) (Effects[T], error) {
	var eff Effects[T]
	if s.running {
		return eff, fmt.Errorf("%w: epic %d is running", ErrBusy, s.epic)
	}
	s.epic++
	s.stats = Stats{}
	s.total = max(total, -1)
	s.running, s.exhausted, s.fetching, s.backoff = true, false, false, false
	s.fetchFailures = 0
	s.announce = false
	eff.Announce = slices.Clone(s.order)
	s.step(now, &eff)
	return eff, nil
}

// Request records that worker w asks for credit more items (at least one)
// and hands out what is available. When nothing is left the worker gets
// nothing (silence) and is served when items come back or arrive. Requests
// from unknown workers and between Epics are ignored.
func (s *State[T]) Request(w WorkerID, credit int, now time.Time) Effects[T] {
	var eff Effects[T]
	s.addDemand(w, max(credit, 1))
	s.step(now, &eff)
	return eff
}

func (s *State[T]) addDemand(w WorkerID, credit int) {
	ws, ok := s.workers[w]
	if !ok || !s.running || credit <= 0 {
		return
	}
	ws.demand = min(ws.demand+credit, ws.window-len(ws.held))
}

// Done records the outcome of item id reported by worker w. An empty errMsg
// confirms the item (from whichever worker reports it first); otherwise the
// item is handed out again, or dropped after MaxAttempts errors. credit more
// items are then requested for w (0: none). Reports for unknown or already
// confirmed items only apply the credit.
func (s *State[T]) Done(w WorkerID, id ItemID, errMsg string, credit int, now time.Time) Effects[T] {
	var eff Effects[T]
	if e, ok := s.items[id]; ok {
		switch {
		case errMsg == "":
			s.release(id, e)
			delete(s.items, id)
			s.stats.Confirmed++
			eff.Completed = append(eff.Completed, id)
		case e.holder == w:
			s.release(id, e)
			e.failures++
			if e.failures >= s.cfg.MaxAttempts {
				delete(s.items, id)
				s.stats.Failed++
				eff.Dropped = append(eff.Dropped, id)
				eff.Completed = append(eff.Completed, id)
			} else {
				s.requeue(id)
			}
		}
	}
	s.addDemand(w, credit)
	s.step(now, &eff)
	return eff
}

// Expire hands out again every item whose confirmation is overdue at now.
func (s *State[T]) Expire(now time.Time) Effects[T] {
	var eff Effects[T]
	var due []ItemID
	for id, e := range s.items {
		if e.holder != "" && !now.Before(e.deadline) {
			due = append(due, id)
		}
	}
	slices.Sort(due)
	for _, id := range due {
		s.release(id, s.items[id])
		s.requeue(id)
	}
	s.step(now, &eff)
	return eff
}

// NextDeadline returns the earliest confirmation deadline of the items in
// flight; ok is false when none is in flight.
func (s *State[T]) NextDeadline() (deadline time.Time, ok bool) {
	for _, e := range s.items {
		if e.holder != "" && (!ok || e.deadline.Before(deadline)) {
			deadline, ok = e.deadline, true
		}
	}
	return deadline, ok
}

// Fetched records the answer to a Fetch effect of Epic epic: items (an empty
// batch ends the Epic) or err. Answers for an earlier Epic are ignored. After
// MaxFetchFailures consecutive errors the Epic is aborted.
func (s *State[T]) Fetched(epic uint64, items []T, err error, now time.Time) Effects[T] {
	return s.fetched(epic, items, nil, err, now)
}

// FetchedAt is [State.Fetched] for items that carry their own ids (a
// durable master numbers items by their place in the Epic, skipping those
// an earlier activation finished): ids[i] is the id of items[i]; ids must
// increase, be above every id handed out before and never be 0. An empty
// batch still ends the Epic; use [State.SkipFetched] for a batch whose
// items were all skipped.
func (s *State[T]) FetchedAt(epic uint64, items []T, ids []ItemID, err error, now time.Time) Effects[T] {
	if len(ids) != len(items) {
		panic(fmt.Sprintf("pulling: FetchedAt with %d items and %d ids", len(items), len(ids)))
	}
	return s.fetched(epic, items, ids, err, now)
}

// SkipFetched records the answer to a Fetch effect whose items were all
// finished already: the Epic goes on with the next fetch.
func (s *State[T]) SkipFetched(epic uint64, now time.Time) Effects[T] {
	var eff Effects[T]
	if epic != s.epic || !s.running || !s.fetching {
		return eff
	}
	s.fetching = false
	s.fetchFailures = 0
	s.step(now, &eff)
	return eff
}

func (s *State[T]) fetched(epic uint64, items []T, ids []ItemID, err error, now time.Time) Effects[T] {
	var eff Effects[T]
	if epic != s.epic || !s.running || !s.fetching {
		return eff
	}
	s.fetching = false
	switch {
	case err != nil:
		s.fetchFailures++
		if s.fetchFailures >= s.cfg.MaxFetchFailures {
			s.finish(&eff, fmt.Errorf("%w: %d attempts, last: %w", ErrEpicFailed, s.fetchFailures, err))
			return eff
		}
		s.backoff = true
		eff.RetryFetch = true
		return eff
	case len(items) == 0:
		s.exhausted = true
	default:
		s.fetchFailures = 0
		for i, it := range items {
			f := freshItem[T]{item: it}
			if ids != nil {
				f.id = ids[i]
			}
			s.fresh = append(s.fresh, f)
		}
	}
	s.step(now, &eff)
	return eff
}

// ResumeFetch lets the state fetch again after a failed fetch.
func (s *State[T]) ResumeFetch(now time.Time) Effects[T] {
	var eff Effects[T]
	s.backoff = false
	s.step(now, &eff)
	return eff
}

// Abort ends the running Epic now with err (for example when the master
// stops); items in flight are forgotten.
func (s *State[T]) Abort(err error) Effects[T] {
	var eff Effects[T]
	if s.running {
		s.finish(&eff, err)
	}
	return eff
}

func (s *State[T]) release(id ItemID, e *entry[T]) {
	if e.holder == "" {
		return
	}
	if ws, ok := s.workers[e.holder]; ok {
		delete(ws.held, id)
	}
	e.holder = ""
}

func (s *State[T]) requeue(id ItemID) {
	e := s.items[id]
	e.holder = ""
	s.retry = append(s.retry, id)
	s.stats.Redelivered++
	s.announce = true
}

// next returns the next item to hand out: re-deliveries first.
func (s *State[T]) next() (id ItemID, e *entry[T], ok bool) {
	for len(s.retry) > 0 {
		id = s.retry[0]
		s.retry = s.retry[1:]
		if e, ok := s.items[id]; ok && e.holder == "" {
			return id, e, true
		}
	}
	if len(s.fresh) == 0 {
		return 0, nil, false
	}
	f := s.fresh[0]
	s.fresh[0] = freshItem[T]{}
	s.fresh = s.fresh[1:]
	id = f.id
	if id == 0 {
		s.nextID++
		id = s.nextID
	}
	s.nextID = max(s.nextID, id)
	e = &entry[T]{item: f.item}
	s.items[id] = e
	return id, e, true
}

func (s *State[T]) available() bool {
	if len(s.fresh) > 0 {
		return true
	}
	for _, id := range s.retry {
		if e, ok := s.items[id]; ok && e.holder == "" {
			return true
		}
	}
	return false
}

// hungry returns the next worker in round-robin order that wants an item.
func (s *State[T]) hungry() (WorkerID, *workerState, bool) {
	for range s.order {
		s.rr = (s.rr + 1) % len(s.order)
		if ws := s.states[s.rr]; ws.demand > 0 && len(ws.held) < ws.window {
			return s.order[s.rr], ws, true
		}
	}
	return "", nil, false
}

// step hands out what it can, asks for more, announces returned items and
// detects the end of the Epic.
func (s *State[T]) step(now time.Time, eff *Effects[T]) {
	if !s.running {
		return
	}
	for len(s.order) > 0 {
		w, ws, ok := s.hungry()
		if !ok {
			break
		}
		id, e, ok := s.next()
		if !ok {
			break
		}
		e.holder = w
		e.attempt++
		e.deadline = now.Add(s.cfg.AckTimeout)
		ws.held[id] = struct{}{}
		ws.demand--
		s.stats.HandedOut++
		eff.Deliver = append(eff.Deliver, Delivery[T]{Worker: w, ID: id, Attempt: e.attempt, Item: e.item})
	}
	if !s.exhausted && !s.fetching && !s.backoff && len(s.fresh) < max(1, s.cfg.BatchSize/2) {
		s.fetching = true
		eff.Fetch = s.cfg.BatchSize
	}
	if s.announce {
		s.announce = false
		if s.available() {
			for _, w := range s.order {
				ws := s.workers[w]
				if ws.demand == 0 && len(ws.held) < ws.window && !slices.Contains(eff.Announce, w) {
					eff.Announce = append(eff.Announce, w)
				}
			}
		}
	}
	if s.exhausted && !s.fetching && len(s.fresh) == 0 && len(s.items) == 0 {
		s.finish(eff, nil)
	}
}

func (s *State[T]) finish(eff *Effects[T], err error) {
	s.stats.InFlight = 0
	s.running = false
	s.fetching = false
	s.fresh = nil
	s.retry = nil
	clear(s.items)
	for _, ws := range s.workers {
		ws.demand = 0
		clear(ws.held)
	}
	eff.Finished = true
	eff.Err = err
}

func sortedIDs(m map[ItemID]struct{}) []ItemID {
	ids := make([]ItemID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
