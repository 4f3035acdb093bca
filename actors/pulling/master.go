package pulling

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/messages"
)

// StartEpic asks a master to run Epic. The master answers the sender with
// [*EpicStarted] or, while another Epic runs, with [*CurrentlyBusy]; when
// the Epic ends it sends [*EpicDone] to the same sender. Send it with
// Request (so the master knows the sender) or use [Run]. StartEpic is a
// local message: the Epic lives in the master's process.
type StartEpic[T any] struct {
	Epic Epic[T]
}

// EpicStarted answers StartEpic: the Epic runs under number Epic.
type EpicStarted struct {
	Epic uint64
}

// CurrentlyBusy answers a StartEpic sent while Epic is running. The master
// refuses rather than queues: the caller decides when to retry (on EpicDone).
// Err wraps [ErrBusy].
type CurrentlyBusy struct {
	Epic uint64
	Err  error
}

// EpicDone tells the sender of StartEpic that the Epic ended: every item was
// confirmed (or failed, see Stats.Failed), or Err says why it was aborted.
type EpicDone struct {
	Stats Stats
	Err   error
}

// Work is an item sent to a worker in the master's own actor system, as a Go
// value. Workers on other nodes receive *messages.PullingWork instead.
type Work[T any] struct {
	ID      ItemID
	Attempt int
	Item    T
}

// Internal messages of the master.
type (
	fetched[T any] struct {
		epic  uint64
		items []T
		err   error
	}
	expireTick  struct{}
	resumeFetch struct{}
)

// MasterProps returns the props of a work pulling master for items of type
// T. Options: WithBatchSize, WithMaxWindow, WithAckTimeout, WithMaxAttempts,
// WithFetchRetry, WithCodec (needed for workers on other nodes), WithClock,
// WithLogger. A bad option returns an error wrapping [ErrInvalidConfig].
func MasterProps[T any](opts ...Option) (*actor.Props, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	codec, err := codecFor[T](cfg)
	if err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor {
		st, _ := NewState[T](cfg.state) // validated above
		return &master[T]{cfg: cfg, codec: codec, state: st, pids: make(map[WorkerID]*actor.PID)}
	}), nil
}

type master[T any] struct {
	cfg   config
	codec Codec[T]
	state *State[T]
	log   *slog.Logger

	self      *actor.PID
	root      *actor.RootContext
	address   string
	pids      map[WorkerID]*actor.PID
	epic      Epic[T]
	requester *actor.PID

	ctx    context.Context //nolint:containedctx // the actor's lifetime: cancelled on Stopping so a running Epic.Next ends; never a caller's context
	cancel context.CancelFunc
	timer  clock.Timer // expiry timer; nil when not armed
	retry  clock.Timer
}

func workerID(pid *actor.PID) WorkerID { return WorkerID(pid.Address + "/" + pid.Id) }

func (m *master[T]) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case *actor.Started:
		m.self, m.root, m.address = c.Self(), c.ActorSystem().Root, c.ActorSystem().Address()
		m.log = m.cfg.logger.With("component", "pulling_master", "pid", c.Self().String())
		m.ctx, m.cancel = context.WithCancel(context.Background())
	case *actor.Stopping:
		m.cancel()
		m.stopTimers()
		m.apply(c, m.state.Abort(ErrStopped))
	case *StartEpic[T]:
		m.startEpic(c, msg)
	case *messages.PullingRegister:
		m.register(c, msg)
	case *messages.PullingGimmeWork:
		if w := m.known(pids.Actor(msg.GetWorker())); w != "" {
			m.apply(c, m.state.Request(w, int(msg.GetCredit()), m.cfg.clock.Now()))
		}
	case *messages.PullingWorkDone:
		if w := m.known(pids.Actor(msg.GetWorker())); w != "" {
			m.apply(c, m.state.Done(w, ItemID(msg.GetItemId()), msg.GetError(), int(msg.GetCredit()), m.cfg.clock.Now()))
		}
	case *actor.Terminated:
		w := workerID(msg.GetWho())
		if _, ok := m.pids[w]; ok {
			delete(m.pids, w)
			m.log.Info("worker gone", "worker", string(w), "why", msg.GetWhy().String())
			m.apply(c, m.state.WorkerGone(w, m.cfg.clock.Now()))
		}
	case *messages.PullingGetProgress:
		c.Respond(ProgressMessage(m.state.Stats()))
	case *fetched[T]:
		m.apply(c, m.state.Fetched(msg.epic, msg.items, msg.err, m.cfg.clock.Now()))
		if msg.err != nil && msg.epic == m.state.Epic() {
			m.log.Warn("epic fetch failed", "epic", msg.epic, "error", msg.err)
		}
	case expireTick:
		m.timer = nil
		m.apply(c, m.state.Expire(m.cfg.clock.Now()))
	case resumeFetch:
		m.retry = nil
		m.apply(c, m.state.ResumeFetch(m.cfg.clock.Now()))
	}
}

func (m *master[T]) known(pid *actor.PID) WorkerID {
	if pid == nil {
		return ""
	}
	w := workerID(pid)
	if _, ok := m.pids[w]; !ok {
		m.log.Debug("message from unregistered worker ignored", "worker", string(w))
		return ""
	}
	return w
}

func (m *master[T]) startEpic(c actor.Context, msg *StartEpic[T]) {
	total := int64(-1)
	if sized, ok := msg.Epic.(Sized); ok {
		total = int64(sized.Remaining())
	}
	eff, err := m.state.StartEpic(total, m.cfg.clock.Now())
	if err != nil {
		m.log.Info("epic refused", "running_epic", m.state.Epic())
		c.Respond(&CurrentlyBusy{Epic: m.state.Epic(), Err: err})
		return
	}
	m.epic, m.requester = msg.Epic, c.Sender()
	m.log.Info("epic started", "epic", m.state.Epic(), "total", total, "workers", len(m.pids))
	c.Respond(&EpicStarted{Epic: m.state.Epic()})
	m.apply(c, eff)
}

func (m *master[T]) register(c actor.Context, msg *messages.PullingRegister) {
	pid := pids.Actor(msg.GetWorker())
	if pid == nil {
		pid = c.Sender()
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
		// A fresh PID: protoactor caches the process in a PID, and a PID
		// shared by two actor systems in one process would route wrongly.
		pid = actor.NewPID(pid.Address, pid.Id)
		m.pids[w] = pid
		c.Watch(pid)
		m.log.Info("worker registered", "worker", string(w), "window", msg.GetWindow())
	}
	m.apply(c, m.state.Register(w, int(msg.GetWindow()), m.cfg.clock.Now()))
}

var workAvailable = &messages.PullingWorkAvailable{}

// apply performs the effects of a state call.
func (m *master[T]) apply(c actor.Context, eff Effects[T]) {
	for {
		var failed []Delivery[T]
		for _, d := range eff.Deliver {
			if err := m.deliver(c, d); err != nil {
				m.log.Error("cannot deliver item", "item", uint64(d.ID), "worker", string(d.Worker), "error", err)
				failed = append(failed, d)
			}
		}
		for _, w := range eff.Announce {
			if pid, ok := m.pids[w]; ok {
				c.Send(pid, workAvailable)
			}
		}
		if eff.Fetch > 0 {
			m.fetch(m.state.Epic(), eff.Fetch)
		}
		if eff.RetryFetch && m.retry == nil {
			m.retry = m.cfg.clock.AfterFunc(m.cfg.fetchRetry, func() { m.root.Send(m.self, resumeFetch{}) })
		}
		for _, id := range eff.Dropped {
			m.log.Warn("item failed too often, given up", "item", uint64(id), "max_attempts", m.cfg.state.MaxAttempts)
		}
		if eff.Finished {
			m.finished(eff.Err)
		}
		if len(failed) == 0 {
			break
		}
		eff = Effects[T]{}
		now := m.cfg.clock.Now()
		for _, d := range failed {
			next := m.state.Done(d.Worker, d.ID, "undeliverable", 0, now)
			eff.Deliver = append(eff.Deliver, next.Deliver...)
			eff.Announce = append(eff.Announce, next.Announce...)
			eff.Dropped = append(eff.Dropped, next.Dropped...)
			eff.Fetch = max(eff.Fetch, next.Fetch)
			eff.RetryFetch = eff.RetryFetch || next.RetryFetch
			if next.Finished {
				eff.Finished, eff.Err = true, next.Err
			}
		}
	}
	m.armTimer()
}

func (m *master[T]) deliver(c actor.Context, d Delivery[T]) error {
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

func (m *master[T]) fetch(epicNo uint64, n int) {
	epic, ctx, root, self := m.epic, m.ctx, m.root, m.self
	go func() {
		items, err := safeNext(ctx, epic, n)
		root.Send(self, &fetched[T]{epic: epicNo, items: items, err: err})
	}()
}

func safeNext[T any](ctx context.Context, epic Epic[T], n int) (items []T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("pulling: epic panicked: %v", r)
		}
	}()
	return epic.Next(ctx, n)
}

func (m *master[T]) finished(err error) {
	st := m.state.Stats()
	if err != nil {
		m.log.Warn("epic aborted", "epic", st.Epic, "error", err, "confirmed", st.Confirmed)
	} else {
		m.log.Info("epic done", "epic", st.Epic, "confirmed", st.Confirmed, "redelivered", st.Redelivered, "failed", st.Failed)
	}
	if m.requester != nil {
		m.root.Send(m.requester, &EpicDone{Stats: st, Err: err})
	}
	m.epic, m.requester = nil, nil
	if m.retry != nil {
		m.retry.Stop()
		m.retry = nil
	}
}

func (m *master[T]) armTimer() {
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

func (m *master[T]) stopTimers() {
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	if m.retry != nil {
		m.retry.Stop()
		m.retry = nil
	}
}

// ProgressMessage converts Stats to the wire form answered to
// PullingGetProgress.
func ProgressMessage(s Stats) *messages.PullingProgress {
	return &messages.PullingProgress{
		EpicId:      s.Epic,
		Running:     s.Running,
		HandedOut:   s.HandedOut,
		Confirmed:   s.Confirmed,
		Redelivered: s.Redelivered,
		Failed:      s.Failed,
		InFlight:    uint64(s.InFlight),
		Remaining:   s.Remaining,
		Workers:     uint32(s.Workers),
	}
}

// StatsFromProgress converts a PullingProgress back to Stats.
func StatsFromProgress(p *messages.PullingProgress) Stats {
	return Stats{
		Epic:        p.GetEpicId(),
		Running:     p.GetRunning(),
		HandedOut:   p.GetHandedOut(),
		Confirmed:   p.GetConfirmed(),
		Redelivered: p.GetRedelivered(),
		Failed:      p.GetFailed(),
		InFlight:    int(p.GetInFlight()),
		Remaining:   p.GetRemaining(),
		Workers:     int(p.GetWorkers()),
	}
}
