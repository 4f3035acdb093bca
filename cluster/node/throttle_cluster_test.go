//go:build !race

package node_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/throttler"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/messages"
)

// TestClusterRateLimit: 2 backends, 2 shards, square limited to 20/s
// across the cluster by one throttler actor (the seed's timer mode: 20
// vouchers per period). Both shards have a queue, so two per-process limits
// would start 40 a second; one cluster-wide limit starts at most 20 in each
// of its periods, so no window shorter than two periods holds more than
// three periods' worth (60). The backend hosting the throttler is killed
// mid-run: its successor resumes from the journal (the predecessor's
// grants count, its period ends on time), the rate holds across, and every
// acked job runs. Then Rates shows the successor and SetRate changes the
// rate cluster-wide, durably.
func TestClusterRateLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test: skipped with -short")
	}
	const (
		shards = 2
		rate   = 20
		jobs   = 140
	)
	h := newClusterHarness(t)
	limits := []node.RateLimit{{JobType: "square", Rate: throttler.PerSecond(rate)}}
	backend := func(c *node.ClusterConfig) {
		c.Shards = shards
		c.RateLimits = limits
		c.MasterOptions = []master.Option{master.WithWorkTimeout(5 * time.Second)}
	}
	backends := make([]*node.ClusterNode, 2)
	for i := range backends {
		backends[i], _ = h.start(node.RoleBackend, backend)
	}
	fe, _ := h.start(node.RoleFrontend, func(c *node.ClusterConfig) {
		c.Shards = shards
		c.FrontendOptions = quickFrontend()
	})
	var (
		mu     sync.Mutex
		starts []time.Time
		ran    = map[string]bool{}
	)
	reg := worker.NewRegistry()
	require.NoError(t, reg.Register("square", func(_ context.Context, p []byte) ([]byte, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		ran[string(p)] = true
		mu.Unlock()
		return p, nil
	}))
	wn, _ := h.start(node.RoleWorker, func(c *node.ClusterConfig) {
		c.Shards = shards
		c.Workers = 2
		c.Registry = reg
		c.WorkerOptions = []worker.Option{worker.WithRegisterInterval(500 * time.Millisecond), worker.WithResendInterval(time.Second), worker.WithWindow(8)}
	})
	client := fe.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	waitShards(ctx, t, client, shards)

	perShard := make([]int, shards)
	for i := range jobs {
		id := fmt.Sprintf("rl-%03d", i)
		require.NoError(t, client.Submit(ctx, &messages.Work{WorkId: id, JobType: "square", Payload: []byte(id)}))
		perShard[route.ShardOf(id, shards)]++
	}
	for k, n := range perShard {
		require.Greater(t, n, jobs/4, "shard %d has too small a queue to compete for the rate", k)
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(ran)
	}
	require.Eventually(t, func() bool { return count() >= jobs/3 }, time.Minute, 10*time.Millisecond)

	// Kill the backend that hosts the throttler.
	var victim *node.ClusterNode
	for _, b := range backends {
		pid := b.Cluster().Get("square", node.ThrottleKind("square"))
		require.NotNil(t, pid, "the throttler is placed")
		for _, c := range backends {
			if c.Address() == pid.GetAddress() {
				victim = c
			}
		}
	}
	require.NotNil(t, victim, "the throttler runs on a backend")
	t.Logf("killing %s, which hosts the throttler, after %d jobs ran", victim.Address(), count())
	victim.Kill()

	require.Eventually(t, func() bool { return count() == jobs }, 2*time.Minute, 10*time.Millisecond, "every acked job runs")

	mu.Lock()
	ts := slices.Clone(starts)
	mu.Unlock()
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	// No window of (a little less than) two periods holds more than three
	// periods' vouchers; the slack is for the hand-out's trip from master to
	// worker, which moves starts a few milliseconds against the grants.
	const window = 1900 * time.Millisecond
	most := 0
	for i := range ts {
		j := i
		for j < len(ts) && ts[j].Sub(ts[i]) < window {
			j++
		}
		most = max(most, j-i)
	}
	perSecond := make([]int, int(ts[len(ts)-1].Sub(ts[0])/time.Second)+1)
	for _, x := range ts {
		perSecond[int(x.Sub(ts[0])/time.Second)]++
	}
	t.Logf("%d starts over %v; at most %d in any %v; per second: %v", len(ts), ts[len(ts)-1].Sub(ts[0]).Round(time.Millisecond), most, window, perSecond)
	require.LessOrEqual(t, most, 3*rate, "the limit holds across both shards and the throttler's failover")
	// The rate bounds the run from below too: at most two periods' worth
	// can start before the third period opens.
	require.GreaterOrEqual(t, ts[len(ts)-1].Sub(ts[0]), time.Duration(jobs-2*rate)*time.Second/rate-time.Second)

	var survivor *node.ClusterNode
	for _, b := range backends {
		if b != victim {
			survivor = b
		}
	}
	rates, err := survivor.Rates(ctx)
	require.NoError(t, err)
	require.Len(t, rates, 1)
	require.NoError(t, rates[0].Err)
	require.Equal(t, "square", rates[0].JobType)
	require.Equal(t, throttler.PerSecond(rate), rates[0].Rate)
	require.Equal(t, survivor.Address(), rates[0].Node, "the successor runs on the surviving backend")
	require.NotZero(t, rates[0].Granted, "the successor granted the rest")

	require.NoError(t, fe.SetRate(ctx, "square", throttler.PerMinute(90), true), "any node sets a rate, a frontend included")
	rates, err = fe.Rates(ctx)
	require.NoError(t, err)
	require.Equal(t, throttler.PerMinute(90), rates[0].Rate)
	require.True(t, rates[0].Strict)
	require.ErrorIs(t, fe.SetRate(ctx, "factorize", throttler.PerSecond(1), false), node.ErrNotLimited)
	require.ErrorIs(t, fe.SetRate(ctx, "square", throttler.Rate{Calls: 0, Per: time.Second}, false), node.ErrInvalidConfig)

	wn.Kill()
	require.NoError(t, survivor.Stop(ctx))
}
