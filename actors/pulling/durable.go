package pulling

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/messages"
)

// StreamPrefix is the start of a durable master's journal stream name:
// "pulling/<epic name>".
const StreamPrefix = "pulling/"

// maxPending caps the messages a durable master keeps while it recovers
// (registrations, starts, progress asks); the rest are dropped, and their
// senders ask again (workers re-register every register interval).
const maxPending = 4096

// DurableMasterProps returns the props of a durable work pulling master:
// it owns one named Epic and journals its [Position] in j (stream
// "pulling/<name>": events PullingEpicBegun, PullingConfirmed,
// PullingEpicFinished and a PullingMasterRecovered marker per activation;
// snapshot PullingEpicSnapshot), so that a new activation, on this node or
// another, resumes the Epic where it was instead of at its start.
//
// The Epic begins on *messages.PullingStartEpic, answered with a
// *messages.PullingProgress once the start is durable; a start of a
// running or finished Epic is answered the same way and changes nothing
// (a start of an Epic that failed resumes it). Every activation of a begun
// Epic opens it with open and seeks it to the journaled position itself.
// Workers register and pull as with [MasterProps]; the wire item id is the
// item's place in the Epic. A worker's confirmation is journaled before
// that worker is handed its next item (persist, then effect), so after a
// crash at most the items the workers held (their windows) are handed out
// again. *messages.PullingGetProgress is answered with the durable
// progress (finished, done and error set). A journal write that fails stops
// the activation (its view of the items out is ahead of the journal): the
// next activation resumes from the journal, as after a crash.
//
// Options: WithEpicName or WithEpicNameFrom (one is required),
// WithPersistence (the runtime's options: lease, fence check, ...), and the
// master options of [MasterProps]. A bad option returns an error wrapping
// [ErrInvalidConfig].
func DurableMasterProps[T any](j persistence.Journal, open EpicOpener[T], opts ...Option) (*actor.Props, error) {
	if j == nil {
		return nil, fmt.Errorf("%w: nil journal", ErrInvalidConfig)
	}
	if open == nil {
		return nil, fmt.Errorf("%w: nil EpicOpener", ErrInvalidConfig)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.epicName == "" && cfg.epicNameOf == nil {
		return nil, fmt.Errorf("%w: a durable master needs WithEpicName or WithEpicNameFrom", ErrInvalidConfig)
	}
	codec, err := codecFor[T](cfg)
	if err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor {
		st, _ := NewState[T](cfg.state) // validated above
		return &durableMaster[T]{
			cfg: cfg, codec: codec, j: j, open: open, state: st,
			pids: make(map[WorkerID]*actor.PID), cursors: make(map[ItemID][]byte), total: -1,
		}
	}), nil
}

// Internal messages of the durable master.
type (
	opened[T any] struct {
		epic  SeekEpic[T]
		total int64
		err   error
	}
	fetchedAt[T any] struct {
		epic  uint64
		items []Positioned[T]
		err   error
	}
	reopen  struct{}
	pending struct {
		sender *actor.PID
		msg    any
	}
)

type durableMaster[T any] struct {
	cfg   config
	codec Codec[T]
	j     persistence.Journal
	open  EpicOpener[T]
	name  string
	rt    *persistence.Runtime
	log   *slog.Logger

	// Journaled state (replayed by every activation).
	begun       bool
	finished    bool
	finErr      string
	pos         Position
	activations uint64

	// This activation.
	state   *State[T]
	self    *actor.PID
	root    *actor.RootContext
	address string
	pids    map[WorkerID]*actor.PID
	epic    SeekEpic[T] // nil until opened
	opening bool
	serving bool              // recovered once: a second recovery means a journal write failed
	total   int64             // items remaining after the seek, beyond-prefix ones excluded; -1 unknown
	seq     uint64            // place in the Epic of the last item fetched
	cursors map[ItemID][]byte // cursor after each item fetched and not finished
	waiting []pending         // kept while recovering

	ctx    context.Context //nolint:containedctx // the actor's lifetime: cancelled on Stopping so a running Epic call ends; never a caller's context
	cancel context.CancelFunc
	timer  clock.Timer
	retry  clock.Timer
}

func (m *durableMaster[T]) Receive(c actor.Context) {
	if m.rt != nil && m.rt.Handle(c) {
		return
	}
	switch msg := c.Message().(type) {
	case *actor.Started:
		m.started(c)
	case *actor.Stopping:
		if m.cancel != nil {
			m.cancel()
		}
		m.stopTimers()
		m.state.Abort(ErrStopped)
		m.closeEpic()
	case *messages.PullingRegister, *messages.PullingStartEpic, *messages.PullingGetProgress:
		if m.rt == nil || !m.rt.Recovered() {
			if len(m.waiting) < maxPending {
				m.waiting = append(m.waiting, pending{sender: c.Sender(), msg: msg})
			}
			return
		}
		m.command(c, c.Sender(), msg)
	case *messages.PullingGimmeWork:
		if w := m.known(pids.Actor(msg.GetWorker())); w != "" {
			m.handle(c, m.state.Request(w, int(msg.GetCredit()), m.cfg.clock.Now()))
		}
	case *messages.PullingWorkDone:
		if w := m.known(pids.Actor(msg.GetWorker())); w != "" {
			m.handle(c, m.state.Done(w, ItemID(msg.GetItemId()), msg.GetError(), int(msg.GetCredit()), m.cfg.clock.Now()))
		}
	case *actor.Terminated:
		w := workerID(msg.GetWho())
		if _, ok := m.pids[w]; ok {
			delete(m.pids, w)
			m.log.Info("worker gone", "worker", string(w), "why", msg.GetWhy().String())
			m.handle(c, m.state.WorkerGone(w, m.cfg.clock.Now()))
		}
	case *opened[T]:
		m.onOpened(c, msg)
	case *fetchedAt[T]:
		m.onFetched(c, msg)
	case reopen:
		m.retry = nil
		m.resume()
	case expireTick:
		m.timer = nil
		m.handle(c, m.state.Expire(m.cfg.clock.Now()))
	case resumeFetch:
		m.retry = nil
		m.handle(c, m.state.ResumeFetch(m.cfg.clock.Now()))
	}
}

func (m *durableMaster[T]) started(c actor.Context) {
	m.self, m.root, m.address = c.Self(), c.ActorSystem().Root, c.ActorSystem().Address()
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.name = m.cfg.epicName
	if m.cfg.epicNameOf != nil {
		m.name = m.cfg.epicNameOf(c)
	}
	m.log = m.cfg.logger.With("component", "pulling_durable_master", "epic", m.name, "pid", c.Self().String())
	if m.name == "" {
		m.log.Error("durable master without an epic name; stopping")
		c.Stop(c.Self())
		return
	}
	var popts []persistence.Option
	if m.cfg.persistence != nil {
		popts = m.cfg.persistence(m.name)
	}
	popts = append([]persistence.Option{persistence.WithLogger(m.cfg.logger), persistence.WithClock(m.cfg.clock)}, popts...)
	rt, err := persistence.New(m.j, StreamPrefix+m.name, popts...)
	if err != nil {
		m.log.Error("durable master cannot start its persistence runtime; stopping", "error", err)
		c.Stop(c.Self())
		return
	}
	m.rt = rt
	rt.Start(c, m, m.recovered)
}

// Reset is the journal's side of recovery: see persistence.Handler.
func (m *durableMaster[T]) Reset(snap *persistence.Snapshot) error {
	m.begun, m.finished, m.finErr, m.pos, m.activations = false, false, "", Position{}, 0
	if snap == nil {
		return nil
	}
	s, ok := snap.Msg.(*messages.PullingEpicSnapshot)
	if !ok {
		return fmt.Errorf("pulling: snapshot of type %T, want PullingEpicSnapshot", snap.Msg)
	}
	beyond := make([]ItemPosition, 0, len(s.GetBeyond()))
	for _, it := range s.GetBeyond() {
		beyond = append(beyond, ItemPosition{Seq: it.GetSeq(), Cursor: it.GetCursor()})
	}
	m.begun, m.finished, m.finErr, m.activations = s.GetBegun(), s.GetFinished(), s.GetError(), s.GetActivations()
	m.pos = RestorePosition(s.GetPrefix(), s.GetPrefixCursor(), beyond)
	return nil
}

// Replay applies one journaled event: see persistence.Handler.
func (m *durableMaster[T]) Replay(ev persistence.Event) error {
	switch e := ev.Msg.(type) {
	case *messages.PullingEpicBegun:
		m.begun, m.finished, m.finErr = true, false, ""
	case *messages.PullingConfirmed:
		for _, it := range e.GetItems() {
			m.pos.Finish(it.GetSeq(), it.GetCursor())
		}
	case *messages.PullingEpicFinished:
		m.finished, m.finErr = true, e.GetError()
	case *messages.PullingMasterRecovered:
		m.activations++
	default:
		return fmt.Errorf("pulling: unknown event %T at seq %d", ev.Msg, ev.Seq)
	}
	return nil
}

// Snapshot returns the journaled state: see persistence.Handler.
func (m *durableMaster[T]) Snapshot(int) (proto.Message, bool) {
	prefix, cursor := m.pos.Prefix()
	s := &messages.PullingEpicSnapshot{
		Name: m.name, Begun: m.begun, Finished: m.finished, Error: m.finErr,
		Prefix: prefix, PrefixCursor: cursor, Activations: m.activations,
	}
	for _, it := range m.pos.Items() {
		s.Beyond = append(s.Beyond, &messages.PullingItemPosition{Seq: it.Seq, Cursor: it.Cursor})
	}
	return s, true
}

// RecoveryEvent is the marker each activation journals: see
// persistence.RecoveryMarker.
func (m *durableMaster[T]) RecoveryEvent(now time.Time) proto.Message {
	return &messages.PullingMasterRecovered{AtUnixNano: now.UnixNano()}
}

func (m *durableMaster[T]) recovered(c actor.Context) {
	if m.serving {
		// The runtime recovered again after a failed journal write: the
		// journal is behind what this activation's State believes (items
		// it counts as confirmed are not in the Position). Rather than
		// patch the State, stop: a fresh activation resumes from the
		// journal (in a cluster, the next lookup activates it; route
		// workers look again every register interval).
		m.log.Error("a journal write failed; stopping so that a fresh activation resumes from the journal")
		c.Stop(c.Self())
		return
	}
	m.serving = true
	prefix, _ := m.pos.Prefix()
	m.log.Info("recovered", "begun", m.begun, "finished", m.finished, "prefix", prefix,
		"finished_items", m.pos.Count(), "activation", m.activations)
	waiting := m.waiting
	m.waiting = nil
	for _, p := range waiting {
		m.command(c, p.sender, p.msg)
	}
	if m.begun && !m.finished {
		m.resume()
	}
}

// command handles what waits for recovery.
func (m *durableMaster[T]) command(c actor.Context, sender *actor.PID, msg any) {
	switch msg := msg.(type) {
	case *messages.PullingRegister:
		m.register(c, sender, msg)
	case *messages.PullingGetProgress:
		m.rt.Reply(sender, m.progress()) // never shows what a crash could undo
	case *messages.PullingStartEpic:
		if msg.GetName() != m.name {
			m.rt.Reply(sender, &messages.PullingProgress{Name: m.name,
				Error: fmt.Sprintf("pulling: start of epic %q sent to the master of %q", msg.GetName(), m.name)})
			return
		}
		if m.begun && (!m.finished || m.finErr == "") {
			m.rt.Reply(sender, m.progress()) // idempotent: answered once durable
			return
		}
		m.begun, m.finished, m.finErr = true, false, ""
		m.rt.Persist([]proto.Message{&messages.PullingEpicBegun{Name: m.name, AtUnixNano: m.cfg.clock.Now().UnixNano()}},
			m.resume)
		m.rt.Reply(sender, m.progress())
	}
}

func (m *durableMaster[T]) progress() *messages.PullingProgress {
	p := ProgressMessage(m.state.Stats())
	p.Name, p.Finished, p.Done, p.Error = m.name, m.pos.Count(), m.finished, m.finErr
	p.Running = m.begun && !m.finished
	if m.finished {
		p.Remaining = 0
	}
	return p
}

// resume opens the Epic and seeks it to the journaled position, off the
// actor's goroutine.
func (m *durableMaster[T]) resume() {
	if m.opening || m.epic != nil || !m.begun || m.finished {
		return
	}
	m.opening = true
	open, name, ctx, root, self := m.open, m.name, m.ctx, m.root, m.self
	_, cursor := m.pos.Prefix()
	beyond := len(m.pos.Beyond())
	go func() {
		res := &opened[T]{total: -1}
		defer func() {
			if r := recover(); r != nil {
				res.err = fmt.Errorf("pulling: opening epic %q panicked: %v", name, r)
			}
			root.Send(self, res)
		}()
		epic, err := open(ctx, name)
		if err == nil && epic == nil {
			err = errors.New("the opener returned no epic")
		}
		if err != nil {
			res.err = fmt.Errorf("pulling: open epic %q: %w", name, err)
			return
		}
		if err := epic.Seek(ctx, cursor); err != nil {
			if cl, ok := epic.(io.Closer); ok {
				_ = cl.Close() // the seek's error is the one to report
			}
			res.err = fmt.Errorf("pulling: seek epic %q: %w", name, err)
			return
		}
		res.epic = epic
		if sized, ok := epic.(Sized); ok {
			res.total = max(0, int64(sized.Remaining()-beyond))
		}
	}()
}

func (m *durableMaster[T]) onOpened(c actor.Context, msg *opened[T]) {
	m.opening = false
	if msg.err != nil {
		m.log.Warn("cannot open the epic; retrying", "error", msg.err, "retry_in", m.cfg.fetchRetry)
		if m.retry == nil {
			root, self := m.root, m.self
			m.retry = m.cfg.clock.AfterFunc(m.cfg.fetchRetry, func() { root.Send(self, reopen{}) })
		}
		return
	}
	if m.ctx.Err() != nil || m.finished {
		if cl, ok := msg.epic.(io.Closer); ok {
			_ = cl.Close() // nothing will be read from it
		}
		return
	}
	m.epic = msg.epic
	m.seq, _ = m.pos.Prefix()
	m.total = msg.total
	eff, err := m.state.StartEpic(m.total, m.cfg.clock.Now())
	if err != nil { // cannot happen: one Epic per activation
		m.log.Error("epic refused by the state", "error", err)
		return
	}
	m.log.Info("epic resumed", "from_item", m.seq+1, "skipping", len(m.pos.Beyond()), "remaining", m.total, "workers", len(m.pids))
	m.handle(c, eff)
}

func (m *durableMaster[T]) onFetched(c actor.Context, msg *fetchedAt[T]) {
	now := m.cfg.clock.Now()
	if msg.err != nil || len(msg.items) == 0 {
		if msg.err != nil && msg.epic == m.state.Epic() {
			m.log.Warn("epic fetch failed", "error", msg.err)
		}
		m.handle(c, m.state.Fetched(msg.epic, nil, msg.err, now))
		return
	}
	if msg.epic != m.state.Epic() {
		return
	}
	items := make([]T, 0, len(msg.items))
	ids := make([]ItemID, 0, len(msg.items))
	for _, it := range msg.items {
		m.seq++
		if m.pos.Finished(m.seq) {
			continue // finished by an earlier activation
		}
		items = append(items, it.Item)
		ids = append(ids, ItemID(m.seq))
		m.cursors[ItemID(m.seq)] = it.Cursor
	}
	if len(items) == 0 {
		m.handle(c, m.state.SkipFetched(msg.epic, now))
		return
	}
	m.handle(c, m.state.FetchedAt(msg.epic, items, ids, nil, now))
}

func (m *durableMaster[T]) known(pid *actor.PID) WorkerID {
	if pid == nil {
		return ""
	}
	w := workerID(pid)
	if _, ok := m.pids[w]; !ok {
		return ""
	}
	return w
}

func (m *durableMaster[T]) register(c actor.Context, sender *actor.PID, msg *messages.PullingRegister) {
	pid := pids.Actor(msg.GetWorker())
	if pid == nil {
		pid = sender
	}
	if pid == nil {
		m.log.Warn("registration without worker pid ignored")
		return
	}
	if pid.Address != m.address && m.codec == nil {
		m.log.Warn("remote worker refused: give the master WithCodec", "worker", pid.String(), "error", ErrNoCodec)
		return
	}
	w := workerID(pid)
	if _, ok := m.pids[w]; !ok {
		pid = actor.NewPID(pid.Address, pid.Id) // see master.register
		m.pids[w] = pid
		c.Watch(pid)
		m.log.Debug("worker registered", "worker", string(w), "window", msg.GetWindow())
	}
	m.handle(c, m.state.Register(w, int(msg.GetWindow()), m.cfg.clock.Now()))
}

// handle journals what eff makes final (finished items, the Epic's end) and
// performs the rest once that is durable: a worker whose confirmation is
// in eff gets its next item only after the confirmation is in the journal.
// Fetches are not observable and start at once.
func (m *durableMaster[T]) handle(c actor.Context, eff Effects[T]) {
	if eff.Fetch > 0 && m.epic != nil {
		m.fetch(m.state.Epic(), eff.Fetch)
	}
	if eff.RetryFetch && m.retry == nil {
		root, self := m.root, m.self
		m.retry = m.cfg.clock.AfterFunc(m.cfg.fetchRetry, func() { root.Send(self, resumeFetch{}) })
	}
	var events []proto.Message
	if len(eff.Completed) > 0 {
		done := &messages.PullingConfirmed{Items: make([]*messages.PullingItemPosition, 0, len(eff.Completed))}
		for _, id := range eff.Completed {
			cursor := m.cursors[id]
			delete(m.cursors, id)
			if m.pos.Finish(uint64(id), cursor) {
				done.Items = append(done.Items, &messages.PullingItemPosition{Seq: uint64(id), Cursor: cursor})
			}
		}
		if len(done.Items) > 0 {
			events = append(events, done)
		}
	}
	if eff.Finished && !errors.Is(eff.Err, ErrStopped) {
		m.finished = true
		if eff.Err != nil {
			m.finErr = eff.Err.Error()
		}
		events = append(events, &messages.PullingEpicFinished{Error: m.finErr})
	}
	perform := func() { m.perform(c, eff) }
	if len(events) > 0 {
		m.rt.Persist(events, perform)
	} else {
		m.rt.Defer(perform)
	}
	m.armTimer()
}

// perform sends what handle decided, once it is durable.
func (m *durableMaster[T]) perform(c actor.Context, eff Effects[T]) {
	now := m.cfg.clock.Now()
	for _, d := range eff.Deliver {
		if err := m.deliver(c, d); err != nil {
			m.log.Error("cannot deliver item", "item", uint64(d.ID), "worker", string(d.Worker), "error", err)
			m.handle(c, m.state.Done(d.Worker, d.ID, "undeliverable: "+err.Error(), 0, now))
		}
	}
	for _, w := range eff.Announce {
		if pid, ok := m.pids[w]; ok {
			c.Send(pid, workAvailable)
		}
	}
	for _, id := range eff.Dropped {
		m.log.Warn("item failed too often, given up", "item", uint64(id), "max_attempts", m.cfg.state.MaxAttempts)
	}
	if eff.Finished && !errors.Is(eff.Err, ErrStopped) {
		st := m.state.Stats()
		if eff.Err != nil {
			m.log.Warn("epic aborted", "error", eff.Err, "finished_items", m.pos.Count())
		} else {
			m.log.Info("epic done", "finished_items", m.pos.Count(), "redelivered", st.Redelivered, "failed", st.Failed)
		}
		m.closeEpic()
	}
}

func (m *durableMaster[T]) deliver(c actor.Context, d Delivery[T]) error {
	pid, ok := m.pids[d.Worker]
	if !ok {
		return fmt.Errorf("pulling: worker %s unknown", d.Worker)
	}
	if pid.Address == m.address {
		c.Send(pid, &Work[T]{ID: d.ID, Attempt: d.Attempt, Item: d.Item})
		return nil
	}
	payload, err := encodeItem(m.codec, d.Item)
	if err != nil {
		return err
	}
	c.Send(pid, &messages.PullingWork{ItemId: uint64(d.ID), Attempt: uint32(d.Attempt), Payload: payload})
	return nil
}

func (m *durableMaster[T]) fetch(epicNo uint64, n int) {
	epic, ctx, root, self := m.epic, m.ctx, m.root, m.self
	go func() {
		res := &fetchedAt[T]{epic: epicNo}
		defer func() {
			if r := recover(); r != nil {
				res.items, res.err = nil, fmt.Errorf("pulling: epic panicked: %v", r)
			}
			root.Send(self, res)
		}()
		res.items, res.err = epic.NextAt(ctx, n)
	}()
}

func (m *durableMaster[T]) closeEpic() {
	if cl, ok := m.epic.(io.Closer); ok {
		if err := cl.Close(); err != nil {
			m.log.Warn("closing the epic failed", "error", err)
		}
	}
	m.epic = nil
}

func (m *durableMaster[T]) armTimer() {
	if m.timer != nil {
		return
	}
	deadline, ok := m.state.NextDeadline()
	if !ok {
		return
	}
	self, root := m.self, m.root
	m.timer = m.cfg.clock.AfterFunc(max(0, deadline.Sub(m.cfg.clock.Now())), func() { root.Send(self, expireTick{}) })
}

func (m *durableMaster[T]) stopTimers() {
	for _, t := range []clock.Timer{m.timer, m.retry} {
		if t != nil {
			t.Stop()
		}
	}
	m.timer, m.retry = nil, nil
}
