package testkit

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TimerSettle bounds how long [VerifyTestMain] waits for protoactor's
// log-throttle timers to end before it looks for leaks. protoactor-go's
// actor.NewThrottle and NewThrottleWithLogger start a goroutine on the first
// event of a period that waits one period on a ticker and exits: the
// dead-letter throttle waits DeadLetterThrottleInterval (1 s by default),
// the pub-sub throttles 1 s, and the cluster request-log throttle 2 s
// (cluster_config_context.go, defaultRequestsLogThrottlePeriod, not
// configurable), started whenever a cluster request logs a timeout. A test
// that ends right after such an event leaves one behind for that long. The
// longest short period plus a second of slack for a loaded machine.
const TimerSettle = 3 * time.Second

// longThrottleSites are the protoactor call sites whose log throttle waits
// 60 s: waiting them out would add a minute to a package's run, so they are
// in [LeakIgnores] instead of waited for.
var longThrottleSites = []string{
	"newInformer",    // informer.go: NewThrottle(3, 60s)
	"NewGossipActor", // gossip_actor.go: NewThrottleWithLogger(3, 60s)
	"StartGossiping", // gossiper.go: NewThrottle(3, 60s)
}

// LeakIgnores are the goroutines [VerifyTestMain] does not count as leaks.
// Each was reviewed against protoactor-go's source; nothing else of
// protoactor is ignored.
var LeakIgnores = []goleak.Option{
	// The gossip actor's and the gossiper's log throttles wait one 60 s
	// period on a ticker after their first log of a period (a gossip state
	// change, cluster.Shutdown's "left" state) and then exit by themselves.
	// Bounded, not leaks, but too long to wait for (see TimerSettle).
	goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/cluster.NewGossipActor.NewThrottleWithLogger.func2.1"),
	goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/cluster.(*Gossiper).StartGossiping.NewThrottle.func3.1"),
}

// CrashLeakIgnores are the goroutines protoactor-go and gRPC leave behind
// when a member is killed in-process (no graceful leave, as a crash would),
// for the TestMain of packages whose tests do that: the survivors' endpoint
// writers retry the dead address up to remote.MaxRetryCount times with 2 s
// sleeps, and their gRPC client connections to it keep re-dialling; when a
// survivor is then stopped with Remote.Shutdown(false), as the tests do,
// protoactor never closes those connections, so they last as long as the
// test process (measured: 16 goroutines still there 20 s later). A real node
// exits instead. Each entry was reviewed against the sources.
var CrashLeakIgnores = []goleak.Option{
	goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
	goleak.IgnoreTopFunction("google.golang.org/grpc.(*addrConn).resetTransport"),
	goleak.IgnoreTopFunction("google.golang.org/grpc.(*addrConn).resetTransportAndUnlock"), // its name since gRPC 1.82
	goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/remote.(*endpointWriter).initialize"),
	// A killed member's gossip loop: Cluster.Shutdown(false) does not stop
	// it, and with an hour-long gossip interval (as tests set) it sleeps on.
	goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/cluster.(*Gossiper).gossipLoop"),
	// The dead-letter log throttle's one-period timer (see TimerSettle):
	// each one ends after 1 s, but the endpoint writers above keep failing
	// to reach the dead address and turn what they hold into dead letters,
	// so a fresh timer can start at any moment, also while VerifyTestMain
	// waits. Seen in a CI run of cluster/node's kill tests.
	goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
}

// VerifyTestMain runs the package's tests, then fails the run if goroutines
// are left behind (apart from [LeakIgnores] and extra). Call it from TestMain:
//
//	func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }
//
// Before looking, it waits up to [TimerSettle] for protoactor's short
// log-throttle timers to end, so a test that finished a moment after a dead
// letter or a timed-out cluster request does not fail the package at random.
// A throttle goroutine still there after that is reported like any leak.
func VerifyTestMain(m *testing.M, extra ...goleak.Option) {
	code := m.Run()
	if code == 0 {
		if err := FindLeaks(extra...); err != nil {
			fmt.Fprintf(os.Stderr, "testkit: goroutines left behind after all tests passed "+
				"(stop actors/systems in t.Cleanup, or add a reviewed goleak ignore):\n%v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// FindLeaks is the check [VerifyTestMain] runs, for a TestMain that does
// more around m.Run: it waits up to [TimerSettle] for protoactor's short
// log-throttle timers to end, then returns goleak's report of the
// goroutines left (apart from [LeakIgnores] and extra), nil when none.
func FindLeaks(extra ...goleak.Option) error {
	waitThrottleTimers(TimerSettle)
	opts := append(append([]goleak.Option{}, LeakIgnores...), extra...)
	return goleak.Find(opts...)
}

// waitThrottleTimers polls until no goroutine is waiting in a short
// protoactor log-throttle timer, or until limit has passed. It reports
// whether they all ended.
func waitThrottleTimers(limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		if throttleTimers(allStacks()) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond) // polling the runtime; nothing to wait on
	}
}

// allStacks returns the stack traces of every goroutine.
func allStacks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// throttleTimers counts the goroutines in stacks (runtime.Stack's format:
// one block per goroutine, separated by blank lines) that run inside
// protoactor-go's actor/throttler.go, apart from the 60 s ones
// (longThrottleSites). It matches the file, not the function name, because
// the closure's name depends on where the compiler inlined NewThrottle.
func throttleTimers(stacks string) int {
	n := 0
	for _, g := range strings.Split(stacks, "\n\n") {
		if !isThrottleTimer(g) {
			continue
		}
		long := false
		for _, site := range longThrottleSites {
			if strings.Contains(g, site) {
				long = true
				break
			}
		}
		if !long {
			n++
		}
	}
	return n
}

// isThrottleTimer reports whether one goroutine's stack has a frame in
// protoactor-go's actor/throttler.go.
func isThrottleTimer(stack string) bool {
	for _, line := range strings.Split(stack, "\n") {
		line = strings.TrimSpace(line)
		if strings.Contains(line, "asynkron/protoactor-go") && strings.Contains(line, "/actor/throttler.go:") {
			return true
		}
	}
	return false
}
