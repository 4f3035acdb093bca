package clock_test

import (
	"fmt"
	"time"

	"github.com/foreman-actors/foreman/actors/clock"
)

// A manual clock moves only when told, so timer logic is tested without
// sleeping: the callback runs inside Advance, at its due time.
func ExampleManual() {
	c := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c.AfterFunc(3*time.Second, func() { fmt.Println("fired at", c.Now().Format(time.TimeOnly)) })
	c.Advance(2 * time.Second)
	fmt.Println("pending:", c.Pending())
	c.Advance(2 * time.Second)
	fmt.Println("now:", c.Now().Format(time.TimeOnly))
	// Output:
	// pending: 1
	// fired at 00:00:03
	// now: 00:00:04
}
