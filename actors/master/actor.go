package master

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/actors/master/core"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/messages"
)

// The actor is an adapter: it turns protoactor's messages into the core's
// inputs and carries out the effects the core returns (see package core),
// with the persistence runtime, protoactor and the clock. It hosts what is
// not a decision: the result feed's readers (feed.go) and the observer.

// fired is a timer of the core (effect.Timer) firing.
type fired struct{ name string }

// maxCachedPIDs bounds masterActor.pids.
const maxCachedPIDs = 4096

type masterActor struct {
	cfg       config
	rt        *persistence.Runtime
	j         persistence.Journal // read by the result feed, off the actor
	clock     clock.Clock
	log       *slog.Logger
	publisher Publisher
	root      *actor.RootContext
	self      *actor.PID

	core *core.Master

	// What the core was last told of the runtime (core.Serving).
	serving, failing bool

	timers map[string]stopper
	// pids holds the actor.PID of each messages.PID the core sends to:
	// the core keeps one messages.PID per worker, so a hand-out converts
	// it once, not per message.
	pids map[*messages.PID]*actor.PID
	// from and sender are the sender of the message being stepped, as the
	// core's input names it (nil, or &wire overwritten per message: the
	// core copies what it keeps) and as protoactor does.
	from   *messages.PID
	wire   messages.PID
	sender *actor.PID

	// feed wakes the result feed's readers (feed.go); shared with their
	// goroutines, created with the actor.
	feed *feedHub

	// snapSize is what the previous snapshot weighed: the next one's
	// buffer is sized from it (snapshotMsg).
	snapSize core.SnapshotSize

	// trace records the jobs' spans (trace.go); nil: not traced.
	trace *masterTracer
}

// stopper is a clock.Timer or a *time.Timer.
type stopper interface{ Stop() bool }

// Receive implements actor.Actor.
func (a *masterActor) Receive(c actor.Context) {
	if a.rt.Handle(c) {
		return
	}
	switch msg := c.Message().(type) {
	case *messages.Work:
		a.step(core.Submit{From: a.sent(c), Work: msg})
	case *messages.WorkerRequestsWork:
		a.step(core.RequestWork{From: a.sent(c), Msg: msg})
	case *messages.WorkIsDone:
		a.step(core.Done{From: a.sent(c), Msg: msg})
	case *messages.WorkIsDoneBatch:
		a.step(core.DoneBatch{From: a.sent(c), Msg: msg})
	case *messages.WorkBatch:
		a.step(core.SubmitBatch{From: a.sent(c), Batch: msg})
	case *messages.RegisterWorker:
		isNew := !a.core.IsWorker(msg.GetWorkerId())
		a.step(core.Register{From: a.sent(c), Msg: msg})
		if isNew && a.core.IsWorker(msg.GetWorkerId()) {
			a.observeCounts()
		}
	case *messages.WorkFailed:
		a.step(core.Failed{Msg: msg})
	case *messages.WorkHeartbeat:
		a.step(core.Heartbeat{From: a.sent(c), Msg: msg})
	case *messages.DeregisterWorker:
		known := a.core.IsWorker(msg.GetWorkerId())
		a.step(core.Deregister{Msg: msg})
		if known {
			a.observeCounts()
		}
	case *messages.GetWorkStatus:
		a.step(core.GetStatus{From: a.sent(c), Msg: msg})
	case *messages.GetWorkersKnown:
		// A worker node's readiness probe: a read of the core, no step.
		known := make([]string, 0, len(msg.GetWorkerIds()))
		for _, id := range msg.GetWorkerIds() {
			if a.core.IsWorker(id) {
				known = append(known, id)
			}
		}
		c.Respond(&messages.WorkersKnown{Known: known})
	case *messages.GetMasterStatus:
		a.step(core.GetMasterStatus{From: a.sent(c), Address: a.self.GetAddress(), Epoch: a.rt.Epoch()})
	case *messages.ListWork:
		a.step(core.List{From: a.sent(c), Msg: msg})
	case *messages.ResubmitWork:
		a.step(core.Resubmit{From: a.sent(c), Msg: msg})
	case *messages.DetachWaiter:
		a.step(core.Detach{From: a.sent(c), Msg: msg})
	case *messages.PauseQueue:
		a.step(core.PauseQueue{From: a.sent(c), Msg: msg})
	case *messages.GetQueues:
		a.step(core.GetQueues{From: a.sent(c), Msg: msg})
	case *messages.SetKeyLimit:
		a.step(core.SetKeyLimit{From: a.sent(c), Msg: msg})
	case *messages.GetKeyLimits:
		a.step(core.GetKeyLimits{From: a.sent(c), Msg: msg})
	case *fired:
		a.step(effect.Fired{Name: msg.name})
	case *actor.Started:
		a.onStarted(c)
	case *actor.Stopping, *actor.Restarting:
		// Held hand-out records are lost, as in a crash.
		a.step(core.Stopping{})
		a.feed.close()
		if a.cfg.observer != nil {
			a.cfg.observer.Stopped(a.cfg.stream)
		}
	case *messages.ReadResults:
		a.step(core.Flush{}) // what an answer shows must be durable first
		a.onReadResults(c, msg)
	case *actor.Terminated:
		a.step(core.Flush{})
		a.onReaderTerminated(msg)
	}
}

// sent returns the sender of the request being stepped, for its input: a
// Reply to it goes to protoactor's PID unconverted.
func (a *masterActor) sent(c actor.Context) *messages.PID {
	a.sender, a.from = c.Sender(), nil
	if a.sender != nil {
		a.wire.Address, a.wire.Id, a.wire.RequestId = a.sender.GetAddress(), a.sender.GetId(), a.sender.GetRequestId()
		a.from = &a.wire
	}
	return a.from
}

// step tells the core whether it serves, when that changed, then steps it
// with in and carries out its effects.
func (a *masterActor) step(in any) {
	now := a.clock.Now()
	if serving, failing := a.rt.Recovered(), a.rt.RecoveryFailing(); serving != a.serving || failing != a.failing {
		a.serving, a.failing = serving, failing
		var until time.Time // the runtime checks the lease: serving until told otherwise
		if serving {
			until = time.Unix(1<<62, 0)
		}
		a.core.Step(now, core.Serving{Until: until, RecoveryFailing: failing})
	}
	for _, e := range a.core.Step(now, in) {
		a.do(e)
	}
	a.from, a.sender = nil, nil
}

// do carries out one effect of the core.
func (a *masterActor) do(e effect.Effect) {
	switch e := e.(type) {
	case effect.Send:
		if a.trace != nil {
			a.trace.handOut(e.Msg, e.To)
		}
		a.root.RequestWithCustomSender(a.pid(e.To), e.Msg, a.self)
	case effect.Reply:
		if a.trace != nil {
			a.trace.handOut(e.Msg, e.To)
		}
		to := a.sender
		if e.To != a.from || to == nil {
			to = a.pid(e.To)
		}
		if e.AfterDurable {
			a.rt.Reply(to, e.Msg)
		} else if to != nil {
			a.root.RequestWithCustomSender(to, e.Msg, a.self)
		}
	case effect.Append:
		a.append(e)
	case core.Publish:
		a.publisher.Publish(e.Result)
	case effect.Timer:
		a.arm(e)
	case effect.StopTimer:
		if t := a.timers[e.Name]; t != nil {
			t.Stop()
			delete(a.timers, e.Name)
		}
	case effect.Log:
		a.log.Log(context.Background(), e.Level, e.Msg, e.Attrs...)
	}
}

// pid returns the actor.PID of p, converted once per messages.PID.
func (a *masterActor) pid(p *messages.PID) *actor.PID {
	if p == nil || p == &a.wire {
		return pids.Actor(p) // the scratch PID changes: never cached
	}
	if ap, ok := a.pids[p]; ok {
		return ap
	}
	if len(a.pids) >= maxCachedPIDs {
		clear(a.pids) // waiters' PIDs pass through too: start over
	}
	ap := pids.Actor(p)
	a.pids[p] = ap
	return ap
}

// arm arms a timer of the core: on the injected clock, except the hold of
// hand-out records (core.StartsTimer), which only groups journal writes
// and runs on wall-clock time.
func (a *masterActor) arm(e effect.Timer) {
	if t := a.timers[e.Name]; t != nil {
		t.Stop()
	}
	root, self, msg := a.root, a.self, &fired{name: e.Name}
	send := func() { root.Send(self, msg) }
	if e.Name == core.StartsTimer {
		a.timers[e.Name] = time.AfterFunc(a.cfg.startedHold, send)
		return
	}
	a.timers[e.Name] = a.clock.AfterFunc(max(e.At.Sub(a.clock.Now()), 0), send)
}

// append journals the events of an Append. Once they are durable it
// reports them to the observer, steps the core with their token (outcomes
// to waiters, results to publish, accepted work released) and wakes the
// result feed's readers.
func (a *masterActor) append(e effect.Append) {
	observed := a.observeDurable(e.Events)
	if a.trace != nil {
		observed = a.trace.durable(a.clock.Now(), e.Events, observed)
	}
	var entries []*messages.FeedEntry // the feed's, for its in-memory tail
	first := a.rt.LastSeq() + 1
	for i, ev := range e.Events {
		if fe := feedEntry(first+int64(i), ev); fe != nil {
			entries = append(entries, fe)
		}
	}
	if e.Token == 0 && observed == nil && len(entries) == 0 {
		a.rt.Persist(e.Events, nil)
		return
	}
	seq, token := first-1+int64(len(e.Events)), e.Token
	a.rt.Persist(e.Events, func() {
		if observed != nil {
			observed()
		}
		if token != 0 {
			a.step(effect.Durable{Token: token})
		}
		if len(entries) > 0 {
			a.feed.addTail(entries)
			a.feed.advance(seq, true)
		}
	})
}

func (a *masterActor) onStarted(c actor.Context) {
	a.root, a.self = c.ActorSystem().Root, c.Self()
	a.log = a.cfg.logger
	if a.log == nil {
		a.log = c.ActorSystem().Logger()
	}
	a.log = a.log.With("component", "master", "stream", a.cfg.stream, "pid", a.self.GetAddress()+"/"+a.self.GetId())
	a.publisher = a.cfg.publisher
	if a.publisher == nil {
		es := c.ActorSystem().EventStream
		a.publisher = PublisherFunc(func(r *messages.WorkResult) { es.Publish(r) })
	}
	a.rt.Start(c, a, a.onRecovered)
}

// onRecovered runs after every recovery, including the re-sync after a
// failed journal write.
func (a *masterActor) onRecovered(actor.Context) {
	cnt := a.core.State().Counts()
	a.log.Info("master recovered", "epoch", a.rt.Epoch(), "seq", a.rt.DurableSeq(), "pending", cnt.Pending,
		"done", cnt.Done, "dead", cnt.Dead, "cancelled", cnt.Cancelled, "stashed", a.core.Stashed())
	a.observeRecovered()
	a.feed.resetTail(a.rt.DurableSeq())
	a.feed.advance(a.rt.DurableSeq(), true)
	a.step(core.Recovered{})
}

// AfterDurable implements persistence.AfterDurable: once the work a group
// commit accepted is released, idle workers are told, one WorkIsReady per
// commit.
func (a *masterActor) AfterDurable(actor.Context) {
	a.observeCounts()
	a.feed.advance(a.rt.DurableSeq(), false)
	a.step(core.Committed{})
}
