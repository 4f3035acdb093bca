package adaptive_test

import (
	"fmt"
	"time"

	"github.com/foreman-actors/foreman/actors/adaptive"
)

// The seed's naive Parallel mailbox starts a whole batch at once; its Queued
// mailbox keeps 4 in flight and queues the rest. Both are policies, so they
// run on the same Core, Scheduler (WithUnbounded, WithFixed) and Limiter as
// the tuned ones.
func ExampleUnbounded() {
	now := time.Date(2019, 12, 2, 15, 49, 31, 0, time.UTC)
	fixed, err := adaptive.NewFixed(4)
	if err != nil {
		panic(err)
	}
	for _, p := range []adaptive.Policy{adaptive.Unbounded(), fixed} {
		c := adaptive.NewCore[int](p)
		started := c.PushBatch(now, make([]int, 10))
		fmt.Printf("started %d, Queue: %d, In Flight: %d\n", len(started), c.Stats().Queue, c.Stats().InFlight)
	}
	// Output:
	// started 10, Queue: 0, In Flight: 10
	// started 4, Queue: 6, In Flight: 4
}
