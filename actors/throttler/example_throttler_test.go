package throttler_test

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/throttler"
)

// The seed's example: 3 messages per second to a printer. A manual clock
// stands in for the wall clock, so the example runs instantly.
func Example() {
	system := actor.NewActorSystem()
	defer system.Shutdown()
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

	printed := make(chan string, 10)
	printer := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if s, ok := c.Message().(string); ok {
			printed <- s
		}
	}))
	props, err := throttler.Props(throttler.PerSecond(3), throttler.WithClock(clk), throttler.WithTarget(printer))
	if err != nil {
		panic(err)
	}
	thr := system.Root.Spawn(props)
	for _, m := range []string{"1", "2", "3", "4", "5"} {
		system.Root.Send(thr, m)
	}
	for range 3 {
		fmt.Println(<-printed)
	}
	fmt.Println("one second later")
	clk.WaitForPending(nil, 1) // the throttler has armed its timer
	clk.Advance(time.Second)
	for range 2 {
		fmt.Println(<-printed)
	}
	// Output:
	// 1
	// 2
	// 3
	// one second later
	// 4
	// 5
}

// A Limiter rate-limits without an actor, for example hand-outs of one job
// type by a master: grant now, or learn how long to wait.
func ExampleLimiter() {
	lim, err := throttler.NewLimiter(throttler.PerMinute(2))
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, at := range []time.Duration{0, 10 * time.Second, 20 * time.Second, 60 * time.Second} {
		ok, wait := lim.Reserve(now.Add(at))
		fmt.Printf("at %v: granted %v, wait %v\n", at, ok, wait)
	}
	// Output:
	// at 0s: granted true, wait 0s
	// at 10s: granted true, wait 0s
	// at 20s: granted false, wait 40s
	// at 1m0s: granted true, wait 0s
}

// Rate helpers and the interval between evenly paced deliveries.
func ExampleRate() {
	fmt.Println(throttler.PerMinute(10), throttler.PerMinute(10).Interval())
	// Output: 10/1m0s 6s
}
