package sim

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	mcore "github.com/foreman-actors/foreman/actors/master/core"
	pcore "github.com/foreman-actors/foreman/actors/persistence/core"
	"github.com/foreman-actors/foreman/messages"
)

// Lease and master timing of the simulated cluster: short, so that a
// run of a few virtual seconds sees several failovers.
const (
	leaseTTL    = 600 * time.Millisecond
	workTimeout = 800 * time.Millisecond
	maxAttempts = 3
)

// backendHost is a backend node: it hosts the master of every shard its
// membership view places on it. An activation is the persistence
// Session core (lease, epoch, recovery, group commit) around the master
// core, the pair the real backend runs as persistence.Runtime around the
// master actor.
type backendHost struct {
	w    *world
	n    *node
	acts []*activation // [shard]; nil: not hosted
	gen  int
}

func newBackend(w *world, n *node) host { return &backendHost{w: w, n: n} }

// mastersHost is a host that runs masters: a backendHost, or a schedHost,
// which embeds one (with Config.Schedules). Look a host's masters up
// through it, not by asserting *backendHost, which misses the schedHosts.
type mastersHost interface{ masters() *backendHost }

func (b *backendHost) masters() *backendHost { return b }

func (b *backendHost) start() {
	b.acts = make([]*activation, b.w.cfg.Shards)
	b.viewChanged()
}

// viewChanged starts the activations the view now places here and stops
// those it places elsewhere (the cluster's singleton placement).
func (b *backendHost) viewChanged() {
	for s := range b.acts {
		mine := b.w.placement(b.n, s) == b.n
		switch a := b.acts[s]; {
		case mine && a == nil:
			b.activate(s)
		case !mine && a != nil:
			a.stop()
		}
	}
}

func (b *backendHost) deliver(from *messages.PID, id string, msg proto.Message) bool {
	s, ok := shardOfID(id)
	if !ok || s >= len(b.acts) || b.acts[s] == nil {
		return false
	}
	b.acts[s].deliver(from, msg)
	return true
}

func (b *backendHost) deadLetter(string, *messages.PID, proto.Message) {}

// activation is one activation of a shard's master.
type activation struct {
	b      *backendHost
	shard  int
	a      *actor
	st     *stream
	holder string
	sess   *pcore.Session
	m      *mcore.Master
	epoch  int64

	// Replies that wait for the master's Appends (AfterDurable): each
	// waits for the last token issued before it, and leaves only once the
	// session confirms that very token (a token whose batch failed is
	// never confirmed, and its replies never leave).
	lastToken uint64
	pending   map[uint64]uint64 // the runner's token of an Append -> the master's (which need not be unique)
	seq       uint64            // the runner's last token
	held      []heldReply
	halted    bool
	committed bool  // a Confirm came in this session step
	snapSeq   int64 // the last event the newest snapshot covers
}

type heldReply struct {
	token uint64
	to    *messages.PID
	msg   proto.Message
}

func (b *backendHost) activate(s int) {
	b.gen++
	w := b.w
	act := &activation{b: b, shard: s, st: w.jr.stream(masterID(s)), pending: map[uint64]uint64{},
		holder: b.n.name + "/" + masterID(s) + "#" + strconv.Itoa(b.n.inc) + "." + strconv.Itoa(b.gen)}
	act.a = w.newActor(b.n, masterID(s))
	act.a.onFired = act.fired
	act.sess = pcore.NewSession(pcore.Config{LeaseTTL: leaseTTL, RetryMin: 20 * time.Millisecond, RetryMax: 300 * time.Millisecond,
		MaxBatchEvents: 256, Planted: w.planted.Lease})
	act.m = mcore.New(mcore.Config{
		WorkTimeout: workTimeout, WorkerDeadAfter: 2 * time.Second,
		Policy:        mcore.Policy{MaxAttempts: maxAttempts, BackoffBase: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond},
		DoneRetention: time.Hour, DoneLimit: 1 << 20, MaxPayload: 1 << 20, Shard: s, Shards: w.cfg.Shards,
		RecoveryStash: 1000, Planted: w.planted.Master, FairnessWeights: fairWeights(w.cfg.Fair),
		KeyRates: keyRates(w.cfg.Keys),
	})
	b.acts[s] = act
	w.e.tracef(b.n.name, "%s activate %s", masterID(s), act.holder)
	act.session(pcore.Start{})
}

// stop ends the activation: the session writes what it holds and
// releases the lease; the master turns its stash away.
func (act *activation) stop() {
	if act.b.acts[act.shard] == act {
		act.b.acts[act.shard] = nil
	}
	act.master(mcore.Stopping{})
	act.session(pcore.Stop{})
	act.halted = true
}

func (act *activation) live() bool { return act.a.node.up && act.a.node.inc == act.a.inc }

func (act *activation) fired(name string) {
	if strings.HasPrefix(name, "persistence.") {
		act.session(effect.Fired{Name: name})
		return
	}
	if !act.halted {
		act.master(effect.Fired{Name: name})
	}
}

// deliver turns a message into the master core's input.
func (act *activation) deliver(from *messages.PID, msg proto.Message) {
	if act.halted {
		return
	}
	var in any
	switch m := msg.(type) {
	case *messages.Work:
		in = mcore.Submit{From: from, Work: m}
	case *messages.WorkBatch:
		in = mcore.SubmitBatch{From: from, Batch: m}
	case *messages.RegisterWorker:
		in = mcore.Register{From: from, Msg: m}
	case *messages.WorkerRequestsWork:
		in = mcore.RequestWork{From: from, Msg: m}
	case *messages.WorkIsDone:
		in = mcore.Done{From: from, Msg: m}
	case *messages.WorkIsDoneBatch:
		in = mcore.DoneBatch{From: from, Msg: m}
	case *messages.WorkFailed:
		in = mcore.Failed{Msg: m}
	case *messages.DeregisterWorker:
		in = mcore.Deregister{Msg: m}
	case *messages.GetWorkStatus:
		in = mcore.GetStatus{From: from, Msg: m}
	case *messages.DetachWaiter:
		in = mcore.Detach{From: from, Msg: m}
	case *messages.ReadResults:
		act.readResults(from, m)
		return
	default:
		return
	}
	act.master(in)
}

// servingUntil is the Serving input from the session: the lease's serving
// deadline while the session runs, zero otherwise.
func (act *activation) serving() mcore.Serving {
	if act.sess.Phase() != pcore.PhaseRunning {
		return mcore.Serving{RecoveryFailing: act.sess.RecoveryFailing()}
	}
	var until time.Time
	if h := act.sess.Holder(); h != nil {
		until = h.ServingUntil()
	}
	return mcore.Serving{Until: until}
}

// master steps the master core, after telling it the session's serving
// deadline (the runtime's Recovered, read at each message).
func (act *activation) master(in any) {
	if !act.live() {
		return
	}
	now := act.a.now()
	act.run(act.m.Step(now, act.serving()))
	act.run(act.m.Step(now, in))
}

// run carries out the master core's effects.
func (act *activation) run(effs []effect.Effect) {
	effs = append([]effect.Effect(nil), effs...) // the core's slice is reused by its next Step
	for _, e := range effs {
		if !act.live() {
			return
		}
		switch e := e.(type) {
		case effect.Append:
			if act.b.w.cfg.Fair {
				act.b.w.hist.handOuts(act, e.Events) // inv_fair.go
			}
			if act.sess.Phase() != pcore.PhaseRunning {
				if act.b.w.e.tracing() {
					act.b.w.e.tracef(act.a.node.name, "%s append token %d dropped: session %v", act.holder, e.Token, act.sess.Phase())
				}
				continue // the master serves only while running; a stale one writes nothing
			}
			act.seq++
			act.lastToken = act.seq
			act.pending[act.seq] = e.Token
			if act.b.w.e.tracing() {
				act.b.w.e.tracef(act.a.node.name, "%s append #%d (token %d): %d events", act.holder, act.seq, e.Token, len(e.Events))
			}
			act.session(effect.Append{Events: e.Events, Token: act.seq})
		case effect.Reply:
			if m, ok := e.Msg.(*messages.WorkStatusReply); ok {
				// An answer serves at the instant the master decides it,
				// inside or outside its lease; held for an earlier
				// append's durability it leaves later, as one slow in the
				// network arrives later (seed 1001288).
				act.b.w.hist.served(act.st, act.holder, act.epoch, "status "+m.GetWorkId())
			}
			if _, waits := act.pending[act.lastToken]; e.AfterDurable && waits {
				act.held = append(act.held, heldReply{token: act.lastToken, to: e.To, msg: e.Msg})
				if act.b.w.e.tracing() {
					act.b.w.e.tracef(act.a.node.name, "%s holds %s for token %d", act.holder, msgText(e.Msg), act.lastToken)
				}
				continue
			}
			act.send(e.To, e.Msg)
		case effect.Send:
			act.send(e.To, e.Msg)
		case mcore.Publish:
		default:
			act.a.apply([]effect.Effect{e})
		}
	}
}

// send sends for the master and shows the history what it serves.
func (act *activation) send(to *messages.PID, msg proto.Message) {
	h := act.b.w.hist
	switch m := msg.(type) {
	case *messages.Work:
		h.served(act.st, act.holder, act.epoch, "hand-out "+m.GetWorkId())
	case *messages.WorkBundle:
		h.served(act.st, act.holder, act.epoch, "hand-out bundle")
	case *messages.Ack:
		h.acked(m.GetWorkId(), m.GetDuplicateOf())
	case *messages.WorkBatchAck:
		for _, o := range m.GetOutcomes() {
			if o.GetAccepted() {
				h.acked(o.GetWorkId(), o.GetDuplicateOf())
			}
		}
	}
	act.b.w.send(act.a.node, act.a.pid, to, msg)
}

// session steps the persistence session and carries out its effects.
func (act *activation) session(in pcore.Input) {
	if !act.live() {
		return
	}
	effs := act.sess.Step(act.a.now(), in)
	act.committed = false
	for _, e := range effs {
		act.sessionEffect(e)
	}
	if act.committed && !act.halted {
		act.committed = false
		act.master(mcore.Committed{})
		act.maybeSnapshot()
	}
}

func (act *activation) sessionEffect(e effect.Effect) {
	w, n := act.b.w, act.a.node
	if sessionIO(w, n, act.st, act.holder, e, act.session) {
		return
	}
	switch e := e.(type) {
	case pcore.Load:
		act.load(e.Call)
	case pcore.Confirm:
		act.confirm(e.Token, e.RepliesOnly)
	case pcore.Serve:
		act.epoch = e.Epoch
		w.e.tracef(n.name, "%s serves epoch %d from #%d", act.holder, e.Epoch, e.Seq)
		if !act.halted {
			act.master(mcore.Recovered{})
		}
	case pcore.Halt:
		w.e.tracef(n.name, "%s halts: %s", act.holder, e.Reason)
		if !act.halted {
			act.halted = true
			act.m.Step(act.a.now(), mcore.Stopping{})
		}
		if act.b.acts[act.shard] == act {
			act.b.acts[act.shard] = nil
			// The cluster starts the singleton again where the view
			// places it.
			w.onNode(n, w.e.now+100*time.Millisecond, act.b.viewChanged)
		}
	default:
		act.a.apply([]effect.Effect{e})
	}
}

// confirm releases the replies that waited for token and, unless the
// session moved on, steps the master with Durable.
func (act *activation) confirm(token uint64, repliesOnly bool) {
	mtoken := act.pending[token]
	delete(act.pending, token)
	kept := act.held[:0]
	var out []heldReply
	for _, r := range act.held {
		if r.token == token {
			out = append(out, r)
		} else {
			kept = append(kept, r)
		}
	}
	act.held = kept
	for _, r := range out {
		act.send(r.to, r.msg)
	}
	if !repliesOnly && !act.halted {
		act.committed = true
		act.run(act.m.Step(act.a.now(), effect.Durable{Token: mtoken}))
	}
}

// load is the session's Load: AcquireEpoch and the events on the
// journal, Reset the core with a fresh (or restored) state and replay into
// it, then the recovery marker's append (persistence.Runtime's load).
func (act *activation) load(call uint64) {
	w, n, jr := act.b.w, act.a.node, act.b.w.jr
	fail := func(f pcore.Failure) func() { return func() { act.session(pcore.Loaded{Call: call, Failure: f}) } }
	jr.call(n, func() func() {
		w.hist.epochTaken(act.st, act.holder)
		epoch, snap, events, last := jr.acquire(act.st)
		return func() {
			st := mcore.NewWorkState()
			if snap != nil {
				var err error
				if st, err = mcore.RestoreSnapshot(snap); err != nil {
					w.e.tracef(n.name, "%s restore: %v", act.holder, err)
					act.session(pcore.Loaded{Call: call, Failure: pcore.FailRefused})
					return
				}
			}
			// Reset, then replay into the core's state, as the shell does
			// (actors/master's Reset and Replay under persistence.Runtime's
			// load): the state replays with the master's fairness weights,
			// priority aging, key rates and planted bugs set, so a replayed
			// hand-out ends its key's turn as it did when it was decided
			// (TestRecoveryReplaysIntoTheResetState).
			act.m.Reset(st)
			for _, ev := range events {
				if err := act.m.State().Apply(ev); err != nil {
					w.e.tracef(n.name, "%s replay: %v", act.holder, err)
				}
			}
			act.snapSeq = last
			marker := &messages.MasterRecovered{AtUnixNano: act.a.now().UnixNano()}
			jr.call(n, func() func() {
				jr.append(act.st, &appendReq{from: n, epoch: epoch, first: last + 1, events: []proto.Message{marker}, done: func(err error) {
					if err != nil {
						act.session(pcore.Loaded{Call: call, Failure: failureOf(err)})
						return
					}
					_ = act.m.State().Apply(marker)
					act.session(pcore.Loaded{Call: call, Epoch: epoch, LastSeq: last + 1})
				}})
				return nil
			}, fail(pcore.FailAway))
		}
	}, fail(pcore.FailAway))
}

// snapshotEvery is how many events an activation journals between two
// snapshots.
const snapshotEvery = 25

// maybeSnapshot saves a snapshot once snapshotEvery events were written
// since the last and nothing is pending or in flight (persistence/core's
// SnapshotDue), so that the state is the journal's: the next recovery
// restores it and replays only what follows.
func (act *activation) maybeSnapshot() {
	sess := act.sess
	if act.halted || sess.Phase() != pcore.PhaseRunning {
		return
	}
	since := int(sess.DurableSeq() - act.snapSeq)
	inFlight := sess.LastSeq() != sess.DurableSeq()
	if !pcore.SnapshotDue(since, snapshotEvery, false, inFlight) {
		return
	}
	// Held hand-out records first: the snapshot must show only what the
	// journal holds.
	act.master(mcore.Flush{})
	if sess.LastSeq() != sess.DurableSeq() {
		return
	}
	w, n := act.b.w, act.a.node
	snap, seq, epoch := act.m.State().Snapshot(), sess.DurableSeq(), act.epoch
	act.snapSeq = seq
	w.jr.call(n, func() func() { w.jr.saveSnapshot(act.st, epoch, seq, snap); return nil }, func() {})
}

// readResults answers a feed read from the journal model, as the master
// shell does (actors/master/feed.go ReadFeed): the finishing events after
// the cursor up to the last durable one, while the activation serves.
func (act *activation) readResults(from *messages.PID, m *messages.ReadResults) {
	now := act.a.now()
	if act.sess.Phase() != pcore.PhaseRunning || !act.sess.Serving(now) {
		act.send(from, &messages.ResultsPage{NextSeq: m.GetAfterSeq(), Error: "master: recovering"})
		return
	}
	// A feed page answers from what this activation knows, like a status.
	act.b.w.hist.served(act.st, act.holder, act.epoch, "feed read")
	upTo := act.sess.DurableSeq()
	after := m.GetAfterSeq()
	if after > upTo {
		act.send(from, &messages.ResultsPage{Ahead: true, NextSeq: after})
		return
	}
	page := &messages.ResultsPage{NextSeq: after}
	limit := int(m.GetLimit())
	if limit <= 0 {
		limit = 100
	}
	for seq := after + 1; seq <= upTo && seq <= int64(len(act.st.events)); seq++ {
		if e := feedEntryOf(seq, act.st.events[seq-1].msg); e != nil {
			page.Entries = append(page.Entries, e)
		}
		page.NextSeq = seq
		if len(page.Entries) >= limit {
			break
		}
	}
	act.send(from, page)
}

// feedEntryOf is the feed entry of a finishing event (feed.go feedEntry).
func feedEntryOf(seq int64, ev proto.Message) *messages.FeedEntry {
	id, st, res, ok := outcomeOf(ev)
	if !ok {
		return nil
	}
	return &messages.FeedEntry{Seq: seq, WorkId: id, Status: st, Result: res}
}

// failureOf classifies a journal model error for the session.
func failureOf(err error) pcore.Failure {
	switch {
	case err == nil:
		return pcore.FailNone
	case errors.Is(err, errFenced):
		return pcore.FailFenced
	case errors.Is(err, errUnreachable):
		return pcore.FailAway
	default:
		return pcore.FailRefused
	}
}
