package persistence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/persistence/core"
)

// Handler is the persistent actor's side of recovery and snapshots. The
// runtime calls it on the actor's goroutine.
type Handler interface {
	// Reset discards the actor's journaled state and restores it from snap,
	// the stream's newest snapshot, or to the empty state when snap is nil.
	// It is called at the start of every recovery, including the re-sync
	// after a failed append.
	Reset(snap *Snapshot) error
	// Replay applies one stored event during recovery, in sequence order.
	Replay(ev Event) error
	// Snapshot returns the state after every event persisted so far (its
	// sequence number is the last one), or ok false to skip this snapshot,
	// e.g. when it would be larger than the since events it replaces.
	Snapshot(since int) (msg proto.Message, ok bool)
}

// IdleSnapshotter is implemented by a Handler that wants a snapshot once the
// actor goes quiet. With WithFenceCheck, a runtime that persisted nothing
// for a whole fence-check interval, and holds no unwritten or undurable
// event, offers IdleSnapshot the since events written after the last
// snapshot when they are at least WithSnapshotEvery's (so at most once per
// quiet spell: since is 0 after a snapshot). A
// busy actor may decline Snapshot to keep its cost amortised; a quiet one
// has the time to take it, so that a restart after a burst replays little.
type IdleSnapshotter interface {
	IdleSnapshot(since int) (msg proto.Message, ok bool)
}

// Weigher is implemented by a Handler whose events differ in what they cost
// to replay: an event that records several facts at once (the acceptance of
// a batch of works, say) counts as that many toward WithSnapshotEvery and
// the since given to Snapshot and IdleSnapshot, so that grouping events does
// not let recovery replay more than the snapshot interval promises. Without
// it every event counts one.
type Weigher interface {
	// EventWeight returns how many events msg counts as (at least 1).
	EventWeight(msg proto.Message) int
}

// RecoveryMarker is implemented by a Handler whose every activation journals
// an event when it has recovered. The event is replayed to the Handler like
// any other. With WithFenceCheck, an older activation that sees an event it
// did not write stops: this is how a stale cluster singleton learns that a
// newer one took over even when it never writes again.
type RecoveryMarker interface {
	RecoveryEvent(now time.Time) proto.Message
}

// AfterDurable is implemented by a Handler that wants to act once per
// confirmed append, after that append's then callbacks and deferred
// replies have run: e.g. tell waiting workers about all the work a group
// commit made durable, in one go and without a message round trip through
// the mailbox. It runs on the actor's goroutine.
type AfterDurable interface {
	AfterDurable(c actor.Context)
}

// Phase is where a Runtime is in its life (the phases and their String are
// core's, so that the runtime and a simulator's session share them).
type Phase = core.Phase

// The phases of a Runtime: see core.PhaseRecovering and the rest.
const (
	PhaseRecovering      = core.PhaseRecovering
	PhaseWaitingForLease = core.PhaseWaitingForLease
	PhaseRunning         = core.PhaseRunning
	PhaseStopped         = core.PhaseStopped
)

// Runtime gives one actor Akka-style persistence over a [Journal]: recovery
// from snapshot plus replay under a new epoch, persist-then-effect with group
// commit, snapshots, fencing and recovery retries. It belongs to one actor
// and every method must be called on that actor's goroutine.
//
// The actor's decisions stay in its own pure state type. The contract:
//
//   - Apply an event to the decision state just before you Persist it, so
//     the next decision sees it (a duplicate is recognised even while the
//     first is being written) and a snapshot taken by Persist includes it.
//   - Make nothing observable until it is durable: state others can see,
//     replies and publishes go in Persist's then, Reply or Defer, which run
//     only once every event persisted before them is durable.
//
// Events of all messages handled while the previous append was being
// written share one group commit; then callbacks and replies run in
// sequence order. A journal write error never lets a then or a reply run: the
// runtime drops the unconfirmed state and recovers from the journal (Handler
// Reset and Replay), as a restart would. A fenced append or snapshot stops
// the actor. With WithLease, the activation that serves also holds a lease
// on the stream in the journal, and another waits for it to lapse or be
// released before it takes an epoch.
type Runtime struct {
	cfg    config
	j      Journal
	stream string

	// Set by Start.
	h           Handler
	marker      RecoveryMarker
	weigher     Weigher
	after       AfterDurable
	onRecovered func(c actor.Context)
	log         *slog.Logger
	root        *actor.RootContext
	self        *actor.PID

	phase      Phase
	gen        int64 // bumped on every (re)recovery: messages of an older one are ignored
	epoch      int64
	nextSeq    int64 // sequence number of the next event
	durableSeq int64 // highest sequence number known durable
	building   *batch
	flushSent  bool
	inflight   []*batch // appended, not yet confirmed, in order
	barrier    []deferred

	sinceSnap   int // events since the last snapshot
	pendingSnap *Snapshot
	pendingBig  bool // pendingSnap is big (WithBigSnapshotLease)
	// flushedSinceTick: a batch was flushed since the last fence tick (the
	// actor is not idle; see IdleSnapshotter).
	flushedSinceTick bool
	snapInFlight     bool

	retryTimer clock.Timer
	fenceTimer clock.Timer
	// backoff is the wait before the next recovery attempt, or, while the
	// journal is away, before the next cheap probe (probeJournal).
	backoff core.Backoff

	// The lease (WithLease). holder names this activation in the journal.
	holder        string
	leaseHeld     bool         // granted, and not released since: Stop releases it
	waitingFor    string       // what the last lease wait was logged for (a holder, or guardWait)
	waitingSince  time.Time    // when this activation began to wait for the lease; zero: not waiting
	keeper        *leaseKeeper // renews the lease since it was granted; nil: none
	deadlineTimer clock.Timer  // fires at the keeper's deadline

	// wg counts the goroutines the runtime starts (snapshots, fence
	// checks, lease keepers); Stop waits for them.
	wg sync.WaitGroup
	// appending counts the appends handed to the journal and not yet
	// called back; Stop waits for them (bounded by the journal timeout).
	appending sync.WaitGroup
}

// batch is one journal append and what waits for it.
type batch struct {
	events  []Event
	thens   []func()
	replies []reply
	lastSeq int64
	bytes   int
}

type reply struct {
	to  *actor.PID
	msg proto.Message
}

// deferred waits for the events up to seq, appended before it was made.
type deferred struct {
	seq   int64
	then  func()
	reply reply
}

// Messages the runtime sends its actor. rt and gen tie each to one recovery
// of one runtime: one from an earlier recovery, or from the runtime of an
// actor instance a supervisor replaced, is ignored.
type (
	flushMsg struct {
		rt  *Runtime
		gen int64
	}
	appendDone struct {
		rt      *Runtime
		gen     int64
		lastSeq int64
		err     error
	}
	retryMsg struct {
		rt  *Runtime
		gen int64
	}
	fenceTick struct {
		rt  *Runtime
		gen int64
	}
	fenceResult struct {
		rt    *Runtime
		gen   int64
		from  int64 // nextSeq when the check began
		other bool  // an event at or after from exists
		err   error
	}
	snapshotDone struct {
		rt  *Runtime
		gen int64
		seq int64
		err error
	}
	leaseLost struct { // another holder took the lease
		rt  *Runtime
		gen int64
		err error
	}
	leaseCut struct { // the lease guard reported the node cut off
		rt  *Runtime
		gen int64
	}
	leaseExpiry struct { // the lease's local deadline may have passed
		rt  *Runtime
		gen int64
	}
	probeTick struct { // time to probe the journal again
		rt  *Runtime
		gen int64
	}
	probeResult struct {
		rt  *Runtime
		gen int64
		err error
	}
)

const (
	// guardWait is what waitingFor holds while the lease guard keeps the
	// runtime from taking the lease (holder names contain '#').
	guardWait = "(lease guard)"
)

// New returns a runtime for stream in j. It does nothing until Start.
func New(j Journal, stream string, opts ...Option) (*Runtime, error) {
	if j == nil {
		return nil, fmt.Errorf("%w: journal is nil", ErrInvalidOption)
	}
	if stream == "" {
		return nil, fmt.Errorf("%w: stream name is empty; give each persistent actor its own stream", ErrInvalidOption)
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Runtime{cfg: cfg, j: j, stream: stream}, nil
}

// Start recovers the actor's state: it takes a new epoch (fencing every older
// activation), hands h the newest snapshot and replays the events after it,
// journals h's RecoveryEvent if h is a RecoveryMarker, and then calls
// onRecovered (may be nil). Call it from the actor's *actor.Started.
//
// Recovery blocks the actor, so messages wait in its mailbox meanwhile. If
// the journal is unavailable, Start logs it and retries once a cheap probe
// of the journal is answered (WithRecoveryRetry); the
// actor stays PhaseRecovering and should refuse commands until then. With
// WithLease it first takes the lease; while another activation holds it the
// actor is PhaseWaitingForLease, not Recovered, and should refuse commands
// the same way.
func (r *Runtime) Start(c actor.Context, h Handler, onRecovered func(c actor.Context)) {
	r.h, r.onRecovered = h, onRecovered
	r.marker, _ = h.(RecoveryMarker)
	r.weigher, _ = h.(Weigher)
	r.after, _ = h.(AfterDurable)
	r.root, r.self = c.ActorSystem().Root, c.Self()
	r.log = r.cfg.logger
	if r.log == nil {
		r.log = c.ActorSystem().Logger()
	}
	r.log = r.log.With("component", "persistence", "stream", r.stream, "pid", r.self.GetAddress()+"/"+r.self.GetId())
	// Unique per activation, not per PID: a restarted process can reuse a
	// PID's id, and must not renew the lease of the one that died.
	r.holder = fmt.Sprintf("%s/%s#%016x", r.self.GetAddress(), r.self.GetId(), rand.Uint64())
	r.recover(c)
}

// Phase returns the runtime's phase.
func (r *Runtime) Phase() Phase { return r.phase }

// RecoveryFailing reports whether the last recovery attempt failed (the
// journal is unavailable, or holds what cannot be replayed) and the runtime
// is waiting to try again: an actor should turn requests away then, rather
// than hold them for a recovery that may take long.
func (r *Runtime) RecoveryFailing() bool { return r.phase == PhaseRecovering && r.backoff.Failing() }

// Recovered reports whether the runtime is PhaseRunning and, with
// WithLease, may serve on its lease at this instant: it is false from the
// lease's local deadline on, before the actor has even heard of it, so that
// an actor that checks Recovered before each decision (a hand-out, a status
// answer) never decides while another activation may hold the lease.
func (r *Runtime) Recovered() bool { return r.phase == PhaseRunning && r.leaseLive() }

// Epoch returns the epoch of the current activation.
func (r *Runtime) Epoch() int64 { return r.epoch }

// LastSeq returns the sequence number of the last event persisted (durable
// or not).
func (r *Runtime) LastSeq() int64 { return r.nextSeq - 1 }

// DurableSeq returns the highest sequence number known durable.
func (r *Runtime) DurableSeq() int64 { return r.durableSeq }

// Handle processes the runtime's own messages and reports whether msg was
// one. Call it first in the actor's Receive. It also stops the runtime's
// timers and waits for its goroutines on *actor.Stopping and
// *actor.Restarting (and reports false, so the actor sees those too).
func (r *Runtime) Handle(c actor.Context) bool {
	switch m := c.Message().(type) {
	case *flushMsg:
		if m.rt == r && m.gen == r.gen {
			r.flushSent = false
			r.flush()
		}
	case *appendDone:
		if m.rt == r && m.gen == r.gen {
			r.onAppendDone(c, m)
		}
	case *retryMsg:
		if m.rt == r && m.gen == r.gen && (r.phase == PhaseRecovering || r.phase == PhaseWaitingForLease) {
			r.recover(c)
		}
	case *probeTick:
		if m.rt == r && m.gen == r.gen && r.phase == PhaseRecovering {
			r.probeJournal()
		}
	case *probeResult:
		if m.rt == r && m.gen == r.gen && r.phase == PhaseRecovering {
			r.onProbe(c, m.err)
		}
	case *leaseLost:
		if m.rt == r && m.gen == r.gen && r.phase == PhaseRunning {
			r.fenced(c, m.err)
		}
	case *leaseCut:
		if m.rt == r && m.gen == r.gen && r.phase == PhaseRunning {
			r.cutOff(c)
		}
	case *leaseExpiry:
		if m.rt == r && m.gen == r.gen && r.phase == PhaseRunning {
			r.onLeaseExpiry(c)
		}
	case *fenceTick:
		if m.rt == r && m.gen == r.gen && r.phase == PhaseRunning {
			r.idleSnapshot()
			r.checkFence()
		}
	case *fenceResult:
		if m.rt == r && m.gen == r.gen && r.phase == PhaseRunning {
			r.onFenceResult(c, m)
		}
	case *snapshotDone:
		if m.rt == r && m.gen == r.gen {
			r.onSnapshotDone(c, m)
		}
	case *actor.Stopping, *actor.Restarting:
		r.Stop()
		return false
	default:
		return false
	}
	return true
}

// Stop stops the runtime's timers and waits for the goroutines it started.
// Events the actor decided before it was stopped are still written: the
// open batch is handed to the journal (the flush the runtime queued would
// land behind the stop), and Stop waits, at most the journal timeout, for
// every append in flight, whose replies then leave; then callbacks are
// dropped. Last, it releases the lease (WithLease) so another activation
// can take over at once: after the appends, so that none of this one's
// writes lands after the successor took its epoch. Stop is idempotent; the
// actor's Stopping calls it through Handle.
func (r *Runtime) Stop() {
	if r.phase == PhaseRunning && r.building != nil {
		r.flush()
	}
	r.phase = PhaseStopped
	r.gen++
	r.stopTimers()
	r.wg.Wait() // the lease keeper has ended: no renewal follows the release
	r.waitAppends()
	r.releaseLease()
}

// waitAppends waits for the appends in flight, at most the journal timeout.
func (r *Runtime) waitAppends() {
	done := make(chan struct{})
	go func() {
		r.appending.Wait()
		close(done)
	}()
	t := r.cfg.clock.NewTimer(r.cfg.journalTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C():
		r.log.Warn("stopped before the journal confirmed the last appends", "timeout", r.cfg.journalTimeout)
	}
}

// Persist adds events to the current group commit, numbered after every
// event persisted before, and runs then (may be nil) on the actor's
// goroutine once they and everything before them are durable. Apply the
// events to the actor's decision state yourself, before the call (a full
// batch is flushed, and may be snapshotted, inside it). It panics unless the
// runtime is PhaseRunning: check Recovered before deciding.
func (r *Runtime) Persist(events []proto.Message, then func()) {
	if r.phase != PhaseRunning {
		panic(fmt.Sprintf("persistence: Persist while %s; check Recovered first", r.phase))
	}
	if len(events) == 0 {
		r.Defer(then)
		return
	}
	if r.building == nil {
		r.building = &batch{}
	}
	for _, ev := range events {
		r.building.events = append(r.building.events, Event{Seq: r.nextSeq, Msg: ev})
		r.building.bytes += proto.Size(ev)
		r.nextSeq++
	}
	if then != nil {
		r.building.thens = append(r.building.thens, then)
	}
	if core.BatchFull(len(r.building.events), r.building.bytes, r.cfg.maxBatchEvents, r.cfg.maxBatchBytes) {
		r.flush()
		return
	}
	if !r.flushSent {
		// The flush runs after the messages already in the mailbox, so
		// everything they persist goes into one append.
		r.flushSent = true
		r.root.Send(r.self, &flushMsg{rt: r, gen: r.gen})
	}
}

// Reply sends msg to to, with the actor as sender, once every event
// persisted so far is durable; at once if nothing is pending. A reply that
// waits for the open group commit leaves from the journal's goroutine as
// soon as the commit is durable, without queueing behind the actor's
// mailbox; msg must not be modified after the call. A nil to is ignored.
func (r *Runtime) Reply(to *actor.PID, msg proto.Message) {
	if to == nil {
		return
	}
	rep := reply{to: to, msg: msg}
	switch {
	case r.building != nil:
		r.building.replies = append(r.building.replies, rep)
	case len(r.inflight) > 0:
		r.barrier = append(r.barrier, deferred{seq: r.inflight[len(r.inflight)-1].lastSeq, reply: rep})
	default:
		r.send(rep)
	}
}

// Defer runs then on the actor's goroutine once every event persisted so far
// is durable; at once if nothing is pending. Use it for answers that read
// the state (a status query), so they never show what a crash could undo.
func (r *Runtime) Defer(then func()) {
	if then == nil {
		return
	}
	switch {
	case r.building != nil:
		r.building.thens = append(r.building.thens, then)
	case len(r.inflight) > 0:
		r.barrier = append(r.barrier, deferred{seq: r.inflight[len(r.inflight)-1].lastSeq, then: then})
	default:
		then()
	}
}

func (r *Runtime) send(rep reply) {
	r.root.RequestWithCustomSender(rep.to, rep.msg, r.self)
}

// recover reads the journal back through the Handler, after taking the
// lease (WithLease). On failure it retries with backoff; a fenced journal,
// or a lease another activation took meanwhile, stops the actor.
func (r *Runtime) recover(c actor.Context) {
	r.gen++
	r.phase = PhaseRecovering
	r.building, r.flushSent, r.inflight, r.barrier = nil, false, nil, nil
	r.pendingSnap, r.snapInFlight = nil, false
	r.stopTimers()
	start := r.cfg.clock.Now()
	if r.cfg.leaseTTL > 0 {
		wait, err := r.takeLease()
		if err != nil {
			r.retryRecovery(fmt.Errorf("persistence: take the lease of %q: %w", r.stream, err))
			return
		}
		if wait > 0 {
			r.backoff.ProbeLed = false // the journal answered
			if r.yieldLease(c) {
				return
			}
			r.phase = PhaseWaitingForLease
			r.retryAfter(wait)
			return
		}
		if now := r.cfg.clock.Now(); r.keeper != nil && !r.keeper.live(now) {
			// Granted, but the answer came back (or this goroutine got to
			// it) only after the lease it granted could have lapsed:
			// another activation may hold it by now, and the epoch taken
			// next would fence that rightful holder (the simulator's seed
			// 8355). The grant counts for nothing; take the lease again.
			r.retryRecovery(fmt.Errorf("persistence: the lease of %q was granted, but the answer was handled %v after the call, when it could have lapsed; taking it again",
				r.stream, now.Sub(start)))
			return
		}
	}
	if err := r.loadKeepingLease(); err != nil {
		if errors.Is(err, ErrFenced) || errors.Is(err, ErrLeaseHeld) {
			r.fenced(c, err)
			return
		}
		r.retryRecovery(err)
		return
	}
	r.backoff = core.Backoff{}
	r.phase = PhaseRunning
	r.log.Info("recovered", "epoch", r.epoch, "seq", r.durableSeq, "took", r.cfg.clock.Since(start))
	r.armFenceCheck()
	r.armLease()
	if r.onRecovered != nil {
		r.onRecovered(c)
	}
}

// retryRecovery logs a failed recovery and retries it after the backoff.
// The lease is not renewed meanwhile: an activation that cannot recover
// (e.g. a journal holding events only a newer version knows) must not keep
// another from serving.
//
// When the journal did not answer (not a refusal that says what is wrong:
// ErrRecovery, ErrUnknownType, ErrInvalid, ErrClosed), the wait is not the
// backoff but cheap probes of the journal (probeJournal), at most
// maxProbeEvery apart, and the recovery is retried as soon as one is
// answered: a journal back after an outage of seconds is used within a
// fraction of a second, not at the next step of a backoff grown to
// seconds while it was away (issue 34 item 13). Unless the failed recovery
// was itself started by a successful probe: the probe then does not tell
// whether recovery would work, and the backoff bounds the retries.
func (r *Runtime) retryRecovery(err error) {
	r.stopKeeper()
	probe, wait := r.backoff.Failed(classify(err), r.cfg.retryMin, r.cfg.retryMax)
	if probe {
		r.log.Error("recovery failed; retrying as soon as the journal answers", "error", err, "probe_every", wait)
		r.armProbe(wait)
		return
	}
	r.log.Error("recovery failed; retrying", "error", err, "retry_in", wait)
	r.retryAfter(wait)
}

// maxProbeEvery is the longest wait between two probes of a journal that
// does not answer.
const maxProbeEvery = core.MaxProbeEvery

// classify tells the core why a journal call failed: the journal did not
// answer (FailAway), or refused it for what it holds or how it was called.
func classify(err error) core.Failure {
	switch {
	case err == nil:
		return core.FailNone
	case errors.Is(err, ErrFenced):
		return core.FailFenced
	case errors.Is(err, ErrLeaseHeld):
		return core.FailLeaseHeld
	}
	for _, refusal := range []error{ErrRecovery, ErrUnknownType, ErrInvalid, ErrClosed} {
		if errors.Is(err, refusal) {
			return core.FailRefused
		}
	}
	return core.FailAway
}

// armProbe probes the journal after d, on the injected clock.
func (r *Runtime) armProbe(d time.Duration) {
	gen := r.gen
	r.retryTimer = r.cfg.clock.AfterFunc(d, func() { r.root.Send(r.self, &probeTick{rt: r, gen: gen}) })
}

// probeJournal asks the journal, off the actor's goroutine, for the events
// of the stream past the largest sequence number: one indexed read that
// finds nothing, and for a journal on a server a connection (PostgreSQL's
// reader pool pings or reconnects). It is bounded by maxProbeEvery's
// multiple, not the journal timeout, so that a journal that hangs rather
// than refuses is asked again soon.
func (r *Runtime) probeJournal() {
	j, stream, gen, root, self := r.j, r.stream, r.gen, r.root, r.self
	timeout := min(r.cfg.journalTimeout, 4*maxProbeEvery)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		err := j.Load(ctx, stream, math.MaxInt64, func(Event) error { return nil })
		root.Send(self, &probeResult{rt: r, gen: gen, err: err})
	}()
}

// onProbe retries the recovery at once when the journal answered the
// probe, and probes again after the probe delay when it did not.
func (r *Runtime) onProbe(c actor.Context, err error) {
	if err != nil {
		r.log.Debug("the journal is still away", "error", err, "probe_in", r.backoff.Probe)
		r.armProbe(r.backoff.ProbeFailed(r.cfg.retryMin, r.cfg.retryMax))
		return
	}
	r.log.Info("the journal answers again; recovering")
	r.backoff.ProbeLed = true
	r.recover(c)
}

// retryAfter recovers again after d, on the injected clock.
func (r *Runtime) retryAfter(d time.Duration) {
	gen := r.gen
	r.retryTimer = r.cfg.clock.AfterFunc(d, func() { r.root.Send(r.self, &retryMsg{rt: r, gen: gen}) })
}

func (r *Runtime) load() error {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.journalTimeout)
	defer cancel()
	epoch, lastSeq, err := r.j.AcquireEpoch(ctx, r.stream)
	if err != nil {
		return fmt.Errorf("persistence: acquire epoch of %q: %w", r.stream, err)
	}
	snap, ok, err := r.j.LoadSnapshot(ctx, r.stream)
	if err != nil {
		return fmt.Errorf("persistence: load snapshot of %q: %w", r.stream, err)
	}
	var seq int64
	var from *Snapshot
	if ok {
		from, seq = &snap, snap.Seq
	}
	if err := r.h.Reset(from); err != nil {
		return fmt.Errorf("%w: stream %q: snapshot at seq %d: %w", ErrRecovery, r.stream, seq, err)
	}
	snapSeq, extra := seq, 0 // extra: the replayed events' weight beyond one each
	err = r.j.Load(ctx, r.stream, seq+1, func(ev Event) error {
		if ev.Seq != seq+1 {
			return fmt.Errorf("%w: stream %q: event %d follows %d (a gap)", ErrRecovery, r.stream, ev.Seq, seq)
		}
		seq = ev.Seq
		extra += r.weightOf(ev.Msg) - 1
		return r.h.Replay(ev)
	})
	if err != nil {
		return fmt.Errorf("persistence: load %q from seq %d: %w", r.stream, snapSeq+1, err)
	}
	if seq < lastSeq {
		return fmt.Errorf("%w: stream %q: last event is %d but load ended at %d", ErrRecovery, r.stream, lastSeq, seq)
	}
	if r.marker != nil {
		ev := Event{Seq: seq + 1, Msg: r.marker.RecoveryEvent(r.cfg.clock.Now())}
		if err := r.j.Append(ctx, r.stream, epoch, []Event{ev}); err != nil {
			return fmt.Errorf("persistence: append the recovery marker to %q: %w", r.stream, err)
		}
		if err := r.h.Replay(ev); err != nil {
			return fmt.Errorf("persistence: apply the recovery marker of %q: %w", r.stream, err)
		}
		seq++
	}
	r.epoch = epoch
	r.durableSeq = seq
	r.nextSeq = seq + 1
	r.sinceSnap = int(seq-snapSeq) + extra
	return nil
}

// weightOf returns how many events msg counts as toward a snapshot (see
// Weigher).
func (r *Runtime) weightOf(msg proto.Message) int {
	if r.weigher == nil {
		return 1
	}
	return max(r.weigher.EventWeight(msg), 1)
}

// fenced stops the actor at once, without writing the open batch: another
// activation took the stream (ErrFenced) or the lease (ErrLeaseHeld).
func (r *Runtime) fenced(c actor.Context, err error) {
	if errors.Is(err, ErrLeaseHeld) {
		r.leaseHeld = false
		r.log.Error("another activation took the lease; stopping", "error", err)
	} else {
		r.log.Error("fenced by a newer activation; stopping", "error", err)
	}
	r.halt(c)
}

// halt stops the runtime and the actor without writing the open batch.
func (r *Runtime) halt(c actor.Context) {
	r.phase = PhaseStopped
	r.gen++
	r.stopTimers()
	c.Stop(c.Self())
}

// stopTimers stops the runtime's timers and its lease keeper (without
// waiting for the keeper's last call; Stop does).
func (r *Runtime) stopTimers() {
	for _, t := range []clock.Timer{r.retryTimer, r.fenceTimer, r.deadlineTimer} {
		if t != nil {
			t.Stop()
		}
	}
	r.retryTimer, r.fenceTimer, r.deadlineTimer = nil, nil, nil
	r.stopKeeper()
}

// flush hands the open batch to the journal.
func (r *Runtime) flush() {
	b := r.building
	if b == nil {
		return
	}
	r.building = nil
	b.lastSeq = b.events[len(b.events)-1].Seq
	r.inflight = append(r.inflight, b)
	gen, last := r.gen, b.lastSeq
	replies := b.replies // frozen: never changed after the flush
	r.appending.Add(1)
	r.j.AppendAsync(r.stream, r.epoch, b.events, func(err error) {
		defer r.appending.Done()
		if err == nil {
			// Durable: the replies (built by the actor and never changed)
			// leave now rather than queue behind the actor's mailbox. This
			// touches no actor state.
			for _, rep := range replies {
				r.root.RequestWithCustomSender(rep.to, rep.msg, r.self)
			}
		}
		r.root.Send(r.self, &appendDone{rt: r, gen: gen, lastSeq: last, err: err})
	})
	if r.weigher == nil {
		r.sinceSnap += len(b.events)
	} else {
		for _, ev := range b.events {
			r.sinceSnap += r.weightOf(ev.Msg)
		}
	}
	r.flushedSinceTick = true
	if core.SnapshotDue(r.sinceSnap, r.cfg.snapshotEvery, r.pendingSnap != nil, r.snapInFlight) {
		if msg, ok := r.h.Snapshot(r.sinceSnap); ok {
			r.pendingSnap = &Snapshot{Seq: b.lastSeq, Msg: msg}
			r.pendingBig = core.BigSnapshot(r.sinceSnap, r.cfg.bigSnapshot)
			r.sinceSnap = 0
		}
	}
}

func (r *Runtime) onAppendDone(c actor.Context, m *appendDone) {
	if m.err != nil {
		if errors.Is(m.err, ErrFenced) {
			r.fenced(c, m.err)
			return
		}
		// Memory is ahead of the journal: drop it (nothing unconfirmed is
		// observed) and read the journal back, as a restart would.
		r.log.Error("journal append failed; recovering from the journal", "error", m.err, "seq", m.lastSeq)
		r.recover(c)
		return
	}
	r.durableSeq = max(r.durableSeq, m.lastSeq)
	gen0 := r.gen
	for len(r.inflight) > 0 && r.inflight[0].lastSeq <= r.durableSeq {
		b := r.inflight[0]
		r.inflight[0] = nil
		r.inflight = r.inflight[1:]
		gen := r.gen
		for _, then := range b.thens {
			then()
			if r.gen != gen {
				return // a then stopped the actor or the runtime
			}
		}
	}
	n := 0
	for n < len(r.barrier) && r.barrier[n].seq <= r.durableSeq {
		d := r.barrier[n]
		r.barrier[n] = deferred{}
		n++
		if d.then != nil {
			d.then()
		} else {
			r.send(d.reply)
		}
	}
	r.barrier = r.barrier[n:]
	if r.after != nil && r.gen == gen0 {
		r.after.AfterDurable(c)
	}
	if r.pendingSnap != nil && r.pendingSnap.Seq <= r.durableSeq {
		r.saveSnapshot(*r.pendingSnap)
		r.pendingSnap = nil
	}
}

// idleSnapshot offers an IdleSnapshotter a snapshot when nothing was flushed
// since the previous fence tick and every event is durable.
func (r *Runtime) idleSnapshot() {
	busy := r.flushedSinceTick
	r.flushedSinceTick = false
	is, ok := r.h.(IdleSnapshotter)
	if !ok || !core.IdleSnapshotDue(core.Quiet{
		Flushed: busy, Since: r.sinceSnap, Every: r.cfg.snapshotEvery,
		Pending: r.pendingSnap != nil, InFlight: r.snapInFlight,
		Unwritten: r.building != nil || len(r.inflight) > 0 || r.durableSeq != r.nextSeq-1,
	}) {
		return
	}
	msg, ok := is.IdleSnapshot(r.sinceSnap)
	if !ok {
		return
	}
	r.pendingBig = core.BigSnapshot(r.sinceSnap, r.cfg.bigSnapshot)
	r.sinceSnap = 0
	r.saveSnapshot(Snapshot{Seq: r.durableSeq, Msg: msg})
}

// saveSnapshot stores snap and deletes the events it covers, off the actor's
// goroutine (the snapshot's message is never modified).
func (r *Runtime) saveSnapshot(snap Snapshot) {
	r.snapInFlight = true
	j, stream, epoch, gen, retain := r.j, r.stream, r.epoch, r.gen, r.cfg.retainEvents
	var keeper *leaseKeeper
	if r.pendingBig {
		keeper = r.keeper // nil without a lease
	}
	hold := r.cfg.journalTimeout
	r.offActor(func(ctx context.Context) any {
		if keeper != nil {
			keeper.holdFor(ctx, hold)
			defer keeper.release()
		}
		err := j.SaveSnapshot(ctx, stream, epoch, snap)
		if upTo := snap.Seq - retain; err == nil && upTo > 0 {
			err = j.DeleteEvents(ctx, stream, epoch, upTo)
		}
		return &snapshotDone{rt: r, gen: gen, seq: snap.Seq, err: err}
	})
}

// offActor runs call on a goroutine of its own, bounded by the journal
// timeout and counted in wg, and sends its result to the actor. call must
// not touch the actor's state.
func (r *Runtime) offActor(call func(ctx context.Context) any) {
	timeout, root, self := r.cfg.journalTimeout, r.root, r.self
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		root.Send(self, call(ctx))
	}()
}

func (r *Runtime) onSnapshotDone(c actor.Context, m *snapshotDone) {
	r.snapInFlight = false
	switch {
	case errors.Is(m.err, ErrFenced):
		r.fenced(c, m.err)
	case m.err != nil:
		r.log.Warn("snapshot failed; will retry after more events", "error", m.err, "seq", m.seq)
	default:
		r.log.Debug("snapshot saved", "seq", m.seq)
	}
}

func (r *Runtime) armFenceCheck() {
	if r.cfg.fenceCheck <= 0 {
		return
	}
	gen := r.gen
	r.fenceTimer = r.cfg.clock.AfterFunc(r.cfg.fenceCheck, func() { r.root.Send(r.self, &fenceTick{rt: r, gen: gen}) })
}

// checkFence looks, off the actor's goroutine, for an event this activation
// did not write.
func (r *Runtime) checkFence() {
	j, stream, from, gen := r.j, r.stream, r.nextSeq, r.gen
	r.offActor(func(ctx context.Context) any {
		errFound := errors.New("found")
		err := j.Load(ctx, stream, from, func(Event) error { return errFound })
		res := &fenceResult{rt: r, gen: gen, from: from, other: errors.Is(err, errFound)}
		if !res.other {
			res.err = err
		}
		return res
	})
}

func (r *Runtime) onFenceResult(c actor.Context, m *fenceResult) {
	// If the actor persisted since the check began, the event found may be
	// its own: inconclusive (a stale writer is fenced by the journal anyway).
	if m.other && r.nextSeq == m.from {
		r.fenced(c, fmt.Errorf("%w: the journal holds event %d, written by a newer activation", ErrFenced, m.from))
		return
	}
	if m.err != nil {
		r.log.Debug("fence check could not read the journal", "error", m.err)
	}
	r.armFenceCheck()
}
