package throttler

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/clock"
)

// Props returns the props of a throttler actor that delivers at most
// rate to its target, validating rate and opts. Options: all of them; see
// WithMode, WithBurst, WithMaxQueue, WithOverflow, WithClock, WithLogger and
// WithTarget.
//
// The queue lives in the actor: if the actor stops or restarts, the
// messages still queued are lost (as in seed 002 and Akka's version).
func Props(rate Rate, opts ...Option) (*actor.Props, error) {
	cfg, err := newConfig(defaultConfig(), opts)
	if err != nil {
		return nil, err
	}
	if _, err := NewFSM[*actor.PID, envelope](rate, opts...); err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor {
		f, err := NewFSM[*actor.PID, envelope](rate, opts...)
		if err != nil {
			panic(err) // unreachable: the same arguments were validated above
		}
		return &throttlerActor{fsm: f, cfg: cfg, clock: cfg.clock, logger: cfg.logger}
	}), nil
}

// throttlerActor is the thin shell around FSM: it decodes messages, calls
// the FSM with the clock's time and performs the effects.
type throttlerActor struct {
	fsm    *FSM[*actor.PID, envelope]
	cfg    config
	clock  clock.Clock
	logger *slog.Logger

	self *actor.PID
	root *actor.RootContext

	// The timer. Its callback runs outside the actor and only sends a tick
	// with the generation it was armed with; everything else is owned by
	// the actor's goroutine.
	timer    clock.Timer
	gen      uint64
	periodic bool          // ModeTimer: re-arm after each tick
	period   time.Duration // ModeTimer: the timer's period
}

// Receive implements actor.Actor.
func (a *throttlerActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.self, a.root = c.Self(), c.ActorSystem().Root
		a.logger = a.logger.With("component", "throttler", "pid", a.self.Id)
		a.logger.Info("throttler started", "rate", a.fsm.Rate().String(), "mode", a.fsm.Mode().String(),
			"max_queue", a.cfg.maxQueue, "overflow", a.cfg.overflow.String())
		if a.cfg.target != nil {
			a.apply(c, a.fsm.SetTarget(a.cfg.target, a.clock.Now()))
		}
	case *actor.Stopping, *actor.Restarting:
		a.disarm()
		if n := a.fsm.Len(); n > 0 {
			a.logger.Info("throttler stopping with undelivered messages", "queued", n)
		}
	case *tick:
		a.onTick(c, m)
	case *SetTarget:
		a.apply(c, a.fsm.SetTarget(m.Target, a.clock.Now()))
	case *SetRate:
		eff, err := a.fsm.SetRate(m.Rate, a.clock.Now())
		if err != nil {
			a.logger.Warn("throttler refused a rate", "rate", m.Rate.String(), "error", err)
			if s := c.Sender(); s != nil {
				c.Send(s, &Rejected{Message: m, Err: err})
			}
			return
		}
		a.logger.Info("throttler rate changed", "rate", m.Rate.String())
		a.apply(c, eff)
	case *GetStats:
		if s := c.Sender(); s != nil {
			st := a.fsm.Stats()
			c.Send(s, &st)
		}
	case *Queue:
		a.enqueue(c, m.Msg)
	case actor.SystemMessage, actor.AutoReceiveMessage:
		// Lifecycle messages are not throttled.
	default:
		a.enqueue(c, m)
	}
}

func (a *throttlerActor) enqueue(c actor.Context, msg any) {
	env := envelope{msg: msg, sender: c.Sender()}
	if h := c.MessageHeader(); h != nil && h.Length() > 0 {
		env.header = h.ToMap()
	}
	var now time.Time
	if a.fsm.Mode() != ModeTimer || a.fsm.State() != StateActive {
		// An Active timer-mode FSM counts its periods by ticks and does not
		// read now on Enqueue: skip the clock read on the hot path.
		now = a.clock.Now()
	}
	a.apply(c, a.fsm.Enqueue(env, now))
}

func (a *throttlerActor) onTick(c actor.Context, t *tick) {
	if t.gen != a.gen {
		return // from a timer stopped or replaced since
	}
	a.timer = nil // it has fired
	now := a.clock.Now()
	eff := a.fsm.Tick(now)
	a.apply(c, eff)
	if eff.Timer == TimerNone && a.periodic && a.fsm.State() == StateActive {
		// Next period, counted from the due time so that periods do not
		// drift; periods missed while the actor was busy are skipped.
		next := t.due.Add(a.period)
		for !next.After(now) {
			next = next.Add(a.period)
		}
		a.arm(next, now)
	}
}

// apply performs an FSM step's effects.
func (a *throttlerActor) apply(c actor.Context, eff Effects[*actor.PID, envelope]) {
	for _, env := range eff.Deliver {
		if env.sender == nil && env.header == nil {
			c.Send(eff.Target, env.msg)
			continue
		}
		// The target sees the original sender (and headers), as with
		// Akka's forward.
		c.Send(eff.Target, &actor.MessageEnvelope{Header: env.header, Message: env.msg, Sender: env.sender})
	}
	for _, env := range eff.Rejected {
		if env.sender != nil {
			c.Send(env.sender, &Rejected{Message: env.msg, Err: fmt.Errorf(
				"%w: %d messages are waiting (WithMaxQueue(%d)); send again later or raise the bound",
				ErrQueueFull, a.fsm.Len(), a.cfg.maxQueue)})
		}
	}
	if n := len(eff.Dropped); n > 0 {
		a.logger.Debug("throttler dropped messages", "dropped", n, "overflow", a.cfg.overflow.String())
	}
	if eff.From != eff.To {
		a.logger.Debug("throttler state changed", "from", eff.From.String(), "to", eff.To.String(), "queued", a.fsm.Len())
	}
	switch eff.Timer {
	case TimerStartPeriodic:
		now := a.clock.Now()
		a.periodic, a.period = true, eff.TimerAfter
		a.arm(now.Add(eff.TimerAfter), now)
	case TimerStartOnce:
		now := a.clock.Now()
		a.periodic = false
		a.arm(now.Add(eff.TimerAfter), now)
	case TimerStop:
		a.disarm()
	case TimerNone:
	}
}

// arm (re)starts the timer to send a tick to self at due.
func (a *throttlerActor) arm(due, now time.Time) {
	a.disarm()
	gen, self, root := a.gen, a.self, a.root
	a.timer = a.clock.AfterFunc(due.Sub(now), func() { root.Send(self, &tick{gen: gen, due: due}) })
}

// disarm stops the timer and invalidates any tick already on its way.
func (a *throttlerActor) disarm() {
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	a.gen++
}
