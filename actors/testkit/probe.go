package testkit

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"
)

// Envelope is one message received by a [Probe], with the PID that sent it
// (nil when it was sent without a sender).
type Envelope struct {
	Message any
	Sender  *actor.PID
}

// Probe is a real protoactor actor that records every message it receives,
// with its sender, so a test can assert on them. Its PID goes wherever a PID
// goes: a target, a sender, a subscriber, a worker's master, even an actor
// on another cluster member.
//
// Expectations wait in real time up to the duration they are given (use
// [Timeout] for "generously long"); when a check fails they report through
// t.Fatalf what was expected, what came instead and what else is queued.
//
// A Probe's expectations are meant to be called from the test goroutine.
type Probe struct {
	t   TB
	sys *actor.ActorSystem
	pid *actor.PID

	mu      sync.Mutex
	queue   []Envelope
	changed chan struct{} // closed and replaced on every push
	last    Envelope      // the last message taken from the queue
	ignore  func(any) bool
	auto    func(msg any, sender *actor.PID) any

	// Within bookkeeping (test goroutine only).
	end        time.Time // deadline of the innermost Within; zero outside
	lastWasNo  bool      // the last expectation was ExpectNoMsg
	hasLastMsg bool
}

// watchCmd and unwatchCmd are handled by the probe actor itself.
type watchCmd struct{ pid *actor.PID }
type unwatchCmd struct{ pid *actor.PID }

// NewProbe spawns a probe actor in sys. The probe is stopped in t.Cleanup
// (before a system made by [NewSystem] in the same test shuts down).
func NewProbe(t TB, sys *actor.ActorSystem) *Probe {
	t.Helper()
	p := &Probe{t: t, sys: sys, changed: make(chan struct{})}
	p.pid = sys.Root.SpawnPrefix(actor.PropsFromFunc(p.receive), "probe")
	t.Cleanup(func() {
		if !sys.IsStopped() {
			_ = sys.Root.StopFuture(p.pid).Wait()
		}
	})
	return p
}

// receive is the probe actor's behaviour.
func (p *Probe) receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting:
		return
	case watchCmd:
		c.Watch(m.pid)
		c.Respond(m)
		return
	case unwatchCmd:
		c.Unwatch(m.pid)
		c.Respond(m)
		return
	}
	msg, sender := c.Message(), c.Sender()
	p.mu.Lock()
	ignore, auto := p.ignore, p.auto
	p.mu.Unlock()
	if ignore != nil && ignore(msg) {
		return
	}
	if auto != nil && sender != nil {
		if reply := auto(msg, sender); reply != nil {
			c.Request(sender, reply)
		}
	}
	p.push(Envelope{Message: msg, Sender: sender})
}

func (p *Probe) push(e Envelope) {
	p.mu.Lock()
	p.queue = append(p.queue, e)
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// PID is the probe's actor PID.
func (p *Probe) PID() *actor.PID { return p.pid }

// Send delivers msg to the actor to with the probe as its sender, as in
// Akka's probe.send: the receiver's c.Sender() is the probe, so c.Respond
// comes back to it.
func (p *Probe) Send(to *actor.PID, msg any) {
	p.sys.Root.RequestWithCustomSender(to, msg, p.pid)
}

// Request is [Probe.Send] under the name that reads better where a reply is
// expected; the reply is received with the Expect methods.
func (p *Probe) Request(to *actor.PID, msg any) {
	p.sys.Root.RequestWithCustomSender(to, msg, p.pid)
}

// Reply sends msg, with the probe as sender, to the sender of the last
// message taken by an expectation. It fails the test if that message had no
// sender.
func (p *Probe) Reply(msg any) {
	p.t.Helper()
	if p.last.Sender == nil {
		if !p.hasLastMsg {
			p.t.Fatalf("testkit: Reply(%s): no message has been received yet; call an Expect method first", describe(msg))
			return
		}
		p.t.Fatalf("testkit: Reply(%s): the last message %s had no sender (it was sent with Send, not Request)",
			describe(msg), describe(p.last.Message))
		return
	}
	p.sys.Root.RequestWithCustomSender(p.last.Sender, msg, p.pid)
}

// LastSender is the sender of the last message taken by an expectation (nil
// if none or if it was sent without a sender).
func (p *Probe) LastSender() *actor.PID { return p.last.Sender }

// LastEnvelope is the last message taken by an expectation, with its sender.
func (p *Probe) LastEnvelope() Envelope { return p.last }

// Watch makes the probe watch pid, so [Probe.ExpectTerminated] sees it stop.
// It returns once the watch is in place.
func (p *Probe) Watch(pid *actor.PID) {
	p.t.Helper()
	if _, err := p.sys.Root.RequestFuture(p.pid, watchCmd{pid: pid}, Timeout()).Result(); err != nil {
		p.t.Fatalf("testkit: Watch(%s): the probe did not confirm within %v: %v", pidText(pid), Timeout(), err)
	}
}

// Unwatch undoes [Probe.Watch]; it returns once the probe has stopped
// watching.
func (p *Probe) Unwatch(pid *actor.PID) {
	p.t.Helper()
	if _, err := p.sys.Root.RequestFuture(p.pid, unwatchCmd{pid: pid}, Timeout()).Result(); err != nil {
		p.t.Fatalf("testkit: Unwatch(%s): the probe did not confirm within %v: %v", pidText(pid), Timeout(), err)
	}
}

// IgnoreMsg drops, from now on, every arriving message for which ignore
// returns true (heartbeats, periodic announcements). nil ignores nothing.
func (p *Probe) IgnoreMsg(ignore func(msg any) bool) {
	p.mu.Lock()
	p.ignore = ignore
	p.mu.Unlock()
}

// SetAutoReply makes the probe answer every message that has a sender with
// reply(msg, sender), when that is not nil, before recording the message.
// nil turns auto-replies off.
func (p *Probe) SetAutoReply(reply func(msg any, sender *actor.PID) any) {
	p.mu.Lock()
	p.auto = reply
	p.mu.Unlock()
}

// Queued returns a copy of the messages received but not yet taken.
func (p *Probe) Queued() []Envelope {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Envelope(nil), p.queue...)
}

// Remaining is the time left in the innermost [Probe.Within] block, or
// [Timeout] outside of one.
func (p *Probe) Remaining() time.Duration {
	if p.end.IsZero() {
		return Timeout()
	}
	if r := time.Until(p.end); r > 0 {
		return r
	}
	return 0
}

// bound caps d at the time left in the innermost Within block.
func (p *Probe) bound(d time.Duration) time.Duration {
	if !p.end.IsZero() {
		if r := time.Until(p.end); r < d {
			if r < 0 {
				r = 0
			}
			return r
		}
	}
	return d
}

// next takes the oldest queued message, waiting at most d.
func (p *Probe) next(d time.Duration) (Envelope, bool) {
	deadline := time.Now().Add(d)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		p.mu.Lock()
		if len(p.queue) > 0 {
			e := p.queue[0]
			p.queue[0] = Envelope{}
			p.queue = p.queue[1:]
			p.mu.Unlock()
			p.last = e
			p.hasLastMsg = true
			return e, true
		}
		changed := p.changed
		p.mu.Unlock()
		left := time.Until(deadline)
		if left <= 0 {
			return Envelope{}, false
		}
		if timer == nil {
			timer = time.NewTimer(left)
		} else {
			timer.Reset(left)
		}
		select {
		case <-changed:
		case <-timer.C:
		}
	}
}

// ReceiveOne takes the next message within d and returns it with its sender;
// ok is false on timeout (it does not fail the test).
func (p *Probe) ReceiveOne(d time.Duration) (Envelope, bool) {
	p.lastWasNo = false
	return p.next(p.bound(d))
}

// ExpectMsg waits up to within for the next message and fails the test
// unless it equals want (proto.Equal for protobuf messages, reflect.DeepEqual
// otherwise). It returns the message received.
func (p *Probe) ExpectMsg(want any, within time.Duration) any {
	p.t.Helper()
	p.lastWasNo = false
	d := p.bound(within)
	e, ok := p.next(d)
	if !ok {
		p.t.Fatalf("testkit: ExpectMsg: timeout (%v) waiting for %s; no message arrived%s", round(d), describe(want), p.queueText())
		return nil
	}
	if !Equal(want, e.Message) {
		p.t.Fatalf("testkit: ExpectMsg: expected %s, got %s%s%s", describe(want), describe(e.Message), senderText(e.Sender), p.queueText())
		return e.Message
	}
	return e.Message
}

// ExpectMsgType waits up to within for the next message and fails the test
// unless it is of type T; it returns the message as a T.
func ExpectMsgType[T any](p *Probe, within time.Duration) T {
	p.t.Helper()
	p.lastWasNo = false
	var zero T
	d := p.bound(within)
	e, ok := p.next(d)
	if !ok {
		p.t.Fatalf("testkit: ExpectMsgType: timeout (%v) waiting for a message of type %s; no message arrived%s", round(d), typeName[T](), p.queueText())
		return zero
	}
	m, ok := e.Message.(T)
	if !ok {
		p.t.Fatalf("testkit: ExpectMsgType: expected a message of type %s, got %s%s%s", typeName[T](), describe(e.Message), senderText(e.Sender), p.queueText())
		return zero
	}
	return m
}

// ExpectNoMsg fails the test if any message arrives within d (it always
// waits the full d). Inside [Probe.Within], it is typically given
// p.Remaining().
func (p *Probe) ExpectNoMsg(d time.Duration) {
	p.t.Helper()
	e, ok := p.next(d)
	p.lastWasNo = true
	if ok {
		p.t.Fatalf("testkit: ExpectNoMsg: expected no message for %v, got %s%s%s", round(d), describe(e.Message), senderText(e.Sender), p.queueText())
	}
}

// ExpectMsgAllOf waits up to within for len(msgs) messages and fails the
// test unless they are exactly msgs in any order. It returns the messages in
// arrival order.
func (p *Probe) ExpectMsgAllOf(within time.Duration, msgs ...any) []any {
	p.t.Helper()
	p.lastWasNo = false
	d := p.bound(within)
	deadline := time.Now().Add(d)
	missing := append([]any(nil), msgs...)
	var got, unexpected []any
	for len(got) < len(msgs) {
		e, ok := p.next(time.Until(deadline))
		if !ok {
			break
		}
		got = append(got, e.Message)
		matched := false
		for i, w := range missing {
			if Equal(w, e.Message) {
				missing = append(missing[:i], missing[i+1:]...)
				matched = true
				break
			}
		}
		if !matched {
			unexpected = append(unexpected, e.Message)
		}
	}
	if len(missing) > 0 || len(unexpected) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "testkit: ExpectMsgAllOf: expected %d messages in any order %s within %v", len(msgs), describeAll(msgs), round(d))
		fmt.Fprintf(&b, "; got %d: %s", len(got), describeAll(got))
		if len(missing) > 0 {
			fmt.Fprintf(&b, "; missing %s", describeAll(missing))
		}
		if len(unexpected) > 0 {
			fmt.Fprintf(&b, "; unexpected %s", describeAll(unexpected))
		}
		p.t.Fatalf("%s%s", b.String(), p.queueText())
	}
	return got
}

// FishForMessage takes messages for up to within until match returns true
// for one, which it returns; the messages before it are dropped. It fails
// the test, listing what it skipped, if none matches in time.
func (p *Probe) FishForMessage(within time.Duration, match func(msg any) bool) any {
	p.t.Helper()
	p.lastWasNo = false
	d := p.bound(within)
	deadline := time.Now().Add(d)
	var skipped []any
	for {
		e, ok := p.next(time.Until(deadline))
		if !ok {
			p.t.Fatalf("testkit: FishForMessage: no matching message within %v; skipped %d: %s%s", round(d), len(skipped), describeAll(skipped), p.queueText())
			return nil
		}
		if match(e.Message) {
			return e.Message
		}
		skipped = append(skipped, e.Message)
	}
}

// ReceiveN waits up to within for n messages and returns them in arrival
// order; it fails the test if fewer arrive.
func (p *Probe) ReceiveN(n int, within time.Duration) []any {
	p.t.Helper()
	p.lastWasNo = false
	d := p.bound(within)
	deadline := time.Now().Add(d)
	got := make([]any, 0, n)
	for len(got) < n {
		e, ok := p.next(time.Until(deadline))
		if !ok {
			p.t.Fatalf("testkit: ReceiveN: expected %d messages within %v, got %d: %s", n, round(d), len(got), describeAll(got))
			return got
		}
		got = append(got, e.Message)
	}
	return got
}

// ExpectTerminated waits up to within for the *actor.Terminated of pid,
// which the probe sees after [Probe.Watch](pid), and fails the test if
// something else or nothing arrives.
func (p *Probe) ExpectTerminated(pid *actor.PID, within time.Duration) *actor.Terminated {
	p.t.Helper()
	p.lastWasNo = false
	d := p.bound(within)
	e, ok := p.next(d)
	if !ok {
		p.t.Fatalf("testkit: ExpectTerminated: timeout (%v) waiting for Terminated of %s (did you call Watch?)%s", round(d), pidText(pid), p.queueText())
		return nil
	}
	term, ok := e.Message.(*actor.Terminated)
	if !ok || !term.GetWho().Equal(pid) {
		p.t.Fatalf("testkit: ExpectTerminated: expected Terminated of %s, got %s%s", pidText(pid), describe(e.Message), p.queueText())
		return nil
	}
	return term
}

// Within runs f and fails the test unless it took between minimum and
// maximum, like Akka's within: expectations inside f wait no longer than the
// block's end, and [Probe.Remaining] is the time left. When f ends with
// [Probe.ExpectNoMsg] (typically ExpectNoMsg(p.Remaining())), the maximum is
// not checked, since that wait runs to the end of the block by design.
func (p *Probe) Within(minimum, maximum time.Duration, f func()) {
	p.t.Helper()
	start := time.Now()
	end := start.Add(maximum)
	if !p.end.IsZero() && p.end.Before(end) {
		end = p.end // nested blocks cannot outlast their parent
	}
	if left := end.Sub(start); left < minimum {
		p.t.Fatalf("testkit: Within(%v, %v): only %v left in the enclosing Within, so the minimum cannot be met", minimum, maximum, round(left))
		return
	}
	prev := p.end
	p.end = end
	p.lastWasNo = false
	func() {
		defer func() { p.end = prev }()
		f()
	}()
	took := time.Since(start)
	if took < minimum {
		p.t.Fatalf("testkit: Within(%v, %v): block took %v, less than the minimum %v", minimum, maximum, round(took), minimum)
		return
	}
	if longest := end.Sub(start); !p.lastWasNo && took > longest {
		p.t.Fatalf("testkit: Within(%v, %v): block took %v, more than the maximum %v", minimum, maximum, round(took), round(longest))
	}
}

// Equal reports whether two messages are equal the way the probe compares
// them: proto.Equal when both are protobuf messages, reflect.DeepEqual
// otherwise.
func Equal(want, got any) bool {
	if wm, ok := want.(proto.Message); ok {
		if gm, ok := got.(proto.Message); ok {
			return proto.Equal(wm, gm)
		}
		return false
	}
	return reflect.DeepEqual(want, got)
}

// describe renders a message as "%T %v"-style text for failure messages.
func describe(m any) string {
	if m == nil {
		return "<nil>"
	}
	if pm, ok := m.(proto.Message); ok {
		return fmt.Sprintf("%T{%v}", m, pm)
	}
	return fmt.Sprintf("%T(%#v)", m, m)
}

func describeAll(ms []any) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = describe(m)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func senderText(s *actor.PID) string {
	if s == nil {
		return " (no sender)"
	}
	return " (from " + pidText(s) + ")"
}

// pidText renders a PID as address/id.
func pidText(pid *actor.PID) string {
	if pid == nil {
		return "<nil PID>"
	}
	return pid.GetAddress() + "/" + pid.GetId()
}

// round makes durations in failure messages readable.
func round(d time.Duration) time.Duration {
	if d >= time.Millisecond {
		return d.Round(time.Millisecond)
	}
	return d
}

// queueText lists what is still queued, for failure messages.
func (p *Probe) queueText() string {
	q := p.Queued()
	if len(q) == 0 {
		return "; probe queue is empty"
	}
	parts := make([]string, 0, len(q))
	for i, e := range q {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("... and %d more", len(q)-10))
			break
		}
		parts = append(parts, describe(e.Message))
	}
	return fmt.Sprintf("; still queued (%d): [%s]", len(q), strings.Join(parts, ", "))
}

func typeName[T any]() string {
	return reflect.TypeFor[T]().String()
}
