package sim

import (
	"errors"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	pcore "github.com/foreman-actors/foreman/actors/persistence/core"
)

// Errors of the journal model, named like persistence's so that traces
// read alike.
var (
	errFenced      = errors.New("fenced by a newer writer")
	errWrite       = errors.New("write failed")
	errConflict    = errors.New("sequence conflict")
	errUnreachable = errors.New("journal unreachable (call timed out)")
)

// jevent is one durable event of a stream.
type jevent struct {
	msg   proto.Message
	epoch int64
	at    time.Duration // true time it became durable
}

// leaseGrant is one grant of a stream's lease, on the journal's clock
// (true time): the holder may be the only one serving in [from, until).
type leaseGrant struct {
	holder      string
	from, until time.Duration
}

// appendReq is one Append waiting in a stream's group commit.
type appendReq struct {
	from   *node
	first  int64 // the first event's sequence number; 0: after the last
	epoch  int64
	events []proto.Message
	done   func(err error) // runs on from, if it still runs
}

// stream is the journal model of one stream: durable events, the current
// epoch, the group commit and the lease.
type stream struct {
	name    string
	events  []jevent
	js      pcore.Stream // the real backends' rules: epochs, sequence numbers, the lease
	pending []*appendReq // join the next batch
	batch   []*appendReq // being written
	grants  []leaseGrant // every grant, for the invariants
	// snap is the newest snapshot: the state after event snapSeq.
	snap    proto.Message
	snapSeq int64
}

// journal is the journal model: a database node that the backends reach
// over the network (so partitions can cut a backend off from it), with
// group commit, fsync latency, write errors, epochs that fence older
// writers and leases granted on its own clock, as the real backends do
// (actors/persistence/journal.go, cluster/journal).
type journal struct {
	w       *world
	db      *node
	streams map[string]*stream // looked up by name, never iterated
	order   []*stream          // creation order, for iteration

	writeErr                  float64
	fsyncMin, fsyncMax        time.Duration
	batches, failed, fenced   int
	lostOnCrash, leaseRefused int

	onDurable func(s *stream, seq int64, ev jevent) // the history's hook
}

func (j *journal) stream(name string) *stream {
	s := j.streams[name]
	if s == nil {
		s = &stream{name: name}
		j.streams[name] = s
		j.order = append(j.order, s)
	}
	return s
}

// callTimeout is how long a journal call waits for its answer before it
// fails (the request or the answer was cut off by a partition).
const callTimeout = 300 * time.Millisecond

// call carries a request from n to the journal and its answer back, in
// order on each link (a connection): op runs on the journal's node and
// returns what runs on n with the answer (nil: op answers later itself,
// through answer). fail runs on n when the request or the answer is cut.
func (j *journal) call(n *node, op func() func(), fail func()) {
	if !j.w.rpc(n, j.db, func() {
		if answer := op(); answer != nil {
			j.answer(n, answer, fail)
		}
	}) {
		j.w.onNode(n, j.w.e.now+callTimeout, fail)
	}
}

// answer carries an answer from the journal to n; fail runs on n instead
// when the link is cut.
func (j *journal) answer(n *node, answer, fail func()) {
	if !j.w.rpc(j.db, n, answer) {
		j.w.onNode(n, j.w.e.now+callTimeout, fail)
	}
}

// acquire makes a new epoch of the stream current, fencing older writers,
// and returns it with the stream's durable events (a recovery's replay).
// acquire makes a new epoch of the stream current, fencing older writers,
// and returns it with the newest snapshot and the durable events after it
// (a recovery's load) and the last sequence number.
func (j *journal) acquire(s *stream) (epoch int64, snap proto.Message, events []proto.Message, last int64) {
	epoch, last = s.js.AcquireEpoch()
	for _, ev := range s.events[s.snapSeq:] {
		events = append(events, ev.msg)
	}
	j.w.e.tracef(j.db.name, "journal %s epoch %d (snapshot at #%d, replay %d events)", s.name, epoch, s.snapSeq, len(events))
	return epoch, s.snap, events, last
}

// saveSnapshot stores snap as the state after event seq, fenced by the
// epoch like an append.
func (j *journal) saveSnapshot(s *stream, epoch, seq int64, snap proto.Message) {
	if s.js.CheckEpoch(epoch) != pcore.WriteOK || seq <= s.snapSeq || seq > s.js.LastSeq() {
		return
	}
	s.snap, s.snapSeq = snap, seq
	j.w.e.tracef(j.db.name, "journal %s snapshot at #%d", s.name, seq)
}

// append queues r in the stream's group commit: it joins the batch being
// formed, and a batch starts writing when none is in flight.
func (j *journal) append(s *stream, r *appendReq) {
	s.pending = append(s.pending, r)
	if s.batch == nil {
		j.startBatch(s)
	}
}

func (j *journal) startBatch(s *stream) {
	s.batch, s.pending = s.pending, nil
	j.batches++
	j.w.e.after(j.w.e.between(j.fsyncMin, j.fsyncMax), func() { j.commit(s) })
}

// commit ends the batch in flight: a write error fails every append of
// it; otherwise each append of a current epoch becomes durable in order
// and each of an older epoch is fenced.
func (j *journal) commit(s *stream) {
	batch := s.batch
	fail := j.w.e.chance(j.writeErr)
	if fail {
		j.failed++
		j.w.faults[faultWriteError]++
		j.w.e.tracef(j.db.name, "journal %s write error (batch of %d)", s.name, len(batch))
	}
	for _, r := range batch {
		if r.events == nil { // lost with its node's crash
			continue
		}
		var err error
		first := r.first
		if first == 0 {
			first = s.js.LastSeq() + 1
		}
		switch {
		case fail:
			err = errWrite
		default:
			switch s.js.Append(r.epoch, first, len(r.events)) {
			case pcore.WriteFenced:
				j.fenced++
				err = errFenced
			case pcore.WriteConflict:
				err = errConflict
			}
		}
		if err == nil {
			for _, m := range r.events {
				ev := jevent{msg: m, epoch: r.epoch, at: j.w.e.now}
				s.events = append(s.events, ev)
				if j.w.e.tracing() {
					j.w.e.tracef(j.db.name, "journal %s #%d epoch %d %s", s.name, len(s.events), r.epoch, msgText(m))
				}
				if j.onDurable != nil {
					j.onDurable(s, int64(len(s.events)), ev)
				}
			}
		}
		if err != nil && j.w.e.tracing() {
			j.w.e.tracef(j.db.name, "journal %s append of %d from %s epoch %d: %v", s.name, len(r.events), r.from.name, r.epoch, err)
		}
		done, from := r.done, r.from
		j.answer(from, func() { done(err) }, func() { done(errUnreachable) })
	}
	s.batch = nil
	if len(s.pending) > 0 {
		j.startBatch(s)
	}
}

// crashed drops the appends of n not yet written (the unsynced tail of a
// crashed process), and half of those in the batch being written: a write
// under way when its process died may or may not have reached the disk.
func (j *journal) crashed(n *node) {
	for _, s := range j.order {
		kept := s.pending[:0]
		for _, r := range s.pending {
			if r.from == n {
				j.lostOnCrash++
				continue
			}
			kept = append(kept, r)
		}
		s.pending = kept
		for _, r := range s.batch {
			if r.from == n && j.w.e.chance(0.5) {
				j.lostOnCrash++
				r.events = nil
			}
		}
	}
}

// journalNow is the journal's clock: true time.
func journalNow(t time.Duration) time.Time { return epoch0.Add(t) }

// grantLease is the backends' lease rule (persistence/core.Stream.Lease)
// on the journal's clock; it records each grant for the invariants.
func (j *journal) grantLease(s *stream, holder string, ttl time.Duration) (pcore.LeaseState, bool) {
	now := j.w.e.now
	st, ok := s.js.Lease(journalNow(now), holder, ttl)
	if !ok {
		j.leaseRefused++
		return st, false
	}
	s.grants = append(s.grants, leaseGrant{holder: holder, from: now, until: now + ttl})
	j.w.e.tracef(j.db.name, "journal %s lease to %s until %dus", s.name, holder, (now+ttl)/time.Microsecond)
	return st, true
}

// releaseLease ends holder's lease at once.
func (j *journal) releaseLease(s *stream, holder string) {
	if s.js.LeaseHolder(journalNow(j.w.e.now)) != holder {
		return
	}
	s.js.ReleaseLease(holder)
	for i := range s.grants {
		if g := &s.grants[i]; g.holder == holder && g.until > j.w.e.now {
			g.until = j.w.e.now
		}
	}
	j.w.e.tracef(j.db.name, "journal %s lease released by %s", s.name, holder)
}

// leaseCovers reports whether the journal had granted holder the lease of
// s at true time t.
func (s *stream) leaseCovers(holder string, t time.Duration) bool {
	for i := len(s.grants) - 1; i >= 0; i-- {
		g := s.grants[i]
		if g.holder == holder && g.from <= t && t < g.until {
			return true
		}
	}
	return false
}

// sessionIO performs the journal calls a persistence session asks of any
// leased singleton the simulator hosts (a shard's master, the scheduler):
// the lease, the probe, the append, the flush and the release of the
// stream st for holder; session steps the session with each answer. It
// reports whether e was one of them.
func sessionIO(w *world, n *node, st *stream, holder string, e effect.Effect, session func(pcore.Input)) bool {
	jr := w.jr
	switch e := e.(type) {
	case pcore.LeaseCall:
		call, ttl := e.Call, e.TTL
		jr.call(n, func() func() {
			state, ok := jr.grantLease(st, holder, ttl)
			return func() {
				ans := pcore.LeaseAnswer{Call: call, State: state}
				if !ok {
					ans.Failure = pcore.FailLeaseHeld
				}
				session(ans)
			}
		}, func() { session(pcore.LeaseAnswer{Call: call, Failure: pcore.FailAway}) })
	case pcore.Probe:
		call := e.Call
		jr.call(n, func() func() { return func() { session(pcore.Probed{Call: call}) } },
			func() { session(pcore.Probed{Call: call, Failure: pcore.FailAway}) })
	case pcore.JournalAppend:
		batch := e.Batch
		jr.call(n, func() func() {
			jr.append(st, &appendReq{from: n, epoch: e.Epoch, first: e.First, events: e.Events, done: func(err error) {
				session(pcore.Appended{Batch: batch, Failure: failureOf(err)})
			}})
			return nil
		}, func() { session(pcore.Appended{Batch: batch, Failure: pcore.FailAway}) })
	case pcore.FlushSoon:
		w.onNode(n, w.e.now, func() { session(pcore.Flush{}) })
	case pcore.Release:
		jr.call(n, func() func() { jr.releaseLease(st, holder); return nil }, func() {})
	default:
		return false
	}
	return true
}
