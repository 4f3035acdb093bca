package testkit_test

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/messages"
)

// echoProps sends every message back to its sender, with itself as the
// sender (c.Respond would send it without one).
func echoProps() *actor.Props {
	return actor.PropsFromFunc(func(c actor.Context) {
		switch c.Message().(type) {
		case actor.AutoReceiveMessage, actor.SystemMessage:
			return
		}
		if c.Sender() != nil {
			c.Request(c.Sender(), c.Message())
		}
	})
}

func TestProbeRequestReply(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	p := testkit.NewProbe(t, sys)
	echo := sys.Root.Spawn(echoProps())

	p.Request(echo, "hello")
	require.Equal(t, "hello", p.ExpectMsg("hello", testkit.Timeout()))
	require.True(t, p.LastSender().Equal(echo), "sender is the echo actor")

	p.Send(echo, &messages.Ack{WorkId: "w1"})
	ack := testkit.ExpectMsgType[*messages.Ack](p, testkit.Timeout())
	require.Equal(t, "w1", ack.GetWorkId())

	// Reply goes back to the echo, which echoes it to the probe again.
	p.Reply("again")
	p.ExpectMsg("again", testkit.Timeout())
	p.ExpectNoMsg(20 * time.Millisecond)
}

func TestProbeAsSenderOfOtherProbe(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	a := testkit.NewProbe(t, sys)
	b := testkit.NewProbe(t, sys)

	a.Send(b.PID(), "ping")
	b.ExpectMsg("ping", testkit.Timeout())
	require.True(t, b.LastSender().Equal(a.PID()))
	b.Reply("pong")
	a.ExpectMsg("pong", testkit.Timeout())
	require.True(t, a.LastSender().Equal(b.PID()))
}
