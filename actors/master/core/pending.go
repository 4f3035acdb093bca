package core

import (
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/foreman-actors/foreman/messages"
)

// The pending works of one job type (issue 37; docs/scheduling.md, section
// queue):
//
//   - timers: a min-heap by ready time of the works not due yet (a run_at
//     in the future, a retry in its backoff). Only its head matters: the
//     master arms one wake timer for the earliest (NextReadyAt), so a
//     million waiting works cost no CPU while they wait, and nothing
//     beside the heap's 24-byte item that every pending work has.
//   - lanes: the due works, one lane per fairness key ("" for works
//     without one), each a min-heap by (ready time less the priority's
//     head start, arrival). The hand-out serves the lanes in a ring,
//     weight(key) works per turn (weighted round robin; a key that gets
//     due work joins at the back of the rotation: no map order), and the
//     best work of the lane.
//
// A due work moves from timers to its lane when the state's horizon (the
// latest time it has seen: an event's, or the now of a hand-out) passes
// its ready time. Where a work sits changes only when it is handed out,
// never which work is handed out first within a lane: a lane's order is a
// function of the entries alone.
//
// Without run_at, priority or fairness key every work is due when queued
// and goes to the lane "" by (ready time, arrival): today's FIFO, with one
// heap push and pop per work as before.

// typeQueue is the pending work of one job type.
type typeQueue struct {
	timers queue   // not due yet, by ready time
	lanes  []*lane // lanes with due work, in ring order
	// byKey finds the lanes of keys other than "" (nil until one has due
	// work); def is the lane of "" (nil when it has none).
	byKey  map[string]*lane
	def    *lane
	cur    int // the lane served next (index in lanes)
	served int // works lanes[cur] was handed in its current turn
	n      int // pending works, due or not
}

// lane is the due work of one fairness key of one job type.
type lane struct {
	key string
	q   queue
}

// Priorities (messages.Work.priority): 0 lowest, 9 highest, 5 when unset.
const (
	MinPriority     = 0
	MaxPriority     = 9
	DefaultPriority = 5
)

// strictStep is the head start per priority level without aging: more than
// any difference of ready times, so a higher priority always goes first,
// and small enough that 9 steps from a Unix-nanosecond time do not
// overflow.
const strictStep = int64(1) << 59

// Field numbers of the queueing fields of messages.Work (kept in the
// entry's extra fields; see queueFields).
const (
	fieldRunAt       = 10
	fieldPriority    = 11
	fieldFairnessKey = 12
)

// queueFields returns e's priority (DefaultPriority when unset, clamped to
// 0-9) and fairness key (nil: ""), read from the extra Work fields: an
// entry without them (most) pays one nil check.
func (e *entry) queueFields() (prio int64, key []byte) {
	prio = DefaultPriority
	b := e.extra()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			break
		}
		b = b[n:]
		switch {
		case num == fieldPriority && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return prio, key
			}
			prio = min(max(int64(int32(v)), MinPriority), MaxPriority)
			n = m
		case num == fieldFairnessKey && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return prio, key
			}
			key, n = v, m
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return prio, key
			}
		}
		b = b[n:]
	}
	return prio, key
}

// SetQueueing sets the priority aging (how long a due work waits for its
// priority to count one more; 0: none, a higher priority always goes
// first) and the fairness weights (works per turn of a key; a key not
// listed has 1). The master calls it on the state it is given; a change
// of aging re-orders the lanes.
func (s *WorkState) SetQueueing(aging time.Duration, weights map[string]int) {
	s.weights = weights
	if a := int64(aging); a != s.aging {
		s.aging = a
		for _, tq := range s.queues {
			for _, l := range tq.lanes {
				l.q = heapOf(entriesOf(l.q), func(e *entry) int64 { p, _ := e.queueFields(); return s.laneKey(e, p) })
			}
		}
	}
}

func entriesOf(q queue) []*entry {
	es := make([]*entry, len(q))
	for i, it := range q {
		es[i] = it.e
	}
	return es
}

// laneKey is e's place in its lane: its ready time less prio steps of the
// aging (or strictStep). With aging A, a work of priority p that got due
// at r is handed out before any work of its lane that gets due after
// r + (9-p)·A, whatever that one's priority: the bound on starvation.
func (s *WorkState) laneKey(e *entry, prio int64) int64 {
	step := s.aging
	if step <= 0 {
		step = strictStep
	}
	return e.readyAt - prio*step
}

func (s *WorkState) weight(key string) int {
	if w, ok := s.weights[key]; ok && w > 0 {
		return w
	}
	return 1
}

// push queues pending e in its job type: in a lane when due at the
// horizon, else in the timer heap.
func (s *WorkState) push(e *entry) {
	tq := s.queues[e.jobType]
	if tq == nil {
		tq = &typeQueue{}
		s.queues[e.jobType] = tq
	}
	tq.n++
	s.counts.Pending++
	if e.readyAt > s.horizon {
		e.due = false
		tq.timers.push(e)
		return
	}
	s.toLane(tq, e)
}

func (s *WorkState) toLane(tq *typeQueue, e *entry) {
	prio, key := e.queueFields()
	l := tq.lane(key)
	e.due = true
	l.q.pushKey(e, s.laneKey(e, prio))
}

// lane returns the lane of key, added to the ring (join) if it had no due
// work.
func (tq *typeQueue) lane(key []byte) *lane {
	if len(key) == 0 {
		if tq.def == nil {
			tq.def = &lane{}
			tq.join(tq.def)
		}
		return tq.def
	}
	if l := tq.byKey[string(key)]; l != nil {
		return l
	}
	l := &lane{key: string(key)}
	if tq.byKey == nil {
		tq.byKey = make(map[string]*lane)
	}
	tq.byKey[l.key] = l
	tq.join(l)
	return l
}

// join adds lane l at the back of the rotation: just before the lane
// served now, so that it has its turn after every lane that waits. At the
// end of the ring instead, behind the cursor's way to a waiting lane near
// the start, two keys whose lanes emptied in their turns and filled again
// before the cursor wrapped took turns forever while that lane waited
// (TestFairnessLaneThatRefillsWaitsItsTurn).
func (tq *typeQueue) join(l *lane) {
	if len(tq.lanes) == 0 {
		tq.lanes = append(tq.lanes, l)
		tq.cur, tq.served = 0, 0
		return
	}
	tq.lanes = slices.Insert(tq.lanes, tq.cur, l)
	tq.cur++
}

// drop takes empty lane l out of the ring.
func (tq *typeQueue) drop(l *lane) {
	i := slices.Index(tq.lanes, l)
	tq.lanes = slices.Delete(tq.lanes, i, i+1)
	if l == tq.def {
		tq.def = nil
	} else {
		delete(tq.byKey, l.key)
	}
	switch {
	case i < tq.cur:
		tq.cur--
	case i == tq.cur:
		tq.served = 0 // the next lane's turn begins
	}
	if tq.cur >= len(tq.lanes) {
		tq.cur = 0
	}
}

// promote moves tq's works due at the horizon from its timers to lanes.
func (s *WorkState) promote(tq *typeQueue) {
	for len(tq.timers) > 0 && tq.timers[0].key <= s.horizon {
		e := tq.timers[0].e
		tq.timers.remove(0)
		s.toLane(tq, e)
	}
}

// unqueue takes pending e out of its job type's queue (not handed out),
// or out of the parked works of its full concurrency key (keys.go).
func (s *WorkState) unqueue(e *entry) {
	if e.heapIdx == parkedIdx {
		s.unpark(e)
		return
	}
	s.dequeue(e, false)
}

// dequeue takes pending e out of its queue; handedOut counts it in its
// lane's turn (a WorkStarted).
func (s *WorkState) dequeue(e *entry, handedOut bool) {
	tq := s.queues[e.jobType]
	if !e.due {
		tq.timers.remove(int(e.heapIdx))
	} else {
		_, key := e.queueFields()
		l := tq.def
		if len(key) > 0 {
			l = tq.byKey[string(key)]
		}
		l.q.remove(int(e.heapIdx))
		turn := handedOut && tq.lanes[tq.cur] == l
		switch {
		case len(l.q) == 0:
			tq.drop(l)
		case turn:
			if tq.served++; tq.served >= s.weight(l.key) {
				tq.served = 0
				tq.cur = (tq.cur + 1) % len(tq.lanes)
			}
		}
	}
	e.due = false
	tq.n--
	s.counts.Pending--
	if tq.n == 0 {
		delete(s.queues, e.jobType)
	}
}

// see advances the horizon to t.
func (s *WorkState) see(t int64) {
	if t > s.horizon {
		s.horizon = t
	}
}

// nextReady is NextReady's entry: among the job types accept allows and
// not paused, the head of the lane each serves next, the earliest by lane
// key (ready time and priority), then arrival.
func (s *WorkState) nextReady(now time.Time, accept func(jobType string) bool) *entry {
	limit := now.UnixNano() + s.early
	s.see(limit)
	var best qitem
	for jt, tq := range s.queues {
		if (accept != nil && !accept(jt)) || (len(s.paused) > 0 && s.paused[jt]) {
			continue
		}
		if len(tq.timers) > 0 && tq.timers[0].key <= s.horizon {
			s.promote(tq)
		}
		if len(tq.lanes) == 0 {
			continue
		}
		head := tq.lanes[tq.cur].q[0]
		if s.planted == FairnessIgnored {
			for _, l := range tq.lanes {
				if l.q[0].before(head) {
					head = l.q[0]
				}
			}
		}
		if head.e.readyAt > limit {
			// Due at a horizon later than now: the clock of the master
			// that wrote the events ran ahead of this one's, or a test
			// asks about the past. Never early.
			continue
		}
		if best.e == nil || head.before(best) {
			best = head
		}
	}
	return best.e
}

// Due reports whether pending work id sits in its fairness lane: due,
// released, not parked for its concurrency key. The rotation serves these
// (the simulator's fairness_bounded counts what passes them).
func (s *WorkState) Due(id string) bool {
	e, ok := s.entries[id]
	return ok && e.pending() && e.due
}

// NextReadyAt returns the earliest ready time after now of the works
// waiting in the timer heaps of the job types not paused: when the master
// should look again. ok is false when none waits.
func (s *WorkState) NextReadyAt(now time.Time) (at time.Time, ok bool) {
	limit := now.UnixNano() + s.early
	var best int64
	for jt, tq := range s.queues {
		if len(s.paused) > 0 && s.paused[jt] {
			continue
		}
		r := int64(0)
		switch {
		case len(tq.lanes) > 0:
			// A type with due work does not wait (its workers take it and
			// ask again), unless its next work is due later than now (see
			// nextReady).
			r = tq.lanes[tq.cur].q[0].e.readyAt
		case len(tq.timers) > 0:
			r = tq.timers[0].key
		}
		if r > limit && (!ok || r < best) {
			best, ok = r, true
		}
	}
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(0, best-s.early), true
}

// PendingIDs returns the pending work ids by ready time, then arrival,
// across job types.
func (s *WorkState) PendingIDs() []string {
	all := make([]*entry, 0, s.counts.Pending)
	for _, tq := range s.queues {
		all = append(all, entriesOf(tq.timers)...)
		for _, l := range tq.lanes {
			all = append(all, entriesOf(l.q)...)
		}
	}
	for _, ps := range s.keys.parked {
		all = append(all, ps...)
	}
	slices.SortFunc(all, func(a, b *entry) int {
		if a.readyAt != b.readyAt {
			return compareInt(a.readyAt, b.readyAt)
		}
		return compareInt(a.order, b.order)
	})
	ids := make([]string, len(all))
	for i, e := range all {
		ids[i] = e.id
	}
	return ids
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// applyQueuePaused pauses or resumes a job type.
func (s *WorkState) applyQueuePaused(ev *messages.QueuePaused) {
	jt := ev.GetJobType()
	if jt == "" {
		return
	}
	if ev.GetPaused() {
		if s.paused == nil {
			s.paused = make(map[string]bool)
		}
		s.paused[jt] = true
	} else {
		delete(s.paused, jt)
	}
}

// Paused reports whether jobType is paused.
func (s *WorkState) Paused(jobType string) bool { return s.paused[jobType] }

// PausedTypes returns the paused job types, sorted.
func (s *WorkState) PausedTypes() []string {
	out := make([]string, 0, len(s.paused))
	for jt := range s.paused {
		out = append(out, jt)
	}
	slices.Sort(out)
	return out
}

// QueueStates returns the state of every job type with pending or running
// work or paused, sorted by job type, at now (works due by now count as
// due even when not moved to their lane yet).
func (s *WorkState) QueueStates(now time.Time) []*messages.QueueState {
	limit := now.UnixNano()
	by := make(map[string]*messages.QueueState)
	get := func(jt string) *messages.QueueState {
		q := by[jt]
		if q == nil {
			q = &messages.QueueState{JobType: jt, Paused: s.paused[jt]}
			by[jt] = q
		}
		return q
	}
	for jt, tq := range s.queues {
		q := get(jt)
		q.Pending = int64(tq.n)
		for _, it := range tq.timers {
			if it.key > limit {
				q.Delayed++
			}
		}
	}
	for jt := range s.paused {
		get(jt)
	}
	for _, m := range s.byWorker {
		for _, e := range m {
			get(e.jobType).Running++
		}
	}
	out := make([]*messages.QueueState, 0, len(by))
	for _, q := range by {
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b *messages.QueueState) int {
		switch {
		case a.GetJobType() < b.GetJobType():
			return -1
		case a.GetJobType() > b.GetJobType():
			return 1
		}
		return 0
	})
	return out
}

// restoreQueues builds the queues of the pending entries a snapshot listed
// (es by job type, in snapshot order): due ones (at the horizon the
// snapshot shows) in their lanes, the others in the timer heap, each heap
// built bottom-up.
func (s *WorkState) restoreQueues(restoring map[string][]*entry) {
	for jt, es := range restoring {
		tq := &typeQueue{n: len(es)}
		var timers []*entry
		byLane := make(map[*lane][]*entry)
		for _, e := range es {
			if e.readyAt > s.horizon {
				timers = append(timers, e)
				continue
			}
			_, key := e.queueFields()
			l := tq.lane(key)
			byLane[l] = append(byLane[l], e)
			e.due = true
		}
		tq.timers = heapOf(timers, func(e *entry) int64 { return e.readyAt })
		for _, l := range tq.lanes {
			l.q = heapOf(byLane[l], func(e *entry) int64 { p, _ := e.queueFields(); return s.laneKey(e, p) })
		}
		s.queues[jt] = tq
	}
}
