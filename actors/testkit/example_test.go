package testkit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/testkit"
)

// exampleT stands in for the *testing.T that a real test passes; examples
// do not get one.
type exampleT struct{ cleanups []func() }

func (t *exampleT) Helper()                           {}
func (t *exampleT) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Log(...any)                        {}
func (t *exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// finish runs the clean-ups, last registered first, as the testing package does.
func (t *exampleT) finish() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// A probe talks to an actor and checks its answer and its silence.
func Example() {
	t := &exampleT{} // in a test: the *testing.T
	defer t.finish()

	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	greeter := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if name, ok := c.Message().(string); ok {
			c.Request(c.Sender(), "hello "+name)
		}
	}))

	probe.Request(greeter, "ada")
	fmt.Println(probe.ExpectMsg("hello ada", testkit.Timeout()))
	fmt.Println("from the greeter:", probe.LastSender().Equal(greeter))
	probe.ExpectNoMsg(20 * time.Millisecond)
	// Output:
	// hello ada
	// from the greeter: true
}

// The seed's "respect the rate (3 msg/s)" test with a manual clock: the
// test moves time, then waits in real time (generously) for the effect.
func Example_manualClock() {
	t := &exampleT{}
	defer t.finish()

	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	clk := clock.NewManual(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	throttler := sys.Root.Spawn(limiterProps(clk, 3, time.Second, probe.PID()))
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer cancel()
	clk.WaitForPending(ctx.Done(), 1) // the ticker is armed
	for _, m := range []string{"1", "2", "3", "4", "5", "6", "7"} {
		probe.Send(throttler, m)
	}

	fmt.Println(probe.ReceiveN(3, testkit.Timeout()))
	probe.ExpectNoMsg(20 * time.Millisecond)
	clk.Advance(time.Second)
	fmt.Println(probe.ReceiveN(3, testkit.Timeout()))
	probe.ExpectNoMsg(20 * time.Millisecond)
	clk.Advance(time.Second)
	fmt.Println(probe.ExpectMsg("7", testkit.Timeout()))
	// Output:
	// [1 2 3]
	// [4 5 6]
	// 7
}
