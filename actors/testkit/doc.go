// Package testkit drives protoactor actors from tests: the Go counterpart of
// Akka's TestKit.
//
// A [Probe] is a real actor that records every message it receives, with its
// sender; a test hands its PID to the actor under test (as target, sender,
// subscriber, master, even on another cluster member) and then asserts with
// time-bounded expectations:
//
//	func TestEcho(t *testing.T) {
//		t.Parallel()
//		sys := testkit.NewSystem(t)
//		probe := testkit.NewProbe(t, sys)
//		echo := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
//			if s, ok := c.Message().(string); ok {
//				c.Respond(s)
//			}
//		}))
//		probe.Request(echo, "hi")
//		probe.ExpectMsg("hi", testkit.Timeout())
//		probe.ExpectNoMsg(50 * time.Millisecond)
//	}
//
// # Real time
//
// Expectations wait in real time. Pass [Timeout] (3 s, 10 s on CI) when the
// point is "it arrives"; ExpectNoMsg waits its full duration, so keep it
// short. [Probe.Within] checks how long a block took, like Akka's within, and
// [Probe.Remaining] is the time left inside it:
//
//	probe.Within(0, time.Second, func() {
//		probe.ExpectMsg("1", probe.Remaining())
//		probe.ExpectNoMsg(probe.Remaining())
//	})
//
// # Manual clock
//
// Timer logic is tested without sleeping: the actor under test takes a
// clock.Clock, the test gives it clock.NewManual, moves time explicitly and
// then waits for the effect with a generous real-time bound:
//
//	clk := clock.NewManual(start)
//	pid := sys.Root.Spawn(throttlerProps(clk))
//	...
//	clk.Advance(time.Second) // fire the timers that are due
//	probe.ExpectMsg("4", testkit.Timeout())
//	probe.ExpectNoMsg(50 * time.Millisecond)
//
// Make sure the actor has armed its timer before advancing (for example with
// clock.Manual.WaitForPending, or by expecting a message the actor sends
// after arming it).
//
// # Senders
//
// [Probe.Send] and [Probe.Request] deliver with the probe as sender, so the
// receiver's c.Sender() is the probe. Note that protoactor's c.Respond sends
// without a sender: [Probe.LastSender] is then nil and [Probe.Reply] fails;
// actors that want to be answered reply with c.Request(c.Sender(), msg).
// [Probe.SetAutoReply] makes a probe answer by itself (a fake worker or
// master), [Probe.IgnoreMsg] drops noise such as heartbeats, and
// [Probe.Watch] with [Probe.ExpectTerminated] checks that an actor stopped.
//
// # Systems, members, leaks and failures
//
// [NewSystem] makes an actor system whose logs go to t.Log (Warn and above);
// in t.Cleanup it stops every actor still running ([StopAll]) and shuts the
// system down. [StartRemote] gives a system a loopback remote, so probes and
// actors on several in-process members can message each other (messages
// crossing members must be protobuf). Every test package calls
// [VerifyTestMain] from TestMain, which fails the run when goroutines are
// left behind. Failed expectations call t.Fatalf with what was expected,
// what arrived (type and value), its sender and what else is queued.
package testkit
