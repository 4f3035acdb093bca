package testkit_test

import (
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/messages"
)

// TestProbeAcrossMembers proves that a probe's PID can be handed to an actor
// on another member: system B's actor answers the probe on system A.
func TestProbeAcrossMembers(t *testing.T) {
	t.Parallel()
	sysA := testkit.NewSystem(t)
	sysB := testkit.NewSystem(t)
	testkit.StartRemote(t, sysA)
	testkit.StartRemote(t, sysB)
	probe := testkit.NewProbe(t, sysA)
	require.NotEqual(t, "nonhost", probe.PID().GetAddress(), "probe PID must carry A's network address")

	// On B: acknowledge every Work to its sender, and also to a PID named
	// in the work (the probe), to show a PID handed over as data works.
	ackB := sysB.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if w, ok := c.Message().(*messages.Work); ok {
			c.Request(c.Sender(), &messages.Ack{WorkId: w.GetWorkId()})
		}
	}))

	probe.Request(ackB, &messages.Work{WorkId: "w-42", JobType: "square"})
	ack := testkit.ExpectMsgType[*messages.Ack](probe, testkit.Timeout())
	require.Equal(t, "w-42", ack.GetWorkId())
	require.Equal(t, sysB.Address(), probe.LastSender().GetAddress(), "the reply came from member B")

	// And back: the probe replies to B's actor across the wire, which
	// answers again.
	probe.Reply(&messages.Work{WorkId: "w-43"})
	probe.ExpectMsg(&messages.Ack{WorkId: "w-43"}, testkit.Timeout())
}
