package testkit_test

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/testkit"
)

// limiter is a tiny stand-in for the seed's TimerBasedThrottler: it forwards
// at most n messages per period to target, refilling its vouchers on every
// tick of a clock.Clock ticker. It exists only to show test shapes.
type limiter struct {
	clk      clock.Clock
	n        int
	period   time.Duration
	target   *actor.PID
	vouchers int
	queue    []any
	stop     chan struct{}
	done     chan struct{}
}

type limiterTick struct{}

func limiterProps(clk clock.Clock, n int, period time.Duration, target *actor.PID) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &limiter{clk: clk, n: n, period: period, target: target}
	})
}

func (l *limiter) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		l.vouchers = l.n
		l.stop, l.done = make(chan struct{}), make(chan struct{})
		tk := l.clk.NewTicker(l.period)
		self, root := c.Self(), c.ActorSystem().Root
		go func() {
			defer close(l.done)
			defer tk.Stop()
			for {
				select {
				case <-tk.C():
					root.Send(self, limiterTick{})
				case <-l.stop:
					return
				}
			}
		}()
	case *actor.Stopping:
		close(l.stop)
		<-l.done
	case limiterTick:
		l.vouchers = l.n
		l.flush(c)
	case actor.SystemMessage, actor.AutoReceiveMessage:
	default:
		l.queue = append(l.queue, m)
		l.flush(c)
	}
}

func (l *limiter) flush(c actor.Context) {
	for l.vouchers > 0 && len(l.queue) > 0 {
		c.Send(l.target, l.queue[0])
		l.queue = l.queue[1:]
		l.vouchers--
	}
}

// TestSeedRateShapeRealTime is the seed's "respect the rate (3 msg/s)" test,
// line by line, against the local limiter in real time:
//
//	within(1 second) { expectMsg("1") expectMsg("2") expectMsg("3") expectNoMsg(remaining) }
//	within(1 second) { expectMsg("4") expectMsg("5") expectMsg("6") expectNoMsg(remaining) }
//	within(1 seconds) { expectMsg("7") }
//
// The limiter's period is 1.25 s rather than 1 s: its ticker starts when
// the actor starts, slightly before the first within block, and the extra
// quarter second keeps each batch inside its block on a loaded machine.
// (The seed's throttler starts its timer at the first message instead.)
func TestSeedRateShapeRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test (about 2.5 s); skipped with -short")
	}
	t.Parallel()
	sys := testkit.NewSystem(t)
	p := testkit.NewProbe(t, sys)
	throttler := sys.Root.Spawn(limiterProps(clock.Real, 3, 1250*time.Millisecond, p.PID()))
	for _, m := range []string{"1", "2", "3", "4", "5", "6", "7"} {
		sys.Root.Send(throttler, m)
	}

	p.Within(0, time.Second, func() {
		p.ExpectMsg("1", p.Remaining())
		p.ExpectMsg("2", p.Remaining())
		p.ExpectMsg("3", p.Remaining())
		p.ExpectNoMsg(p.Remaining())
	})
	p.Within(0, time.Second, func() {
		p.ExpectMsg("4", p.Remaining())
		p.ExpectMsg("5", p.Remaining())
		p.ExpectMsg("6", p.Remaining())
		p.ExpectNoMsg(p.Remaining())
	})
	p.Within(0, time.Second, func() {
		p.ExpectMsg("7", p.Remaining())
	})
}

// TestSeedRateShapeManualClock is the same test with a manual clock: no
// waiting for real seconds, and no dependence on the machine's load.
func TestSeedRateShapeManualClock(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	p := testkit.NewProbe(t, sys)
	clk := clock.NewManual(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	throttler := sys.Root.Spawn(limiterProps(clk, 3, time.Second, p.PID()))
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer cancel()
	require.True(t, clk.WaitForPending(ctx.Done(), 1), "the limiter armed its ticker")
	for _, m := range []string{"1", "2", "3", "4", "5", "6", "7"} {
		p.Send(throttler, m)
	}

	p.ExpectMsg("1", testkit.Timeout())
	p.ExpectMsg("2", testkit.Timeout())
	p.ExpectMsg("3", testkit.Timeout())
	p.ExpectNoMsg(50 * time.Millisecond)

	clk.Advance(time.Second)
	p.ExpectMsg("4", testkit.Timeout())
	p.ExpectMsg("5", testkit.Timeout())
	p.ExpectMsg("6", testkit.Timeout())
	p.ExpectNoMsg(50 * time.Millisecond)

	clk.Advance(time.Second)
	p.ExpectMsg("7", testkit.Timeout())
}
