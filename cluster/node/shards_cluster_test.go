//go:build !race

package node_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/messages"
)

// TestClusterShards: 3 backends, 4 shards, a frontend and workers on 2
// nodes. Jobs are submitted by id (each to its shard's master); the
// backend hosting the most shards' masters is killed (no leave, as
// SIGKILL) mid-run. Every acked job completes, every shard answers again
// (a moved shard with a new epoch), the shards not on the killed node ack
// at once during the failover, and the frontend's durable result feed,
// read with one cursor over the 4 shards, delivers every job's result.
func TestClusterShards(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test: skipped with -short")
	}
	const shards = 4
	h := newClusterHarness(t)
	sharded := func(c *node.ClusterConfig) {
		c.Shards = shards
		c.MasterOptions = []master.Option{master.WithWorkTimeout(5 * time.Second), master.WithSnapshotEvery(100)}
	}
	backends := make([]*node.ClusterNode, 3)
	for i := range backends {
		backends[i], _ = h.start(node.RoleBackend, sharded)
	}
	var (
		mu      sync.Mutex
		results = map[string]int{}
	)
	fe, _ := h.start(node.RoleFrontend, func(c *node.ClusterConfig) {
		sharded(c)
		c.OnResult = func(r *messages.WorkResult) {
			mu.Lock()
			results[r.GetWorkId()]++
			mu.Unlock()
		}
		c.FrontendOptions = quickFrontend()
	})
	reg := squareRegistry(t)
	var workerNodes []*node.ClusterNode
	for range 2 {
		wn, _ := h.start(node.RoleWorker, func(c *node.ClusterConfig) {
			sharded(c)
			c.Workers = 1
			c.Registry = reg
			c.WorkerOptions = []worker.Option{worker.WithRegisterInterval(500 * time.Millisecond), worker.WithResendInterval(time.Second), worker.WithWindow(8)}
		})
		workerNodes = append(workerNodes, wn)
	}
	client := fe.Client()
	require.Equal(t, shards, client.Shards())

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Where each shard's master runs before the kill, and its epoch.
	before := waitShards(ctx, t, client, shards)

	const jobs = 400
	perShard := make([]int, shards)
	ids := make([]string, 0, jobs)
	for i := 1; i <= jobs; i++ {
		id := fmt.Sprintf("job-%04d", i)
		ids = append(ids, id)
		perShard[route.ShardOf(id, shards)]++
	}
	for k, n := range perShard {
		require.Positive(t, n, "shard %d gets no job: the test would prove nothing about it", k)
	}
	var wg sync.WaitGroup
	work := make(chan int)
	var kill sync.Once
	var victim *node.ClusterNode
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				id := ids[i]
				if err := client.Submit(ctx, &messages.Work{WorkId: id, JobType: "square", Payload: []byte(strconv.Itoa(i + 1))}); err != nil {
					t.Errorf("submit %s: %v", id, err)
				}
				if i == jobs/3 {
					kill.Do(func() {
						victim = busiestBackend(before, backends)
						t.Logf("killing %s, which hosts the masters of shards %v", victim.Address(), shardsOn(before, victim.Address()))
						victim.Kill()
						liveAcks(ctx, t, client, before, victim.Address())
					})
				}
			}
		}()
	}
	for i := range ids {
		work <- i
	}
	close(work)
	wg.Wait()
	require.NotNil(t, victim)

	// Every acked job completes.
	pending := append([]string(nil), ids...)
	deadline := time.Now().Add(2 * time.Minute)
	for len(pending) > 0 && time.Now().Before(deadline) {
		var still []string
		for _, id := range pending {
			st, err := client.WorkStatus(ctx, id)
			if err != nil || st.GetStatus() != messages.WorkStatus_WORK_STATUS_DONE {
				still = append(still, id)
			}
		}
		pending = still
		if len(pending) > 0 {
			time.Sleep(250 * time.Millisecond) // polling the shards' durable state
		}
	}
	require.Empty(t, pending, "acked jobs not done after the kill")

	// Every shard answers again; those that lived on the victim moved and
	// started a new epoch.
	after := waitShards(ctx, t, client, shards)
	for k := range shards {
		require.NotEqual(t, victim.Address(), after[k].GetAddress(), "shard %d still placed on the killed node", k)
		if before[k].GetAddress() == victim.Address() {
			require.Greater(t, after[k].GetEpoch(), before[k].GetEpoch(), "shard %d moved without a new epoch", k)
		}
	}

	// GET /status shows every shard: where its master runs and its epoch.
	be, err := httpapi.NewActorBackend(client, nil)
	require.NoError(t, err)
	info, err := be.Status(ctx)
	require.NoError(t, err)
	require.Len(t, info.Shards, shards)
	var done int64
	for k, sh := range info.Shards {
		require.Equal(t, k, sh.Shard)
		require.True(t, sh.Master.Reachable, "shard %d: %s", k, sh.Master.Error)
		require.Equal(t, after[k].GetAddress(), sh.Master.Address, "shard %d", k)
		require.Equal(t, after[k].GetEpoch(), sh.Master.Epoch, "shard %d", k)
		done += sh.Queue.Done
	}
	require.Equal(t, done, info.Queue.Done, "the queue is the sum of the shards'")
	require.GreaterOrEqual(t, info.Queue.AcceptedTotal, int64(jobs))

	// The durable feed, one cursor over every shard, delivers every result.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			if results[id] == 0 {
				return false
			}
		}
		return true
	}, time.Minute, 100*time.Millisecond, "the result feed did not deliver every job's result")

	// Tear down in an order that leaves no message for a dead peer: the
	// workers first, then the backends leave gracefully (their masters
	// answer the frontend's held feed reads while it is still there), then
	// the frontend (by t.Cleanup).
	for _, wn := range workerNodes {
		wn.Kill()
	}
	for _, b := range backends {
		if b != victim {
			require.NoError(t, b.Stop(ctx))
		}
	}
}

// liveAcks submits one job to each shard whose master was not on the
// killed node, at once after the kill: those shards do not wait for the
// others' failover (each is acked well within the frontend's ask timeout,
// bounded generously here for a loaded machine).
func liveAcks(ctx context.Context, t *testing.T, client *frontend.Client, before []*messages.MasterStatus, killed string) {
	t.Helper()
	if len(shardsOn(before, killed)) == len(before) {
		t.Logf("every shard's master was on the killed node: no shard to check for acks during the failover")
	}
	for k, st := range before {
		if st.GetAddress() == killed {
			continue
		}
		id := ""
		for i := 0; id == ""; i++ {
			if c := fmt.Sprintf("live-%d-%d", k, i); route.ShardOf(c, len(before)) == k {
				id = c
			}
		}
		start := time.Now()
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := client.Submit(sctx, &messages.Work{WorkId: id, JobType: "square", Payload: []byte("2")})
		cancel()
		if err != nil {
			t.Errorf("shard %d (not on the killed node) did not ack during the failover: %v", k, err)
			continue
		}
		t.Logf("shard %d acked %s %v after the kill began", k, id, time.Since(start).Round(time.Millisecond))
	}
}

// waitShards waits until every shard's master answers and returns their
// statuses in shard order.
func waitShards(ctx context.Context, t *testing.T, client *frontend.Client, n int) []*messages.MasterStatus {
	t.Helper()
	var out []*messages.MasterStatus
	require.Eventually(t, func() bool {
		out = out[:0]
		for _, st := range client.ShardStatus(ctx) {
			if st.Err != nil {
				return false
			}
			out = append(out, st.Status)
		}
		return len(out) == n
	}, time.Minute, 100*time.Millisecond, "not every shard's master answered")
	return out
}

// busiestBackend returns the backend hosting the most shards' masters.
func busiestBackend(sts []*messages.MasterStatus, backends []*node.ClusterNode) *node.ClusterNode {
	best, most := backends[0], -1
	for _, b := range backends {
		if n := len(shardsOn(sts, b.Address())); n > most {
			best, most = b, n
		}
	}
	return best
}

// shardsOn lists the shards whose master runs at addr.
func shardsOn(sts []*messages.MasterStatus, addr string) []int {
	var ks []int
	for k, st := range sts {
		if st.GetAddress() == addr {
			ks = append(ks, k)
		}
	}
	return ks
}
