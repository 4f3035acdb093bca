package waiter

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/waiter/core"
	"github.com/foreman-actors/foreman/messages"
)

// This file holds the two reusable halves of the interest protocol, for
// work that does not go through an API (the distributed workers): the
// caller's side (Interest, a waiter without a result) and the worker's side
// (AskStillInterested).

// AskStillInterested asks the waiter at pid (a WorkWaiter, an Interest, or
// any actor that speaks messages.AreYouStillInterested) whether its caller
// still waits, and blocks until the answer comes or ctx is done. The waiter
// may live on another cluster member.
//
// It returns (true, nil) for IAmStillInterested and (false, nil) for
// IAmNoLongerInterested. When no answer comes (the waiter is gone, which
// protoactor reports as a dead letter, or ctx is done; without a ctx deadline
// the wait is bounded by DefaultAskTimeout) it returns false and an error
// wrapping ErrNotInterested: like the seed's Worker, treat that as "not
// interested" and skip the work.
//
// The answer goes to a temporary reply address that is removed on return,
// so a waiter's later "cancel" push (IAmNoLongerInterested sent to a worker
// it had told yes) is not seen here; a worker actor that wants it sends the
// question itself with c.Request(pid, &messages.AreYouStillInterested{}) and
// handles the unasked IAmNoLongerInterested while the work runs.
func AskStillInterested(ctx context.Context, sys *actor.ActorSystem, pid *actor.PID, workID string) (bool, error) {
	if pid == nil {
		return false, fmt.Errorf("%w: nil waiter PID", ErrNotInterested)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultAskTimeout)
		defer cancel()
	}
	rp := &replyProcess{ch: make(chan any, 1)}
	self, ok := sys.ProcessRegistry.Add(rp, "waiter-ask$"+sys.ProcessRegistry.NextId())
	if !ok {
		return false, fmt.Errorf("%w: could not register a reply address", ErrNotInterested)
	}
	defer sys.ProcessRegistry.Remove(self)
	sys.Root.RequestWithCustomSender(pid, &messages.AreYouStillInterested{WorkId: workID}, self)
	select {
	case m := <-rp.ch:
		switch m.(type) {
		case *messages.IAmStillInterested:
			return true, nil
		case *messages.IAmNoLongerInterested:
			return false, nil
		case *actor.DeadLetterResponse:
			return false, fmt.Errorf("%w: waiter %s is gone", ErrNotInterested, pid)
		default:
			return false, fmt.Errorf("%w: waiter %s answered %T", ErrNotInterested, pid, m)
		}
	case <-ctx.Done():
		return false, fmt.Errorf("%w: waiter %s did not answer: %w", ErrNotInterested, pid, ctx.Err())
	}
}

// replyProcess is a one-shot reply address in the process registry.
type replyProcess struct{ ch chan any }

func (p *replyProcess) SendUserMessage(_ *actor.PID, m any) {
	_, msg, _ := actor.UnwrapEnvelope(m)
	select {
	case p.ch <- msg:
	default: // only the first answer counts
	}
}

func (p *replyProcess) SendSystemMessage(*actor.PID, any) {}

func (p *replyProcess) Stop(*actor.PID) {}

// Interest answers the interest protocol on behalf of a caller that waits
// outside the actor system, for example an HTTP handler whose request's
// context ends when the client goes: put Interest.PID() in the job, and
// workers anywhere in the cluster can ask it (with AskStillInterested or a
// request of messages.AreYouStillInterested).
//
// While ctx is live it answers IAmStillInterested. When ctx is done it
// sends IAmNoLongerInterested to every worker it had told yes (so they can
// cancel the running work), answers IAmNoLongerInterested for
// DefaultInterestLinger, then stops; a worker that asks after that gets a
// dead letter, which AskStillInterested also reports as not interested.
// (An actor that stops drops the messages still in its mailbox unanswered,
// hence the linger: the seed's "hangabout of the WorkWaiter".)
//
// The master of the distributed workers sends an Interest in a Work's waiter
// field the work's outcome once it is durable (a messages.WorkResult with
// the final status): Result delivers it.
type Interest struct {
	sys       *actor.ActorSystem
	pid       *actor.PID
	stopWatch func() bool
	closeOnce sync.Once
	result    chan *messages.WorkResult // the first outcome; buffered 1
}

// DefaultReleaseLinger is how long a released Interest keeps answering
// IAmStillInterested: for workers that got the work before the master
// dropped its waiter and ask later.
const DefaultReleaseLinger = time.Minute

// NewInterest spawns an Interest actor on sys that lives until ctx is done
// or Close is called.
func NewInterest(ctx context.Context, sys *actor.ActorSystem) *Interest {
	result := make(chan *messages.WorkResult, 1)
	pid := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &interestActor{core: core.NewInterest(core.InterestConfig{Linger: DefaultInterestLinger, ReleaseLinger: DefaultReleaseLinger}),
			result: result, callerDone: ctx.Done(), callerErr: ctx.Err}
	}))
	i := &Interest{sys: sys, pid: pid, result: result}
	i.stopWatch = context.AfterFunc(ctx, func() {
		sys.Root.Send(pid, &callerGone{reason: reasonOf(ctx.Err())})
	})
	return i
}

// PID is the address workers ask. Each call returns a fresh copy: a
// protoactor PID caches the process it resolved to, so one PID value must
// not be shared between actor systems (several cluster members in one test
// process would otherwise send through each other's remotes).
func (i *Interest) PID() *actor.PID { return actor.NewPID(i.pid.Address, i.pid.Id) }

// Result delivers the work's outcome when the master sends it (a
// messages.WorkResult whose Status is DONE, DEAD or CANCELLED). Only the
// first is delivered; the channel is never closed.
func (i *Interest) Result() <-chan *messages.WorkResult { return i.result }

// Release lets the work go on without its caller: the Interest stops
// watching ctx, never pushes IAmNoLongerInterested, and answers
// IAmStillInterested for DefaultReleaseLinger, then stops. Use it when the
// caller stops waiting but wants the job run (and tell the master to
// forget the waiter, messages.DetachWaiter). It is safe to call more than
// once, and after Close (then it does nothing).
func (i *Interest) Release() {
	i.stopWatch()
	i.sys.Root.Send(i.pid, &released{})
}

// Close stops the Interest without telling anyone (the caller got what it
// wanted). It is safe to call more than once.
func (i *Interest) Close() {
	i.closeOnce.Do(func() {
		i.stopWatch()
		i.sys.Root.Stop(i.pid)
	})
}

// interestActor is the shell of core.Interest (a WorkWaiter without a
// promise): it turns messages into the core's inputs and carries out its
// effects.
type interestActor struct {
	core   *core.Interest
	linger clock.Timer // the core's linger timer: fires lingerOver
	result chan<- *messages.WorkResult
	// callerDone and callerErr are the caller's ctx's: a question is
	// answered from the ctx as it is when asked. The callerGone message
	// the ctx's AfterFunc sends comes from a goroutine of its own, which a
	// loaded machine may run only after a worker has asked, and been told
	// yes for a caller who had already left.
	callerDone <-chan struct{}
	callerErr  func() error
}

// released is Interest.Release's message to its actor.
type released struct{}

// lingerOver ends an Interest's stay after its caller gave up.
type lingerOver struct{}

func (a *interestActor) Receive(c actor.Context) {
	var in any
	switch m := c.Message().(type) {
	case *messages.WorkResult:
		in = core.Outcome{Result: m}
	case *released:
		in = core.Released{}
	case *messages.AreYouStillInterested:
		asked := core.Asked{From: pids.Wire(c.Sender()), WorkID: m.GetWorkId()}
		if a.callerLeft() {
			asked.CallerLeft, asked.Reason = true, reasonOf(a.callerErr())
		}
		in = asked
	case *callerGone:
		in = core.CallerGone{Reason: m.reason}
	case *lingerOver:
		in = effect.Fired{Name: core.TimerLinger}
	case *actor.Stopped:
		if a.linger != nil {
			a.linger.Stop()
		}
		return
	default:
		return
	}
	a.apply(c, a.core.Step(clock.Real.Now(), in))
}

// apply carries out the core's effects.
func (a *interestActor) apply(c actor.Context, effs []effect.Effect) {
	for _, e := range effs {
		switch e := e.(type) {
		case effect.Reply:
			c.Respond(e.Msg)
		case effect.Send:
			c.Send(pids.Actor(e.To), e.Msg)
		case effect.Timer:
			if a.linger != nil {
				a.linger.Stop()
			}
			root, self := c.ActorSystem().Root, c.Self()
			a.linger = clock.Real.AfterFunc(max(e.At.Sub(clock.Real.Now()), 0), func() { root.Send(self, &lingerOver{}) })
		case effect.StopTimer:
			if a.linger != nil {
				a.linger.Stop()
			}
		case core.Deliver:
			a.result <- e.Result // buffered 1, and the core delivers once: never blocks
		case core.Stop:
			c.Stop(c.Self())
		}
	}
}

// callerLeft reports whether the caller's ctx has ended.
func (a *interestActor) callerLeft() bool {
	select {
	case <-a.callerDone:
		return true
	default:
		return false
	}
}
