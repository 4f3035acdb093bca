package node_test

import (
	"fmt"

	"github.com/foreman-actors/foreman/cluster/node"
)

// A --rate flag turns into rate limits: at most 10 squares per second and
// 100 factorizations per minute are handed out, whatever the queue holds.
// Give them to StartLocal with node.WithRateLimits, or to a cluster's
// backends in ClusterConfig.RateLimits: each limited type gets a throttler.
func ExampleParseRateLimits() {
	limits, err := node.ParseRateLimits("square=10/s, factorize=100/m:strict")
	if err != nil {
		panic(err)
	}
	for _, l := range limits {
		fmt.Println(l)
	}
	_ = node.WithRateLimits(limits)

	_, err = node.ParseRateLimits("square=10")
	fmt.Println(err != nil)
	// Output:
	// square=10/s
	// factorize=100/m:strict
	// true
}
