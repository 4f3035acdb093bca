package throttler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/throttler"
	"github.com/foreman-actors/foreman/messages"
)

// TestIssuerActor: the shell answers PermitRequests from its Issuer on the
// injected clock: nothing for the first period (a new activation cannot
// know what its predecessor granted), then at most the rate per period in
// batches; a replacement activation holds off again; another job type is
// refused.
func TestIssuerActor(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewManual(start)
	sys := testkit.NewSystem(t)
	props, err := throttler.IssuerProps("square", throttler.PerSecond(10), clk, throttler.WithMaxBatch(4))
	require.NoError(t, err)
	pid := sys.Root.Spawn(props)
	p := testkit.NewProbe(t, sys)
	ask := func(jobType string, want int) *messages.PermitGrant {
		t.Helper()
		p.Request(pid, &messages.PermitRequest{JobType: jobType, Want: int32(want)})
		return testkit.ExpectMsgType[*messages.PermitGrant](p, testkit.Timeout())
	}

	g := ask("square", 4)
	require.Empty(t, g.GetPermits(), "held off for one period")
	require.Equal(t, start.Add(time.Second).UnixNano(), g.GetAgainUnixNano())

	clk.Advance(time.Second)
	total := 0
	for range 5 {
		g = ask("square", 4)
		permits, _ := throttler.GrantPermits(g)
		for _, q := range permits {
			require.False(t, q.NotBefore.Before(clk.Now()))
			require.True(t, q.NotAfter.Before(start.Add(2*time.Second)), "valid only to the period's end")
		}
		total += len(permits)
	}
	require.Equal(t, 10, total, "the rate per period, in batches of at most 4")
	g = ask("square", 4)
	require.Empty(t, g.GetPermits())
	require.Equal(t, start.Add(2*time.Second).UnixNano(), g.GetAgainUnixNano(), "ask again when the next period opens")

	g = ask("cube", 1)
	require.Contains(t, g.GetError(), `limits job type "square", not "cube"`)
	require.Empty(t, g.GetPermits())

	// A new activation (its node died) grants nothing for a period.
	require.NoError(t, sys.Root.StopFuture(pid).Wait())
	pid = sys.Root.Spawn(props)
	require.Empty(t, ask("square", 4).GetPermits())
	clk.Advance(time.Second)
	require.Len(t, ask("square", 4).GetPermits(), 4)
}

func TestIssuerPropsRefusesBadInput(t *testing.T) {
	t.Parallel()
	_, err := throttler.IssuerProps("", throttler.PerSecond(1), nil)
	require.ErrorIs(t, err, throttler.ErrInvalidOption)
	_, err = throttler.IssuerProps("square", throttler.Rate{Calls: 0, Per: time.Second}, nil)
	require.ErrorIs(t, err, throttler.ErrInvalidRate)
	_, err = throttler.IssuerProps("square", throttler.PerSecond(1), nil, throttler.WithIssuerMode(throttler.ModeTokenBucket))
	require.ErrorIs(t, err, throttler.ErrInvalidOption)
}
