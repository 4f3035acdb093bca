package sim

import (
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/messages"
)

// actor is one core running on a node: the runner that carries out its
// effects on the models. It decides nothing: a Send goes to the network,
// an Append to the journal model, a Timer to the event queue, and what
// comes back steps the core through the adapter's callbacks.
type actor struct {
	w    *world
	node *node
	pid  *messages.PID
	inc  int // the node's incarnation that made it; a stale actor does nothing

	// The adapter's side.
	onFired   func(name string)
	onDurable func(token uint64)
	onFailed  func(err error) // an append failed: the adapter recovers the core
	// journal: the stream and epoch this actor's Appends go to (nil: none).
	stream *stream
	epoch  int64
	// observe sees every effect before it is carried out (the invariants'
	// view of what the core did); nil: none.
	observe func(effect.Effect)

	timers  map[string]int // name -> generation; looked up, never iterated
	timerGn int

	issued, durable int    // appends issued and durable so far, in order
	held            []held // replies waiting for their appends
	stopped         bool
}

// held is a Reply with AfterDurable waiting until the appends issued
// before it are durable.
type held struct {
	after int
	r     effect.Reply
}

func (w *world) newActor(n *node, id string) *actor {
	return &actor{w: w, node: n, pid: &messages.PID{Address: n.name, Id: id}, inc: n.inc, timers: map[string]int{}}
}

// live reports whether the actor still runs: its node was not restarted
// and the adapter did not stop it.
func (a *actor) live() bool { return !a.stopped && a.node.up && a.node.inc == a.inc }

// now is the actor's node's clock.
func (a *actor) now() time.Time { return a.node.local(a.w.e.now) }

// apply carries out effects in order.
func (a *actor) apply(effs []effect.Effect) {
	for _, ef := range effs {
		if !a.live() {
			return
		}
		if a.observe != nil {
			a.observe(ef)
		}
		switch ef := ef.(type) {
		case effect.Send:
			a.w.send(a.node, a.pid, ef.To, ef.Msg)
		case *effect.Send:
			a.w.send(a.node, a.pid, ef.To, ef.Msg)
		case effect.Reply:
			a.reply(ef)
		case *effect.Reply:
			a.reply(*ef)
		case effect.Append:
			a.append(ef)
		case *effect.Append:
			a.append(*ef)
		case effect.Timer:
			a.timer(ef)
		case *effect.Timer:
			a.timer(*ef)
		case effect.StopTimer:
			a.timerGn++
			a.timers[ef.Name] = a.timerGn // a later fire finds another generation
		case *effect.StopTimer:
			a.timerGn++
			a.timers[ef.Name] = a.timerGn
		case effect.Log:
			if a.w.e.tracing() {
				a.w.e.tracef(a.node.name, "%s log %s %v", a.pid.GetId(), ef.Msg, ef.Attrs)
			}
		case *effect.Log:
			if a.w.e.tracing() {
				a.w.e.tracef(a.node.name, "%s log %s %v", a.pid.GetId(), ef.Msg, ef.Attrs)
			}
		}
	}
}

func (a *actor) reply(r effect.Reply) {
	if r.AfterDurable && a.durable < a.issued {
		a.held = append(a.held, held{after: a.issued, r: r})
		return
	}
	a.w.send(a.node, a.pid, r.To, r.Msg)
}

func (a *actor) timer(t effect.Timer) {
	a.timerGn++
	gen := a.timerGn
	a.timers[t.Name] = gen
	name := t.Name
	a.w.onNode(a.node, a.node.trueAt(t.At), func() {
		if !a.live() || a.timers[name] != gen {
			return
		}
		if a.w.e.tracing() {
			a.w.e.tracef(a.node.name, "%s timer %s", a.pid.GetId(), name)
		}
		a.onFired(name)
	})
}

func (a *actor) append(ap effect.Append) {
	a.issued++
	if a.stream == nil {
		// No journal: durable at once (a core that journals nothing).
		a.durableNext(ap.Token)
		return
	}
	s, token := a.stream, ap.Token
	events := append([]proto.Message(nil), ap.Events...)
	req := &appendReq{from: a.node, epoch: a.epoch, events: events}
	req.done = func(err error) {
		if !a.live() {
			return
		}
		if err != nil {
			a.stopped = true // every later append of this epoch fails too
			a.held = nil
			a.onFailed(err)
			return
		}
		a.durableNext(token)
	}
	a.w.jr.call(a.node, func() func() {
		a.w.jr.append(s, req)
		return nil // the answer comes with the batch's commit
	}, func() { req.done(errUnreachable) })
}

// durableNext records the next append as durable, releases the replies
// that waited for it and steps the core.
func (a *actor) durableNext(token uint64) {
	a.durable++
	kept := a.held[:0]
	var out []effect.Reply
	for _, h := range a.held {
		if h.after <= a.durable {
			out = append(out, h.r)
		} else {
			kept = append(kept, h)
		}
	}
	a.held = kept
	for _, r := range out {
		a.w.send(a.node, a.pid, r.To, r.Msg)
	}
	a.onDurable(token)
}
