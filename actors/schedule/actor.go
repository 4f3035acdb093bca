// Package schedule runs Foreman's periodic jobs: the scheduler, a
// persistent actor on the persistence runtime (actors/persistence) whose
// journal stream holds the schedules and the ticks fired. Its decisions are
// in actors/schedule/core; this shell carries out the core's effects with
// protoactor, the journal, one timer and the Submitter.
//
// One scheduler serves at a time: in a cluster it is a singleton kind on
// the backends, holding a lease on its stream like the master; a tick's job
// has the work id "sched:<name>:<unix>", and the scheduler journals the
// tick only after the master acknowledged the job, so a successor that
// fires it again submits a duplicate the master does not run twice.
package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/schedule/core"
	"github.com/foreman-actors/foreman/messages"
)

// Submitter submits a tick's job; it returns nil once the master has
// acknowledged it (a frontend.Client does).
type Submitter interface {
	Submit(ctx context.Context, w *messages.Work) error
}

// Observer is told about ticks, for metrics: fired once per tick whose job
// the master acknowledged, with how late its submission started after the
// tick's time; skipped with the ticks passed over (missed and not run).
// Called on the actor's goroutine: it must be quick.
type Observer interface {
	TickFired(name string, late time.Duration)
	TicksSkipped(name string, n int64)
}

// ErrInvalidOption means an option is out of range.
var ErrInvalidOption = errors.New("schedule: invalid option")

// Props returns the props of a scheduler that journals to j and submits
// through sub.
func Props(j persistence.Journal, sub Submitter, opts ...Option) (*actor.Props, error) {
	if j == nil || sub == nil {
		return nil, fmt.Errorf("%w: journal and submitter are required", ErrInvalidOption)
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if _, err := persistence.New(j, cfg.stream, cfg.runtimeOptions()...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	return actor.PropsFromProducer(func() actor.Actor {
		rt, err := persistence.New(j, cfg.stream, cfg.runtimeOptions()...)
		if err != nil {
			panic(err) // validated above
		}
		return &scheduler{cfg: cfg, rt: rt, sub: sub, cancels: map[string]context.CancelFunc{}}
	}), nil
}

// scheduler is the actor. Every field is owned by the actor's goroutine,
// except wg, which the submission goroutines signal.
type scheduler struct {
	cfg  config
	rt   *persistence.Runtime
	core core.Core
	sub  Submitter
	log  *slog.Logger
	self *actor.PID
	root *actor.RootContext

	timer    clock.Timer
	timerGen uint64
	// cancels ends the submissions in flight when the actor stops, by
	// work id.
	cancels   map[string]context.CancelFunc
	submitted map[string]time.Time // when each in-flight submission started
	wg        sync.WaitGroup
}

// Messages the actor sends itself.
type (
	timerFired struct{ gen uint64 }
	submitDone struct {
		name string
		tick int64
		id   string
		err  error
	}
)

var (
	_ persistence.Handler        = (*scheduler)(nil)
	_ persistence.RecoveryMarker = (*scheduler)(nil)
)

func (a *scheduler) Reset(snap *persistence.Snapshot) error {
	if snap == nil {
		return a.core.Reset(nil)
	}
	s, ok := snap.Msg.(*messages.ScheduleSnapshot)
	if !ok {
		return fmt.Errorf("schedule: snapshot %d is a %T, not a ScheduleSnapshot", snap.Seq, snap.Msg)
	}
	return a.core.Reset(s)
}

func (a *scheduler) Replay(ev persistence.Event) error { return a.core.Apply(ev.Msg) }

func (a *scheduler) Snapshot(int) (proto.Message, bool) { return a.core.Snapshot(), true }

func (a *scheduler) RecoveryEvent(now time.Time) proto.Message {
	return &messages.ScheduleRecovered{AtUnixNano: now.UnixNano()}
}

func (a *scheduler) Receive(c actor.Context) {
	if a.rt.Handle(c) {
		return
	}
	switch m := c.Message().(type) {
	case *actor.Started:
		a.self, a.root = c.Self(), c.ActorSystem().Root
		a.log = a.cfg.logger
		if a.log == nil {
			a.log = c.ActorSystem().Logger()
		}
		a.log = a.log.With("component", "scheduler", "pid", c.Self().GetAddress()+"/"+c.Self().GetId())
		a.submitted = map[string]time.Time{}
		a.rt.Start(c, a, func(actor.Context) {
			a.log.Info("scheduler recovered", "schedules", len(a.core.Schedules()))
			a.run(c, a.core.Step(a.cfg.clock.Now(), core.Recovered{}))
		})
	case *actor.Stopping:
		a.stopTimer()
		for _, cancel := range a.cancels {
			cancel()
		}
		a.wg.Wait()
		a.rt.Stop()
	case *messages.ScheduleRequest:
		if !a.rt.Recovered() {
			c.Respond(&messages.ScheduleReply{Code: core.CodeUnavailable, Error: "the scheduler is recovering or waiting for its lease; retry in a second"})
			return
		}
		rep, effs := a.core.Request(a.cfg.clock.Now(), m)
		a.run(c, effs)
		if c.Sender() != nil {
			// Once every event persisted so far is durable, this request's
			// and those before it: an answer read from memory (a pause
			// asked again, "already paused") must not get ahead of the
			// journal, or a failed write undoes what the caller was told
			// (the simulator's seed 6000003 with --schedules).
			a.rt.Reply(c.Sender(), rep)
			return
		}
		c.Respond(rep)
	case *timerFired:
		if m.gen != a.timerGen || !a.rt.Recovered() {
			return // replaced meanwhile, or not serving: Recovered re-arms
		}
		a.timer = nil
		a.run(c, a.core.Step(a.cfg.clock.Now(), effect.Fired{Name: core.TimerName}))
	case *submitDone:
		delete(a.cancels, m.id)
		started := a.submitted[m.id]
		delete(a.submitted, m.id)
		if !a.rt.Recovered() {
			return // a new recovery fires the tick again if it must
		}
		now := a.cfg.clock.Now()
		if m.err != nil {
			a.run(c, a.core.Step(now, core.Failed{Name: m.name, Tick: m.tick, Err: m.err}))
			return
		}
		effs := a.core.Step(now, core.Acked{Name: m.name, Tick: m.tick})
		if a.cfg.observer != nil {
			a.cfg.observer.TickFired(m.name, started.Sub(time.Unix(m.tick, 0)))
			for _, e := range effs {
				if ap, ok := e.(effect.Append); ok {
					for _, ev := range ap.Events {
						if f, ok := ev.(*messages.ScheduleTickFired); ok && f.GetSkipped() > 0 {
							a.cfg.observer.TicksSkipped(f.GetName(), f.GetSkipped())
						}
					}
				}
			}
		}
		a.run(c, effs)
	}
}

// run carries out the core's effects; it reports whether any event was
// persisted (a reply then waits for it).
func (a *scheduler) run(c actor.Context, effs []effect.Effect) (persisted bool) {
	for _, e := range effs {
		switch e := e.(type) {
		case effect.Append:
			a.rt.Persist(e.Events, nil)
			persisted = true
		case effect.Timer:
			a.arm(e.At)
		case effect.StopTimer:
			a.stopTimer()
		case core.Submit:
			a.submit(e)
		case effect.Log:
			a.log.Log(context.Background(), e.Level, e.Msg, e.Attrs...)
		}
	}
	return persisted
}

func (a *scheduler) arm(at time.Time) {
	a.stopTimer()
	a.timerGen++
	gen, self, root := a.timerGen, a.self, a.root
	a.timer = a.cfg.clock.AfterFunc(max(at.Sub(a.cfg.clock.Now()), 0), func() { root.Send(self, &timerFired{gen: gen}) })
}

func (a *scheduler) stopTimer() {
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	a.timerGen++
}

// submit sends a tick's job off the actor's goroutine; the outcome comes
// back as a submitDone.
func (a *scheduler) submit(s core.Submit) {
	id := s.Work.GetWorkId()
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.submitTimeout)
	a.cancels[id] = cancel
	a.submitted[id] = a.cfg.clock.Now()
	self, root, sub := a.self, a.root, a.sub
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer cancel()
		err := sub.Submit(ctx, s.Work)
		root.Send(self, &submitDone{name: s.Name, tick: s.Tick, id: id, err: err})
	}()
}
