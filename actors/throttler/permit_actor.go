package throttler

import (
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/messages"
)

// ThrottleStream returns the journal stream of jobType's throttler:
// "foreman/throttle/" and the type, path-escaped.
func ThrottleStream(jobType string) string { return "foreman/throttle/" + url.PathEscape(jobType) }

// PoolKey names a permit pool: the PID its grants go to (Address, ID) and
// the pool behind it (one per master shard and job type).
type PoolKey struct {
	Address, ID string
	Pool        uint64
}

// PermitObserver hears what a throttler does, for metrics. Its methods run
// on the throttler's goroutine and must not block.
type PermitObserver interface {
	// Granted: n permits of jobType were granted (sent once durable).
	Granted(jobType string, n int)
	// Refused: n permits of jobType were refused (queue full).
	Refused(jobType string, n int)
	// Shape: jobType's throttler now runs at rate (strict or not) with
	// queued permits waiting.
	Shape(jobType string, rate Rate, strict bool, queued int)
}

// PermitOption configures PermitThrottlerProps.
type PermitOption func(*permitConfig)

type permitConfig struct {
	clock    clock.Clock
	log      *slog.Logger
	persist  []persistence.Option
	observer PermitObserver
	core     []PermitCoreOption
}

// WithPermitClock sets the throttler's clock (default clock.Real).
func WithPermitClock(c clock.Clock) PermitOption { return func(cfg *permitConfig) { cfg.clock = c } }

// WithPermitLogger sets the throttler's logger (default: its actor
// system's).
func WithPermitLogger(l *slog.Logger) PermitOption { return func(cfg *permitConfig) { cfg.log = l } }

// WithPermitPersistence passes options to the throttler's persistence
// runtime: in a cluster, persistence.WithLease and WithLeaseGuard, which
// make sure one activation grants at a time.
func WithPermitPersistence(opts ...persistence.Option) PermitOption {
	return func(cfg *permitConfig) { cfg.persist = append(cfg.persist, opts...) }
}

// WithPermitSlices sets how many slices a strict-mode window is granted in
// (default StrictSlices; 0 grants a window's permits as one burst).
func WithPermitSlices(n int) PermitOption {
	return func(cfg *permitConfig) { cfg.core = append(cfg.core, PermitSlices(n)) }
}

// WithPermitObserver reports the throttler's grants, refusals and shape.
func WithPermitObserver(o PermitObserver) PermitOption {
	return func(cfg *permitConfig) { cfg.observer = o }
}

// PermitThrottlerProps returns the props of jobType's throttler, the actor
// every --rate runs: a thin shell around PermitCore (seed 002's FSM over
// permit requests) on the persistence runtime, journaling to
// ThrottleStream(jobType) in j. It answers *messages.PermitRequest with
// *messages.PermitGrant sent to the request's sender, possibly in several
// parts as the rate allows; it takes *messages.PermitUsed (strict mode:
// what became of each permit) without an answer; *messages.ThrottleSetRate with the
// *messages.ThrottleStatus once the new rate is durable; and
// *messages.ThrottleGetStatus with a *messages.ThrottleStatus. rate and
// strict are the node's configured rate (--rate); the journal's run-time
// rate, if any, holds while the configuration stays the same (see Serve).
func PermitThrottlerProps(j persistence.Journal, jobType string, rate Rate, strict bool, opts ...PermitOption) (*actor.Props, error) {
	cfg := permitConfig{clock: clock.Real}
	for _, o := range opts {
		o(&cfg)
	}
	if _, err := NewPermitCore[PoolKey](jobType, rate, strict, cfg.core...); err != nil {
		return nil, err
	}
	popts := append([]persistence.Option{persistence.WithClock(cfg.clock), persistence.WithSnapshotEvery(1000)}, cfg.persist...)
	if cfg.log != nil {
		popts = append(popts, persistence.WithLogger(cfg.log))
	}
	if _, err := persistence.New(j, ThrottleStream(jobType), popts...); err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor {
		c, _ := NewPermitCore[PoolKey](jobType, rate, strict, cfg.core...) // checked above
		rt, _ := persistence.New(j, ThrottleStream(jobType), popts...)
		return &permitActor{core: c, rt: rt, cfg: cfg, pids: map[PoolKey]*actor.PID{}}
	}), nil
}

// permitActor is the shell: it decodes messages, steps the core with the
// clock's time, persists the core's events and sends its grants once they
// are durable, and runs the FSM's timer.
type permitActor struct {
	core *PermitCore[PoolKey]
	rt   *persistence.Runtime
	cfg  permitConfig
	log  *slog.Logger
	self *actor.PID
	root *actor.RootContext
	pids map[PoolKey]*actor.PID // where each pool's grants go

	timer    clock.Timer
	gen      uint64
	periodic bool
	period   time.Duration
}

// permitTick is the FSM's timer firing (see tick).
type permitTick struct {
	gen uint64
	due time.Time
}

// Reset implements persistence.Handler.
func (a *permitActor) Reset(snap *persistence.Snapshot) error {
	a.core.Reset()
	if snap != nil {
		return a.core.Replay(snap.Msg)
	}
	return nil
}

// Replay implements persistence.Handler.
func (a *permitActor) Replay(ev persistence.Event) error { return a.core.Replay(ev.Msg) }

// Snapshot implements persistence.Handler.
func (a *permitActor) Snapshot(int) (proto.Message, bool) { return a.core.Snapshot(), true }

// Receive implements actor.Actor.
func (a *permitActor) Receive(c actor.Context) {
	if a.rt.Handle(c) {
		return
	}
	switch m := c.Message().(type) {
	case *actor.Started:
		a.self, a.root = c.Self(), c.ActorSystem().Root
		a.log = a.cfg.log
		if a.log == nil {
			a.log = c.ActorSystem().Logger()
		}
		a.log = a.log.With("component", "throttler", "job_type", a.core.JobType())
		a.rt.Start(c, a, func(actor.Context) {
			a.apply(a.core.Serve(a.cfg.clock.Now()))
			st := a.core.Status()
			// Where the type's throttler runs is an operator's first
			// question when a rate looks wrong: say so once.
			a.log.Info("throttler started", "rate", st.Rate.String(), "strict", st.Strict,
				"address", c.ActorSystem().Address(), "epoch", a.rt.Epoch())
		})
	case *actor.Stopping:
		a.disarm()
		// The queued asks end with this activation: each waiting pool
		// asks again now, reaching the successor (a backend that joined
		// and took the kind over) at once rather than after its ask
		// times out.
		now := a.cfg.clock.Now()
		for _, k := range a.core.Waiting() {
			if pid := a.pids[k]; pid != nil {
				msg := GrantMessage(nil, now)
				msg.Pool = k.Pool
				a.root.Send(pid, msg)
			}
		}
	case *actor.Restarting:
		a.disarm()
	case *permitTick:
		if m.gen != a.gen {
			return // from a timer stopped or replaced since
		}
		a.timer = nil
		now := a.cfg.clock.Now()
		if !a.serving(now) {
			return
		}
		step := a.core.Tick(now)
		rearm := step.Timer == TimerNone
		a.apply(step)
		if rearm && a.periodic && a.core.Status().State == StateActive {
			// Counted from the due time so that periods do not drift.
			next := m.due.Add(a.period)
			for !next.After(now) {
				next = next.Add(a.period)
			}
			a.arm(next, now)
		}
	case *messages.PermitRequest:
		a.onRequest(c, m)
	case *messages.PermitUsed:
		if m.GetJobType() != a.core.JobType() {
			return
		}
		sender := c.Sender()
		if sender == nil {
			return
		}
		now := a.cfg.clock.Now()
		if a.serving(now) {
			key := PoolKey{Address: sender.GetAddress(), ID: sender.GetId(), Pool: m.GetPool()}
			a.apply(a.core.Used(now, key, UsedReports(m)))
		}
	case *messages.ThrottleSetRate:
		a.onSetRate(c, m)
	case *messages.ThrottleGetStatus:
		c.Respond(a.status(c, ""))
	}
}

// serving reports whether the activation may grant at now, pausing the
// core (its FSM loses its target) when the lease was lost meanwhile.
func (a *permitActor) serving(now time.Time) bool {
	if a.rt.Recovered() {
		return true
	}
	if a.core.Status().Serving {
		a.apply(a.core.Pause(now))
	}
	return false
}

func (a *permitActor) onRequest(c actor.Context, m *messages.PermitRequest) {
	sender := c.Sender()
	if m.GetJobType() != a.core.JobType() {
		if sender != nil {
			c.Send(sender, &messages.PermitGrant{Pool: m.GetPool(), Error: fmt.Sprintf(
				"throttler: this throttler limits job type %q, not %q", a.core.JobType(), m.GetJobType())})
		}
		return
	}
	if sender == nil {
		return // nowhere to send the permits
	}
	key := PoolKey{Address: sender.GetAddress(), ID: sender.GetId(), Pool: m.GetPool()}
	if _, ok := a.pids[key]; !ok {
		a.pids[key] = sender
	}
	now := a.cfg.clock.Now()
	a.serving(now)
	a.apply(a.core.Request(now, key, int(m.GetWant())))
}

func (a *permitActor) onSetRate(c actor.Context, m *messages.ThrottleSetRate) {
	now := a.cfg.clock.Now()
	if !a.serving(now) {
		c.Respond(a.status(c, fmt.Sprintf("throttler %s: this activation is not serving (phase %s); try again", a.core.JobType(), a.rt.Phase())))
		return
	}
	r := Rate{Calls: int(m.GetCalls()), Per: time.Duration(m.GetPerNanos())}
	step, err := a.core.SetRate(now, r, m.GetStrict())
	if err != nil {
		c.Respond(a.status(c, err.Error()))
		return
	}
	a.log.Info("throttler rate changed", "rate", r.String(), "strict", m.GetStrict())
	a.apply(step)
	if s := c.Sender(); s != nil {
		a.rt.Reply(s, a.status(c, "")) // leaves once the rate is durable
	}
}

func (a *permitActor) status(c actor.Context, errText string) *messages.ThrottleStatus {
	st := a.core.Status()
	return &messages.ThrottleStatus{
		JobType: st.JobType, Calls: int64(st.Rate.Calls), PerNanos: int64(st.Rate.Per), Strict: st.Strict,
		Address: c.ActorSystem().Address(), Queued: int64(st.Queued), Granted: st.Granted, Refused: st.Refused, Error: errText,
	}
}

// apply performs a core step: its events first, and its grants once they
// are durable.
func (a *permitActor) apply(step PermitStep[PoolKey]) {
	type send struct {
		to  *actor.PID
		msg *messages.PermitGrant
	}
	var sends []send
	granted := 0
	for _, g := range step.Grants {
		pid := a.pids[g.To]
		granted += len(g.Permits)
		if pid == nil {
			continue
		}
		msg := GrantMessage(g.Permits, time.Time{})
		msg.Pool = g.To.Pool
		sends = append(sends, send{to: pid, msg: msg})
	}
	if len(step.Events) > 0 {
		root := a.root
		a.rt.Persist(step.Events, func() {
			for _, s := range sends {
				root.Send(s.to, s.msg)
			}
		})
	} else {
		for _, s := range sends {
			a.root.Send(s.to, s.msg)
		}
	}
	for _, k := range step.Refused {
		if pid := a.pids[k]; pid != nil {
			a.root.Send(pid, &messages.PermitGrant{Pool: k.Pool, Error: fmt.Sprintf(
				"throttler %s: %v: %d permits wait; ask again later", a.core.JobType(), ErrQueueFull, a.core.Status().Queued)})
		}
	}
	switch step.Timer {
	case TimerStartPeriodic:
		now := a.cfg.clock.Now()
		a.periodic, a.period = true, step.TimerAfter
		first := step.TimerAfter
		if step.TimerFirst > 0 {
			first = step.TimerFirst
		}
		a.arm(now.Add(first), now)
	case TimerStartOnce:
		now := a.cfg.clock.Now()
		a.periodic = false
		a.arm(now.Add(step.TimerAfter), now)
	case TimerStop:
		a.disarm()
	case TimerNone:
	}
	if o := a.cfg.observer; o != nil {
		st := a.core.Status()
		if granted > 0 {
			o.Granted(st.JobType, granted)
		}
		if n := len(step.Refused); n > 0 {
			o.Refused(st.JobType, n)
		}
		o.Shape(st.JobType, st.Rate, st.Strict, st.Queued)
	}
}

// arm (re)starts the timer to send a tick to self at due.
func (a *permitActor) arm(due, now time.Time) {
	a.disarm()
	gen, self, root := a.gen, a.self, a.root
	a.timer = a.cfg.clock.AfterFunc(due.Sub(now), func() { root.Send(self, &permitTick{gen: gen, due: due}) })
}

// disarm stops the timer and invalidates any tick already on its way.
func (a *permitActor) disarm() {
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	a.gen++
}
