package sim_test

import (
	"context"
	"fmt"

	"github.com/foreman-actors/foreman/actors/sim"
)

// A search over seeds with the default cluster and fault mix, then the
// replay of one seed (set Config.Trace to see every event).
func Example() {
	cfg := sim.DefaultConfig()
	failed, err := sim.Search(context.Background(), cfg, sim.Seeds(1, 20), 2, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("failed:", failed != nil)

	cfg.Seed = 7
	a, _ := sim.Run(context.Background(), cfg)
	b, _ := sim.Run(context.Background(), cfg)
	fmt.Println("same schedule:", a.Events == b.Events && a.Acked == b.Acked)
	// Output:
	// failed: false
	// same schedule: true
}
