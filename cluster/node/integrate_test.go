package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/adaptive"
	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/throttler"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/messages"
)

func TestParseRateLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		spec    string
		want    []node.RateLimit
		wantErr string // substring; "" means success
	}{
		{name: "Empty", spec: "", want: nil},
		{name: "Blank", spec: "  ", want: nil},
		{name: "TheExample", spec: "square=10/s,factorize=100/m", want: []node.RateLimit{
			{JobType: "square", Rate: throttler.PerSecond(10)},
			{JobType: "factorize", Rate: throttler.PerMinute(100)},
		}},
		{name: "SpacesAndLongUnits", spec: " square = 3 / sec , sleep=1/Hour, x=2/minute ", want: []node.RateLimit{
			{JobType: "square", Rate: throttler.PerSecond(3)},
			{JobType: "sleep", Rate: throttler.PerHour(1)},
			{JobType: "x", Rate: throttler.PerMinute(2)},
		}},
		{name: "GoDuration", spec: "square=5/250ms,b=1/1m30s", want: []node.RateLimit{
			{JobType: "square", Rate: throttler.Rate{Calls: 5, Per: 250 * time.Millisecond}},
			{JobType: "b", Rate: throttler.Rate{Calls: 1, Per: 90 * time.Second}},
		}},
		{name: "Strict", spec: "square=10/s:strict, b=2/m : strict,c=1/h", want: []node.RateLimit{
			{JobType: "square", Rate: throttler.PerSecond(10), Strict: true},
			{JobType: "b", Rate: throttler.PerMinute(2), Strict: true},
			{JobType: "c", Rate: throttler.PerHour(1)},
		}},
		{name: "UnknownMode", spec: "square=10/s:exact", wantErr: `mode "exact" is not "strict"`},
		{name: "EmptyMode", spec: "square=10/s:", wantErr: `mode "" is not "strict"`},
		{name: "NoEquals", spec: "square:10/s", wantErr: `rate limit 1 "square:10/s": no '='`},
		{name: "NoSlash", spec: "square=10", wantErr: "no '/' between the count and the period"},
		{name: "ZeroCount", spec: "square=0/s", wantErr: `count "0" is not a whole number from 1 to 1048576`},
		{name: "NegativeCount", spec: "square=-1/s", wantErr: "not a whole number"},
		{name: "FractionalCount", spec: "square=1.5/s", wantErr: "not a whole number"},
		{name: "HugeCount", spec: "square=2000000/s", wantErr: "count 2000000 is above 1048576"},
		{name: "UnknownPeriod", spec: "square=1/fortnight", wantErr: `period "fortnight" is neither s, m, h nor a positive Go duration`},
		{name: "ZeroPeriod", spec: "square=1/0s", wantErr: `period "0s" is neither s, m, h nor a positive Go duration`},
		{name: "MissingPeriod", spec: "square=1/", wantErr: "the period is missing"},
		{name: "EmptyJobType", spec: "=1/s", wantErr: "must be a non-empty name"},
		{name: "JobTypeWithSpace", spec: "sq uare=1/s", wantErr: "without spaces"},
		{name: "Duplicate", spec: "a=1/s,b=2/s,a=3/m", wantErr: `rate limit 3 "a=3/m": job type "a" is limited twice`},
		{name: "StrayComma", spec: "a=1/s,", wantErr: "rate limit 2 \"\": empty item"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := node.ParseRateLimits(tt.spec)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, node.ErrInvalidConfig)
				require.ErrorContains(t, err, tt.wantErr)
				require.ErrorContains(t, err, "e.g.", "the error gives an example of what is accepted")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// FuzzParseRateLimits checks that any spec parses or fails cleanly, and that
// a parsed spec formats back (RateLimit.String) to an equal one.
func FuzzParseRateLimits(f *testing.F) {
	for _, s := range []string{"square=10/s,factorize=100/m", "a=1/250ms", "a=1/s,a=1/s", "x=0/h", ",", "a=1/1h1m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		got, err := node.ParseRateLimits(spec)
		if err != nil {
			require.ErrorIs(t, err, node.ErrInvalidConfig)
			return
		}
		parts := make([]string, len(got))
		for i, l := range got {
			require.NoError(t, l.Rate.Validate())
			parts[i] = l.String()
		}
		again, err := node.ParseRateLimits(strings.Join(parts, ","))
		require.NoError(t, err)
		require.Equal(t, got, again)
	})
}

// Reference: seed 002, "at most N messages per period"; enforced where the
// master hands work out, per job type.
func TestRateLimitedMasterHandsOutAtMostNPerPeriod(t *testing.T) {
	t.Parallel()
	mem := journal.NewMemory()
	t.Cleanup(func() { _ = mem.Close() })
	sys := testkit.NewSystem(t)
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	lim, err := throttler.NewLimiter(throttler.PerSecond(3))
	require.NoError(t, err)
	rates := []master.Option{master.WithDispatchLimiter("square", lim)}
	// No lease: the test jumps the manual clock by most of a second at once,
	// which a lease holder takes as a pause that lost its lease.
	props, err := master.Props(mem, append([]master.Option{master.WithClock(clk), master.WithLogger(testLogger()), master.WithLeaseTTL(0)}, rates...)...)
	require.NoError(t, err)
	m := sys.Root.Spawn(props)

	front, wrk := testkit.NewProbe(t, sys), testkit.NewProbe(t, sys)
	const squares = 10
	for i := range squares {
		id := fmt.Sprint("sq-", i)
		front.Send(m, &messages.Work{WorkId: id, JobType: "square", Payload: []byte("2")})
		front.ExpectMsg(&messages.Ack{WorkId: id}, testkit.Timeout())
	}
	for i := range 2 {
		id := fmt.Sprint("echo-", i)
		front.Send(m, &messages.Work{WorkId: id, JobType: "echo"})
		front.ExpectMsg(&messages.Ack{WorkId: id}, testkit.Timeout())
	}
	wrk.Send(m, &messages.RegisterWorker{WorkerId: "w1", Worker: pids.Wire(wrk.PID())})
	wrk.ExpectMsg(&messages.WorkIsReady{}, testkit.Timeout())

	// request asks for up to 20 works and returns those handed out.
	request := func() []*messages.Work {
		wrk.Send(m, &messages.WorkerRequestsWork{WorkerId: "w1", Worker: pids.Wire(wrk.PID()), Capacity: 20})
		wrk.Request(m, &messages.GetMasterStatus{})
		var got []*messages.Work
		for {
			switch msg := wrk.FishForMessage(testkit.Timeout(), func(any) bool { return true }).(type) {
			case *messages.Work:
				got = append(got, msg)
			case *messages.WorkBundle:
				got = append(got, msg.GetWorks()...)
			case *messages.MasterStatus:
				return got
			}
		}
	}
	countSquares := func(ws []*messages.Work) int {
		n := 0
		for _, w := range ws {
			if w.GetJobType() == "square" {
				n++
			}
		}
		return n
	}

	first := request()
	require.Equal(t, 3, countSquares(first), "3 squares per second")
	require.Len(t, first, 5, "the unlimited type is not held back")
	require.Empty(t, request(), "the second's budget is spent")

	handed := 3
	for period := 1; handed < squares; period++ {
		clk.Advance(999 * time.Millisecond)
		require.Empty(t, request(), "period %d: not a full second yet", period)
		clk.Advance(time.Millisecond)
		got := request()
		require.Equal(t, min(3, squares-handed), countSquares(got), "period %d", period)
		handed += len(got)
	}
	require.Equal(t, squares, handed)
}

func TestNewAdaptivePool(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, policy string
		max          int
		wantNil      bool
		wantErr      string
	}{
		{name: "Off", policy: "off", max: 8, wantNil: true},
		{name: "Empty", policy: "", max: 8, wantNil: true},
		{name: "Default", policy: "default", max: 8},
		{name: "Vegas", policy: " Vegas ", max: 8},
		{name: "Seed", policy: "seed", max: 1},
		{name: "Unknown", policy: "fastest", max: 8, wantErr: `unknown policy: "fastest" (want one of default, seed, vegas) (or off)`},
		{name: "NoRoom", policy: "default", max: 0, wantErr: "want at least 1 (workers x window)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lim, err := node.NewAdaptivePool(tt.policy, tt.max)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, node.ErrInvalidConfig)
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			if tt.wantNil {
				require.Nil(t, lim)
				return
			}
			require.NotNil(t, lim)
			t.Cleanup(lim.Close)
			require.GreaterOrEqual(t, lim.Limit(), 1)
			require.LessOrEqual(t, lim.Limit(), tt.max)
		})
	}

	t.Run("NeverAboveMaxJobs", func(t *testing.T) {
		t.Parallel()
		clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		lim, err := node.NewAdaptivePool("seed", 3, adaptive.WithClock(clk))
		require.NoError(t, err)
		t.Cleanup(lim.Close)
		ctx := context.Background()
		for range 200 {
			p, err := lim.Acquire(ctx)
			require.NoError(t, err)
			clk.Advance(time.Millisecond)
			p.Release()
			require.LessOrEqual(t, lim.Limit(), 3)
		}
	})
}

// The pieces together on one actor system: a rate-limited master and
// workers whose pool is one adaptive limiter.
func TestRateLimitedMasterWithAdaptiveWorkers(t *testing.T) {
	t.Parallel()
	lim, err := node.NewAdaptivePool("default", 4)
	require.NoError(t, err)
	t.Cleanup(lim.Close) // after the node has stopped (cleanups run last first)
	rates, err := node.ParseRateLimits("square=1000/s")
	require.NoError(t, err)
	mem := journal.NewMemory()
	t.Cleanup(func() { _ = mem.Close() })
	sys := testkit.NewSystem(t)
	l, err := node.StartLocal(context.Background(), node.WithActorSystem(sys), node.WithJournal(mem),
		node.WithLogger(sys.Logger()), node.WithWorkers(2), node.WithRegistry(squareRegistry(t)),
		node.WithRateLimits(rates), node.WithWorkerOptions(worker.WithLimiter(lim), worker.WithWindow(2)))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, l.Stop(ctx))
	})
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer cancel()
	const jobs = 20
	for i := range jobs {
		require.NoError(t, l.Client().Submit(ctx, &messages.Work{WorkId: fmt.Sprint("w", i), JobType: "square", Payload: []byte(fmt.Sprint(i))}))
	}
	require.Eventually(t, func() bool { return lim.Stats().Completed >= jobs }, testkit.Timeout(), 5*time.Millisecond)
	require.LessOrEqual(t, lim.Stats().InFlight, 4)
}

// An all-in-one node with a strict rate hands its work out at the rate: 60
// jobs at 20/s strict are done in about 3.3 s (the permits' lead and 60
// spacings of 50.5 ms), never in less than 2 s (the bound: 20 in any
// second); the upper bound is generous for a loaded machine. (Item 5's
// report of a job left accepted for 3 s on such a node did not reproduce
// here on the code before the strict groups either: 3.6 s for the 60.)
func TestLocalStrictRateHandsOutAtTheRate(t *testing.T) {
	t.Parallel()
	lim, err := node.NewAdaptivePool("default", 4)
	require.NoError(t, err)
	t.Cleanup(lim.Close)
	rates, err := node.ParseRateLimits("square=20/s:strict")
	require.NoError(t, err)
	mem := journal.NewMemory()
	t.Cleanup(func() { _ = mem.Close() })
	sys := testkit.NewSystem(t)
	l, err := node.StartLocal(context.Background(), node.WithActorSystem(sys), node.WithJournal(mem),
		node.WithLogger(sys.Logger()), node.WithWorkers(2), node.WithRegistry(squareRegistry(t)),
		node.WithRateLimits(rates), node.WithWorkerOptions(worker.WithLimiter(lim), worker.WithWindow(2)))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, l.Stop(ctx))
	})
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer cancel()
	const jobs = 60
	start := time.Now()
	for i := range jobs {
		require.NoError(t, l.Client().Submit(ctx, &messages.Work{WorkId: fmt.Sprint("w", i), JobType: "square", Payload: []byte(fmt.Sprint(i))}))
	}
	require.Eventually(t, func() bool { return lim.Stats().Completed >= jobs }, 8*time.Second, 5*time.Millisecond,
		"60 jobs at 20/s strict")
	took := time.Since(start)
	t.Logf("%d jobs at 20/s strict done in %s", jobs, took)
	require.Greater(t, took, 2*time.Second, "faster than 20 per second")
}
