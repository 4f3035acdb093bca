package testkit

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
)

// Stacks as runtime.Stack prints them, taken from a failing CI run and from
// protoactor-go's source (the paths are shortened).
const (
	requestLogTimer = `goroutine 4211 [chan receive]:
github.com/asynkron/protoactor-go/cluster.(*DefaultContext).Request.(*Config).ToClusterContextConfig.NewThrottleWithLogger.func3.1()
	/root/go/pkg/mod/github.com/asynkron/protoactor-go@v0.0.0-20240822202345-3c0e61ca19c9/actor/throttler.go:68 +0x8a
created by github.com/asynkron/protoactor-go/cluster.(*DefaultContext).Request.(*Config).ToClusterContextConfig.NewThrottleWithLogger.func3 in goroutine 4100
	/root/go/pkg/mod/github.com/asynkron/protoactor-go@v0.0.0-20240822202345-3c0e61ca19c9/actor/throttler.go:62 +0x8f`
	gossipTimer = `goroutine 90 [chan receive]:
github.com/asynkron/protoactor-go/cluster.NewGossipActor.NewThrottleWithLogger.func2.1()
	/root/go/pkg/mod/github.com/asynkron/protoactor-go@v0.0.0-20240822202345-3c0e61ca19c9/actor/throttler.go:68 +0x8a
created by github.com/asynkron/protoactor-go/cluster.NewGossipActor.NewThrottleWithLogger.func2 in goroutine 88
	/root/go/pkg/mod/github.com/asynkron/protoactor-go@v0.0.0-20240822202345-3c0e61ca19c9/actor/throttler.go:62 +0x8f`
	endpointWriter = `goroutine 77 [sleep]:
time.Sleep(0x77359400)
	/usr/local/go/src/runtime/time.go:363 +0x165
github.com/asynkron/protoactor-go/remote.(*endpointWriter).initialize(0xc0001a2000, {0x1c3e0a0, 0xc0002b6000})
	/root/go/pkg/mod/github.com/asynkron/protoactor-go@v0.0.0-20240822202345-3c0e61ca19c9/remote/endpoint_writer.go:61 +0x2a5`
	ownThrottler = `goroutine 12 [select]:
github.com/foreman-actors/foreman/actors/throttler.(*actorShell).run()
	/work/main/actors/throttler/throttler.go:40 +0x10`
)

func TestThrottleTimers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		stacks []string
		want   int
	}{
		{name: "None", stacks: nil, want: 0},
		{name: "RequestLogTimerIsWaitedFor", stacks: []string{requestLogTimer}, want: 1},
		{name: "GossipTimerIsLeftToTheIgnoreList", stacks: []string{gossipTimer}, want: 0},
		{name: "OtherProtoactorGoroutineIsNotATimer", stacks: []string{endpointWriter}, want: 0},
		{name: "AFileNamedThrottlerElsewhereIsNotATimer", stacks: []string{ownThrottler}, want: 0},
		{name: "CountsEach", stacks: []string{requestLogTimer, endpointWriter, requestLogTimer, gossipTimer}, want: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, throttleTimers(strings.Join(tc.stacks, "\n\n")))
		})
	}
}

// TestWaitThrottleTimersWaitsForARealThrottle starts a real protoactor log
// throttle with a short period and checks that the wait sees its goroutine
// and returns once it has ended (real time, generous bound).
func TestWaitThrottleTimersWaitsForARealThrottle(t *testing.T) {
	var called atomic.Int32
	valve := actor.NewThrottle(1, 300*time.Millisecond, func(int32) { called.Add(1) })
	valve()
	valve() // over the limit: the timer's goroutine calls back when the period ends
	require.Positive(t, throttleTimers(allStacks()), "the throttle's timer goroutine was not recognised")
	require.True(t, waitThrottleTimers(Timeout()), "the throttle's timer goroutine did not end")
	require.Zero(t, throttleTimers(allStacks()))
	require.Equal(t, int32(1), called.Load(), "the wait returned before the timer had run")
}

// TestWaitThrottleTimersGivesUp checks the bound: a timer longer than the
// limit is still there when the wait returns false.
func TestWaitThrottleTimersGivesUp(t *testing.T) {
	valve := actor.NewThrottle(1, 1500*time.Millisecond, func(int32) {})
	valve()
	require.False(t, waitThrottleTimers(100*time.Millisecond))
	require.True(t, waitThrottleTimers(Timeout()), "the 1.5 s timer did not end")
}
