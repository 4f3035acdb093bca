package worker

import (
	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/trace"

	"github.com/foreman-actors/foreman/actors/worker/core"
	"github.com/foreman-actors/foreman/messages"
)

// The shell's children and goroutines between "the work has a slot" and
// "its job returns" (core/gate.go decides): the interest watcher, the
// executor, and the Acquire of a limiter's permit.

// askAgain tells a watcher to ask its waiter again.
type askAgain struct{}

// interestWatch is a child of the worker per passage with a waiter (Ask):
// it asks the waiter AreYouStillInterested as itself, so that the waiter
// remembers it as the worker it told yes, and reports to the worker what
// comes back (answers, a later unasked IAmNoLongerInterested, dead letters)
// until the worker stops it. It decides nothing.
type interestWatch struct {
	passage core.Answer // Slot, Seq, WorkID
	waiter  *actor.PID
}

// Receive asks and reports.
func (a *interestWatch) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started, *askAgain:
		c.Request(a.waiter, &messages.AreYouStillInterested{WorkId: a.passage.WorkID})
	case *messages.IAmStillInterested:
		a.report(c, core.StillInterested, 0, false)
	case *messages.IAmNoLongerInterested:
		a.report(c, core.NoLongerInterested, m.GetReason(), false)
	case *actor.DeadLetterResponse:
		a.report(c, core.DeadLetter, 0, deadLetterGone(m, a.waiter, c.Self()))
	}
}

func (a *interestWatch) report(c actor.Context, kind core.AnswerKind, reason messages.NoLongerInterestedReason, gone bool) {
	ans := a.passage
	ans.Kind, ans.Reason, ans.Gone = kind, reason, gone
	c.Send(c.Parent(), &ans)
}

// deadLetterGone reports whether the dead letter m, answering a question
// self sent to waiter, says the waiter is gone, as opposed to unreachable.
// protoactor answers a request that found no actor with a
// DeadLetterResponse without Target, from the dead-letter process of the
// node that looked the actor up: the waiter's own node when it lives on
// another, reached over the network (or this node when there is no remote
// to reach it by). The endpoint writer of this node answers a request it
// could not deliver, because the connection to the waiter's node is not
// made, with a DeadLetterResponse naming the Target: that says nothing
// about the waiter.
func deadLetterGone(m *actor.DeadLetterResponse, waiter, self *actor.PID) bool {
	return waiter.GetAddress() == self.GetAddress() || m.GetTarget() == nil
}

// watch carries out Ask: the passage's watcher asks (spawned on its first
// Ask). A fresh PID for the waiter: a protoactor PID caches the process it
// resolved to, and the Work may have come from another actor system in
// this process.
func (w *workerActor) watch(e core.Ask) {
	wr := &w.watchers[e.Slot]
	if wr.pid != nil && wr.seq == e.Seq {
		w.sys.Root.Send(wr.pid, &askAgain{})
		return
	}
	w.unwatch(e.Slot, wr.seq)
	a := &interestWatch{passage: core.Answer{Slot: e.Slot, Seq: e.Seq, WorkID: e.WorkID},
		waiter: actor.NewPID(e.Waiter.GetAddress(), e.Waiter.GetId())}
	*wr = watcherRef{seq: e.Seq, pid: w.actx.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }))}
}

// unwatch stops the watcher of passage (slot, seq), if it is there.
func (w *workerActor) unwatch(slot int, seq uint64) {
	if wr := &w.watchers[slot]; wr.pid != nil && wr.seq == seq {
		w.actx.Stop(wr.pid)
		*wr = watcherRef{}
	}
}

func executorProps(slot int, reg *Registry, tracer trace.Tracer, d actor.Dispatcher) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &executor{slot: slot, reg: reg, tracer: tracer}
	}, actor.WithDispatcher(d))
}

// Receive runs doWork messages.
func (e *executor) Receive(c actor.Context) {
	d, ok := c.Message().(*doWork)
	if !ok {
		return
	}
	res, err := e.run(d.ctx, d.work)
	c.Send(c.Parent(), &execResult{slot: e.slot, workID: d.work.GetWorkId(), result: res, err: err})
}

// acquire carries out Acquire off the worker's goroutine; the permit comes
// back through the box, so none is lost when the worker stops meanwhile.
func (w *workerActor) acquire() {
	lim, ctx, sys, self, box := w.cfg.limiter, w.ctx, w.sys, w.self, w.box
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		p, err := lim.Acquire(ctx)
		if err != nil {
			sys.Root.Send(self, &permitFailed{box: box, err: err})
			return
		}
		if !box.put(p) {
			p.Abandon() // the worker stopped meanwhile
			return
		}
		sys.Root.Send(self, &permitGranted{box: box, permit: p})
	}()
}

// onPermit names a permit from the acquiring goroutine for the core.
func (w *workerActor) onPermit(m *permitGranted) {
	if !m.box.take(m.permit) {
		return // the box was closed and the permit abandoned
	}
	if m.box != w.box {
		m.permit.Abandon()
		return
	}
	w.do(w.core.PermitGranted(w.clockNow(), w.permits.name(m.permit)))
}

func (w *workerActor) onPermitFailed(m *permitFailed) {
	if m.box == w.box && w.ctx.Err() == nil {
		w.do(w.core.PermitFailed(w.clockNow(), m.err))
	}
}
