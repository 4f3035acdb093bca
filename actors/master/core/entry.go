package core

import (
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/foreman-actors/foreman/messages"
)

// entry is one work's record. Pending entries (ACCEPTED or FAILED) sit in
// their job type's queue; RUNNING ones in byWorker; DONE and DEAD ones in the
// finished FIFO until the retention forgets them.
//
// The submitted Work's fields are kept inline rather than as the decoded
// *messages.Work: a million pending works kept a 128-byte message each
// besides their entry (its protobuf bookkeeping included), and a finished
// one a second, smaller copy. The entry holds the waiter's PID as data only
// (messages.PID, the wire type: the core never imports protoactor).
type entry struct {
	id      string
	jobType string
	// data is the payload until the work is done, then its result: a done
	// work keeps no payload (a re-submission brings its own), and only a
	// done one has a result. See payload and result.
	data []byte
	// waiter is the waiter workers ask (the Work's waiter field): never
	// mutated; replaced by nil when detached, by a later caller's when one
	// joins (WaiterAdded) or the asked one leaves (WaiterLeft). nil means
	// the work runs whoever leaves.
	waiter   *messages.PID
	cold     *entryCold // nil unless a field of it is set (see entryCold)
	readyAt  int64      // pending: not handed out before (Unix ns)
	order    int64      // pending: FIFO tie-breaker
	workerID string
	// startedAt and finishedAt: the last attempt's start, the finish.
	startedAt  int64
	finishedAt int64
	attempts   int32
	heapIdx    int32 // index in its queue, -1 when not queued
	status     messages.WorkStatus
	held       bool // accepted, its event not yet durable: not queued (AcceptHeld)
	listed     bool // already listed by the eachForSnapshot under way
	gone       bool // no longer in the state (forgotten, or replaced by a re-submission)
	due        bool // queued in a lane of its type, not its timer heap (pending.go)
	// delayed: a plain entry submitted with a run_at in the future (see
	// delay): readyAt holds the run_at, finishedAt the acceptance time
	// while it is not finished. A delayed work thus costs no allocation
	// beside a plain one.
	delayed bool
	// plain: the history is implied by the fields, as it is for most works,
	// and not kept (compact, hist, shown): a work accepted and not yet
	// started (accepted at readyAt), one running its first attempt (then
	// started at startedAt by workerID) or one done on its first attempt by
	// the worker that started it (then completed at finishedAt). A million
	// pending works kept a 64-byte history allocation each, a million done
	// ones 144 bytes.
	plain bool
}

// entryCold holds the fields most works never set: an entry points to one
// only while one of them is set. A million works kept them inline at 52
// bytes each, and the entry filled a 208-byte allocation where it now fills
// 144 (TestEntrySize).
type entryCold struct {
	lastError string
	history   []histEvent // see history.go; empty when plain
	deadline  int64       // the submitter's deadline (Unix ns), 0 = none
	// attempt is the submitted Work's attempt field (0 unless a client set
	// it), kept so that a snapshot restores the work exactly.
	attempt int32
	// rare is nil unless a field of it is set: a failed or retried work
	// allocates its cold fields, and should not pay for these too.
	rare *entryRare
}

// entryRare holds the fields of an entry that almost no work sets.
type entryRare struct {
	// waiters are the waiters of further callers of an unfinished work
	// (WaiterAdded), oldest first, at most maxWaiters-1: told the outcome
	// with waiter, and asked in turn, newest first, once the asked one has
	// gone (WaiterLeft). With waiter nil they are only told the outcome.
	waiters []*messages.PID
	// extra holds the submitted Work's fields that the entry does not keep
	// inline (see workOther), in wire form: nil for every Work this
	// master's code knows field by field.
	extra []byte
	// keys are the unique and concurrency keys among extra's fields
	// (keys.go), decoded once: nil when it has none.
	keys *workKeys
}

// payload returns the submitted payload; nil once the work is done.
func (e *entry) payload() []byte {
	if e.status == statusDone {
		return nil
	}
	return e.data
}

// result returns a done work's result; nil for any other.
func (e *entry) result() []byte {
	if e.status != statusDone {
		return nil
	}
	return e.data
}

func (e *entry) lastError() string {
	if e.cold == nil {
		return ""
	}
	return e.cold.lastError
}

func (e *entry) history() []histEvent {
	if e.cold == nil {
		return nil
	}
	return e.cold.history
}

func (e *entry) deadline() int64 {
	if e.cold == nil {
		return 0
	}
	return e.cold.deadline
}

func (e *entry) attempt() int32 {
	if e.cold == nil {
		return 0
	}
	return e.cold.attempt
}

// coldFields returns e's cold fields to set one, allocating them if need be.
func (e *entry) coldFields() *entryCold {
	if e.cold == nil {
		e.cold = &entryCold{}
	}
	return e.cold
}

func (e *entry) setLastError(v string) {
	if v != "" || e.cold != nil {
		e.coldFields().lastError = v
		e.dropCold()
	}
}

func (e *entry) setHistory(h []histEvent) {
	if h != nil || e.cold != nil {
		e.coldFields().history = h
		e.dropCold()
	}
}

// setSubmitted sets the fields of the submitted Work kept cold.
func (e *entry) setSubmitted(deadline int64, attempt int32) {
	if deadline != 0 || attempt != 0 || e.cold != nil {
		c := e.coldFields()
		c.deadline, c.attempt = deadline, attempt
		e.dropCold()
	}
}

// rareFields returns e's rare fields, nil when none is set.
func (e *entry) rareFields() *entryRare {
	if e.cold == nil {
		return nil
	}
	return e.cold.rare
}

func (e *entry) moreWaiters() []*messages.PID {
	if r := e.rareFields(); r != nil {
		return r.waiters
	}
	return nil
}

func (e *entry) extra() []byte {
	if r := e.rareFields(); r != nil {
		return r.extra
	}
	return nil
}

// setRare sets one of e's rare fields with set, allocating them if need
// be (only when v is set), and lets go of them once none is set.
func (e *entry) setRare(isSet bool, set func(r *entryRare)) {
	if !isSet && e.rareFields() == nil {
		return
	}
	c := e.coldFields()
	if c.rare == nil {
		c.rare = &entryRare{}
	}
	set(c.rare)
	if c.rare.waiters == nil && c.rare.extra == nil {
		c.rare = nil
	}
	e.dropCold()
}

func (e *entry) setMoreWaiters(v []*messages.PID) {
	e.setRare(v != nil, func(r *entryRare) { r.waiters = v })
}

func (e *entry) setExtra(v []byte) {
	e.setRare(v != nil, func(r *entryRare) { r.extra, r.keys = v, keysOfExtra(v) })
}

// dropCold lets go of e's cold fields once none is set.
func (e *entry) dropCold() {
	if c := e.cold; c != nil && c.lastError == "" && c.history == nil && c.deadline == 0 && c.attempt == 0 &&
		c.rare == nil {
		e.cold = nil
	}
}

// maxWaiters bounds the waiters one work keeps (entry.waiter and
// entryCold.waiters): a client that retries without end adds a waiter each
// time. Past it the oldest is let go: it is no longer asked or told (a
// Call still learns the outcome by asking the status).
const maxWaiters = 16

// samePID reports whether a and b address the same process (the request id
// aside: a PID of one process is sent with several).
func samePID(a, b *messages.PID) bool {
	return a.GetAddress() == b.GetAddress() && a.GetId() == b.GetId()
}

// hasWaiter reports whether p is one of e's waiters.
func (e *entry) hasWaiter(p *messages.PID) bool {
	if e.waiter != nil && samePID(e.waiter, p) {
		return true
	}
	for _, w := range e.moreWaiters() {
		if samePID(w, p) {
			return true
		}
	}
	return false
}

// Field numbers of the messages.Work fields an entry keeps inline (newEntry,
// toWork, the packed snapshot). Any other field, one added to work.proto
// since, or one this binary does not know (sent by a newer one), is kept
// as wire bytes (entryCold.extra), so that none is silently dropped from
// hand-outs and snapshots (TestWorkFieldsSurvive).
const (
	fieldWorkID           = 1
	fieldJobType          = 2
	fieldPayload          = 3
	fieldAttempt          = 4
	fieldDeadlineUnixNano = 5
	fieldWaiter           = 6
)

// workOther lists messages.Work's fields that an entry does not keep inline:
// none today. Read-only, derived from the generated descriptor.
var workOther = func() []protoreflect.FieldDescriptor {
	var out []protoreflect.FieldDescriptor
	fields := (&messages.Work{}).ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		switch fd := fields.Get(i); fd.Number() {
		case fieldWorkID, fieldJobType, fieldPayload, fieldAttempt, fieldDeadlineUnixNano, fieldWaiter:
		default:
			out = append(out, fd)
		}
	}
	return out
}()

// extraOf returns the wire form of w's fields that an entry does not keep
// inline, nil when none is set: the common case costs a look at w's unknown
// fields and at the fields of workOther.
func extraOf(w *messages.Work) []byte {
	m := w.ProtoReflect()
	other := len(m.GetUnknown()) > 0
	for _, fd := range workOther {
		if other {
			break
		}
		other = m.Has(fd)
	}
	if !other {
		return nil
	}
	rest := proto.Clone(w).(*messages.Work)
	rest.WorkId, rest.JobType, rest.Payload, rest.Attempt, rest.DeadlineUnixNano, rest.Waiter = "", "", nil, 0, 0, nil
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rest)
	if err != nil || len(b) == 0 {
		// A Work that was decoded, or is about to be marshalled into
		// the journal, marshals; nothing else can be kept of it.
		return nil
	}
	return b
}

// newEntry returns the entry of an accepted w.
func newEntry(w *messages.Work) *entry {
	e := &entry{id: w.GetWorkId(), jobType: w.GetJobType(), data: w.GetPayload(), waiter: w.GetWaiter(), heapIdx: -1}
	e.setSubmitted(w.GetDeadlineUnixNano(), w.GetAttempt())
	e.setExtra(extraOf(w))
	return e
}

// toWork returns the work as submitted, a new message each call.
func (e *entry) toWork() *messages.Work {
	if e.cold != nil && e.cold.rare != nil && e.cold.rare.extra != nil {
		return e.toWorkExtra()
	}
	return &messages.Work{WorkId: e.id, JobType: e.jobType, Payload: e.payload(), Attempt: e.attempt(),
		DeadlineUnixNano: e.deadline(), Waiter: e.waiter, RunAtUnixNano: e.runAt()}
}

// runAt returns the run_at a delayed entry keeps in readyAt (see delayed);
// 0 for any other, which keeps it in its extra fields if it has one.
func (e *entry) runAt() int64 {
	if e.delayed {
		return e.readyAt
	}
	return 0
}

// acceptedAt returns when a plain entry was accepted.
func (e *entry) acceptedAt() int64 {
	if e.delayed {
		return e.finishedAt
	}
	return e.readyAt
}

// delay makes e, w accepted at at, ready at runAt (after at). A plain one
// stays plain (see delayed): its run_at leaves the extra fields for
// readyAt, its acceptance time goes to finishedAt.
func (e *entry) delay(w *messages.Work, at, runAt int64) {
	e.readyAt = runAt
	if !e.plain {
		return // its history says when it was accepted; run_at stays in extra
	}
	e.delayed = true
	e.finishedAt = at
	if e.extra() != nil {
		rest := proto.Clone(w).(*messages.Work)
		rest.RunAtUnixNano = 0
		e.setExtra(extraOf(rest))
	}
}

// undelay makes a delayed entry an ordinary one, its run_at back in the
// extra fields: before its history becomes explicit (unplain).
func (e *entry) undelay() {
	if !e.delayed {
		return
	}
	x := slices.Clone(e.extra())
	x = protowire.AppendTag(x, fieldRunAt, protowire.VarintType)
	x = protowire.AppendVarint(x, uint64(e.readyAt))
	e.setExtra(x)
	e.delayed = false
	e.finishedAt = 0
}

// evidence returns the latest time e shows to have passed: the master saw
// it (for the horizon of a restored state, see pending.go).
func (e *entry) evidence() int64 {
	t := max(e.startedAt, e.finishedAt)
	if e.plain && !e.delayed && e.status != statusDone {
		t = max(t, e.readyAt)
	}
	if h := e.history(); len(h) > 0 {
		t = max(t, h[len(h)-1].at)
	}
	return t
}

// toWorkExtra is toWork of an entry with extra fields, apart so that the
// common toWork stays small.
func (e *entry) toWorkExtra() *messages.Work {
	w := &messages.Work{WorkId: e.id, JobType: e.jobType, Payload: e.payload(), Attempt: e.attempt(),
		DeadlineUnixNano: e.deadline(), Waiter: e.waiter}
	// The bytes came from a Work (extraOf, or a snapshot written from
	// one): they decode.
	_ = proto.UnmarshalOptions{Merge: true}.Unmarshal(e.extra(), w)
	if e.delayed {
		w.RunAtUnixNano = e.readyAt
	}
	return w
}

// Waiter returns the waiter workers ask about id (nil when unknown or none:
// then the work runs whoever leaves).
func (s *WorkState) Waiter(id string) *messages.PID {
	if e, ok := s.entries[id]; ok {
		return e.waiter
	}
	return nil
}

// Waiters returns every waiter of id's callers, the one workers ask first
// (nil when unknown or none). A new slice.
func (s *WorkState) Waiters(id string) []*messages.PID {
	e, ok := s.entries[id]
	if !ok {
		return nil
	}
	var out []*messages.PID
	if e.waiter != nil {
		out = append(out, e.waiter)
	}
	return append(out, e.moreWaiters()...)
}

// Outcome returns what a finished id's waiters and the result publisher are
// sent, the waiter workers asked, and the further callers' waiters (shared
// with the state: not to be changed); ok is false unless id is finished.
// Unlike Status it builds no history: it runs for every finishing event.
func (s *WorkState) Outcome(id string) (res *messages.WorkResult, waiter *messages.PID, more []*messages.PID, ok bool) {
	e, found := s.entries[id]
	if !found || !e.finished() {
		return nil, nil, nil, false
	}
	return &messages.WorkResult{WorkId: id, JobType: e.jobType, Result: e.result(), Status: e.status, Error: e.lastError()},
		e.waiter, e.moreWaiters(), true
}

// hist returns e's history; buf holds a plain one (see plain).
func (e *entry) hist(buf *[3]histEvent) []histEvent {
	if !e.plain {
		return e.history()
	}
	buf[0] = histEvent{kind: histAccepted, at: e.acceptedAt()}
	switch e.status {
	case statusAccepted:
		return buf[:1]
	case statusRunning:
		buf[1] = histEvent{kind: histStarted, at: e.startedAt, attempt: 1, worker: e.workerID}
		return buf[:2]
	}
	buf[1] = histEvent{kind: histStarted, at: e.startedAt, attempt: 1, worker: e.workerID}
	buf[2] = histEvent{kind: histCompleted, at: e.finishedAt, attempt: 1, worker: e.workerID}
	return buf[:]
}

// unplain makes e's history explicit, before a change that a plain entry
// cannot express (a failure, a requeue, another worker's completion).
func (e *entry) unplain() {
	if !e.plain {
		return
	}
	var buf [3]histEvent
	h := e.hist(&buf)
	e.undelay()
	e.setHistory(append(make([]histEvent, 0, len(h)+1), h...))
	e.plain = false
}

// compact drops e's history when its fields imply it (see plain): for a
// restored entry, and for a work just done.
func (e *entry) compact() {
	h := e.history()
	switch {
	case e.plain:
		return
	case e.status == statusAccepted && e.attempts == 0 && len(h) == 1:
		if h[0] != (histEvent{kind: histAccepted, at: e.readyAt}) {
			return
		}
	case e.status == statusRunning && e.attempts == 1 && len(h) == 2:
		if h[0] != (histEvent{kind: histAccepted, at: e.readyAt}) ||
			h[1] != (histEvent{kind: histStarted, at: e.startedAt, attempt: 1, worker: e.workerID}) {
			return
		}
	case e.status == statusDone && len(h) == 3:
		if h[0] != (histEvent{kind: histAccepted, at: h[0].at}) ||
			h[1] != (histEvent{kind: histStarted, at: h[1].at, attempt: 1, worker: h[1].worker}) ||
			h[2] != (histEvent{kind: histCompleted, at: e.finishedAt, attempt: 1, worker: h[1].worker}) {
			return
		}
		// The state means them zero for a finished work (shown); here
		// they hold the history instead.
		e.readyAt, e.startedAt, e.workerID = h[0].at, h[1].at, h[1].worker
	default:
		return
	}
	e.plain = true
	e.setHistory(nil)
}

// shown returns readyAt, startedAt and workerID as the state means them:
// zero for a plain done work, whose fields hold its history instead.
func (e *entry) shown() (readyAt, startedAt int64, workerID string) {
	if e.plain && e.status == statusDone {
		return 0, 0, ""
	}
	return e.readyAt, e.startedAt, e.workerID
}

// WaiterJoins reports whether a submission of id with waiter p, from a
// caller that waits for the outcome, adds p to the work's waiters
// (WaiterAdded): the work is known and unfinished, and p is not one of its
// waiters already (a retry of the same call).
func (s *WorkState) WaiterJoins(id string, p *messages.PID) bool {
	e, ok := s.entries[id]
	return ok && p != nil && !e.finished() && !e.hasWaiter(p)
}

// applyWaiterAdded adds p to the waiters of unfinished work id (see
// messages.WaiterAdded). A work that runs whoever leaves (no waiter: a
// caller who does not wait asked for it) keeps running so; p is only told
// the outcome. A pending work is asked about from now on through p, the
// newest caller's (the likeliest to be still there; the others are asked
// if it leaves); a running one was asked already, and p is asked if the
// asked one leaves (WaiterLeft).
func (s *WorkState) applyWaiterAdded(id string, p *messages.PID) {
	if !s.WaiterJoins(id, p) {
		return
	}
	e := s.entries[id]
	old := e.moreWaiters()
	more := make([]*messages.PID, 0, len(old)+1)
	more = append(more, old...)
	if e.waiter != nil && e.pending() {
		more = append(more, e.waiter)
		e.waiter = p
	} else {
		more = append(more, p)
	}
	if n := len(more) - (maxWaiters - 1); n > 0 {
		more = more[n:] // the oldest go
	}
	e.setMoreWaiters(more)
}
