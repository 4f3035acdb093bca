package node_test

import (
	"fmt"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/cluster/node"
)

// A --rate flag turns into master options: at most 10 squares per second
// and 100 factorizations per minute are handed out, whatever the queue holds.
func ExampleMasterRateOptions() {
	limits, err := node.ParseRateLimits("square=10/s, factorize=100/m")
	if err != nil {
		panic(err)
	}
	for _, l := range limits {
		fmt.Println(l)
	}
	opts, _ := node.RateLimitOptions(limits)
	_ = append([]master.Option{master.WithWorkTimeout(master.DefaultWorkTimeout)}, opts...) // pass to master.Props

	_, err = node.ParseRateLimits("square=10")
	fmt.Println(err != nil)
	// Output:
	// square=10/s
	// factorize=100/m
	// true
}
