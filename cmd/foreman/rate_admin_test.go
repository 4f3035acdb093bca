package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/throttler"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/node"
)

// startRateNode runs an all-in-one node with --rate square=20/s on j behind
// the HTTP API with the node's rates (as `foreman --http` serves it), and
// returns the API's address and a function that stops both.
func startRateNode(t *testing.T, j *journal.Memory) (addr string, stop func()) {
	t.Helper()
	sys := testkit.NewSystem(t)
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Timeout())
	defer cancel()
	n, err := node.StartLocal(ctx, node.WithActorSystem(sys), node.WithJournal(j), node.WithLogger(sys.Logger()), node.WithWorkers(1),
		node.WithSquareDelay(0, 0), node.WithRateLimits([]node.RateLimit{{JobType: "square", Rate: throttler.Rate{Calls: 20, Per: time.Second}}}))
	require.NoError(t, err)
	b, err := httpapi.NewActorBackend(n.Client(), httpapi.LocalMembers(sys))
	require.NoError(t, err)
	srv, err := httpapi.New(b, httpapi.WithAddr("127.0.0.1:0"), httpapi.WithLogger(sys.Logger()), httpapi.WithRateAdmin(nodeRates{n}))
	require.NoError(t, err)
	require.NoError(t, srv.Start(ctx))
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		sctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
		defer cancel()
		require.NoError(t, srv.Shutdown(sctx))
		require.NoError(t, n.Stop(sctx))
	}
	t.Cleanup(stop)
	return srv.Addr(), stop
}

// TestRatesOnANode: the rate endpoints and `foreman rate` through real
// HTTP on a real all-in-one node: the list shows the --rate throttler, set
// changes it (seen in the list), an unlimited type is 404, and a new node on
// the same journal keeps the changed rate.
func TestRatesOnANode(t *testing.T) {
	t.Parallel()
	j := journal.NewMemory()
	t.Cleanup(func() { require.NoError(t, j.Close()) })
	addr, stop := startRateNode(t, j)
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Timeout())
	defer cancel()
	c, err := httpapi.NewClient(addr)
	require.NoError(t, err)

	list, err := c.Rates(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "square", list[0].Type)
	require.Equal(t, "20/s", list[0].Rate)
	require.Equal(t, httpapi.RateModeTimer, list[0].Mode)
	require.Empty(t, list[0].Error)

	// Jobs run under the rate, and the throttler counts their permits.
	for _, p := range []string{"1", "2", "3"} {
		id, err := c.Submit(ctx, httpapi.SubmitRequest{Type: "square", Payload: []byte(p)})
		require.NoError(t, err)
		info, err := c.Wait(ctx, id, 20*time.Millisecond)
		require.NoError(t, err, "%+v", info)
		require.Equal(t, httpapi.StatusDone, info.Status)
	}
	list, err = c.Rates(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, list[0].Granted, uint64(3), "%+v", list[0])

	code, out, errOut := runCmd(runRate, "set", "square=50/s", "--strict", "--to", addr)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "rate of square set to 50/s (strict)\n", out)
	code, out, errOut = runCmd(runRate, "list", "--to", addr)
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	require.Equal(t, []string{"TYPE", "RATE", "MODE", "NODE", "QUEUED", "GRANTED", "REFUSED"}, strings.Fields(lines[0]))
	require.Equal(t, []string{"square", "50/s", "strict"}, strings.Fields(lines[1])[:3])

	_, err = c.SetRate(ctx, "cube", httpapi.RateRequest{Rate: "5/s"})
	require.ErrorIs(t, err, httpapi.ErrNotFound)
	require.ErrorContains(t, err, `"cube" is not limited`)
	code, _, errOut = runCmd(runRate, "set", "cube=5/s", "--to", addr)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "server answered 404")

	// Durable: a node started again on the same journal, with the same
	// --rate, has the changed rate.
	stop()
	addr, _ = startRateNode(t, j)
	c, err = httpapi.NewClient(addr)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		list, err = c.Rates(ctx)
		return err == nil && len(list) == 1 && list[0].Rate == "50/s" && list[0].Mode == httpapi.RateModeStrict
	}, testkit.Timeout(), 50*time.Millisecond, "after a restart: %+v %v", list, err)
}
