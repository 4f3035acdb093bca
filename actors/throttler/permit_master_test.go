package throttler_test

import (
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/throttler"
)

// A PermitPool is what a master shard is given with
// master.WithDispatchLimiter to take part in a cluster-wide rate limit.
var _ master.DispatchLimiter = (*throttler.PermitPool)(nil)
