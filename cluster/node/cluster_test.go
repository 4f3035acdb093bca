//go:build !race

package node_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/membership"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/messages"
)

// clusterHarness starts cluster nodes of one test in this process: each
// its own actor system, remote on 127.0.0.1 with a free port, membership
// endpoint on a free port, seeded with the first backend's endpoint.
type clusterHarness struct {
	t    *testing.T
	data string
	seed string
}

func newClusterHarness(t *testing.T) *clusterHarness {
	return &clusterHarness{t: t, data: t.TempDir()}
}

func (h *clusterHarness) start(role node.Role, mutate func(*node.ClusterConfig)) (*node.ClusterNode, *membership.Provider) {
	h.t.Helper()
	opts := []membership.Option{membership.WithHTTPAddr("127.0.0.1:0"), membership.WithLogger(testLogger())}
	if h.seed != "" {
		opts = append(opts, membership.WithSeedHTTP(h.seed))
	}
	prov, err := membership.New(opts...)
	require.NoError(h.t, err)
	cfg := node.ClusterConfig{
		Role:      role,
		Port:      0,
		Provider:  prov,
		DataDir:   h.data,
		Logger:    testLogger(),
		WrapStart: func(start func()) { testkit.StartRemoteWith(h.t, start) },
	}
	if mutate != nil {
		mutate(&cfg)
	}
	n, err := node.StartCluster(context.Background(), cfg)
	require.NoError(h.t, err)
	h.t.Cleanup(n.Kill)
	if h.seed == "" {
		h.seed = prov.HTTPAddr()
	}
	return n, prov
}

// The cluster tests start several protoactor members in one process. The
// pinned protoactor-go has data races of its own there (disthash's
// Manager.rdv is replaced on the event-stream goroutine while lookups read
// it; every Remote.Start replaces gRPC's global logger), so under -race
// they would fail on protoactor's code, not ours: they build without the
// race detector, and .ci/run runs them in a separate `go test` without
// -race. cluster_race_test.go says so loudly in a -race run.

// TestClusterFailover is the in-process acceptance test: 2 backend,
// 1 frontend and 2 worker members on loopback; 1,000 jobs are submitted;
// the member hosting the master is stopped mid-run; every acked job
// completes, none is lost, and duplicate results are counted and reported.
func TestClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster acceptance test: skipped with -short")
	}
	h := newClusterHarness(t)
	masterOpts := func(c *node.ClusterConfig) {
		c.MasterOptions = []master.Option{master.WithWorkTimeout(5 * time.Second), master.WithSnapshotEvery(200)}
	}
	b1, _ := h.start(node.RoleBackend, masterOpts)
	b2, _ := h.start(node.RoleBackend, masterOpts)

	var (
		mu       sync.Mutex
		results  = map[string]int{}
		consumed atomic.Int64
	)
	fe, _ := h.start(node.RoleFrontend, func(c *node.ClusterConfig) {
		c.OnResult = func(r *messages.WorkResult) {
			mu.Lock()
			results[r.GetWorkId()]++
			mu.Unlock()
			consumed.Add(1)
		}
		c.FrontendOptions = quickFrontend()
	})
	reg := squareRegistry(t)
	for range 2 {
		h.start(node.RoleWorker, func(c *node.ClusterConfig) {
			c.Workers = 2
			c.Registry = reg
			c.WorkerOptions = []worker.Option{worker.WithRegisterInterval(500 * time.Millisecond), worker.WithResendInterval(time.Second), worker.WithWindow(8)}
		})
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client := fe.Client()
	const jobs = 1000
	acked := make(chan string, jobs)
	var wg sync.WaitGroup
	var next atomic.Int64
	var failover sync.Once
	killed := make(chan *node.ClusterNode, 1)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > jobs {
					return
				}
				id := fmt.Sprintf("job-%04d", i)
				if err := client.Submit(ctx, &messages.Work{WorkId: id, JobType: "square", Payload: []byte(strconv.FormatInt(i, 10))}); err != nil {
					t.Errorf("submit %s: %v", id, err)
					return
				}
				acked <- id
				if i == jobs/3 {
					failover.Do(func() {
						victim := hostOfMaster(ctx, t, fe, b1, b2)
						t.Logf("stopping the node hosting the master: %s", victim.Address())
						victim.Kill()
						killed <- victim
					})
				}
			}
		}()
	}
	wg.Wait()
	close(acked)
	require.Len(t, acked, jobs, "every submission is acked")
	victim := <-killed
	require.Contains(t, []*node.ClusterNode{b1, b2}, victim)

	// Every acked job completes: ask the (new) master for each id.
	ids := make([]string, 0, jobs)
	for id := range acked {
		ids = append(ids, id)
	}
	deadline := time.Now().Add(2 * time.Minute)
	var notDone []string
	for time.Now().Before(deadline) {
		notDone = notDone[:0]
		for _, id := range ids {
			st, err := client.WorkStatus(ctx, id)
			if err != nil || st.GetStatus() != messages.WorkStatus_WORK_STATUS_DONE {
				notDone = append(notDone, id)
			}
		}
		if len(notDone) == 0 {
			break
		}
		ids = append(ids[:0], notDone...)
		time.Sleep(250 * time.Millisecond) // polling the master's durable state; results are at-most-once notifications
	}
	require.Empty(t, notDone, "acked jobs not done after failover")

	mu.Lock()
	dups := 0
	for _, n := range results {
		if n > 1 {
			dups += n - 1
		}
	}
	got := len(results)
	mu.Unlock()
	t.Logf("results consumed by the frontend: %d distinct of %d jobs, %d duplicate notifications (pub-sub is at-most-once; the master's state is the record)", got, jobs, dups)
}

// hostOfMaster returns the backend node on which the master runs now.
func hostOfMaster(ctx context.Context, t *testing.T, fe *node.ClusterNode, backends ...*node.ClusterNode) *node.ClusterNode {
	pid, err := fe.Locator().Resolve(ctx)
	require.NoError(t, err)
	for _, b := range backends {
		if b.Address() == pid.GetAddress() {
			return b
		}
	}
	t.Fatalf("master at %s is on none of the backends", pid.GetAddress())
	return nil
}

// clusterLeakIgnores: see testkit.CrashLeakIgnores.
var clusterLeakIgnores = testkit.CrashLeakIgnores

// quickFrontend are the cluster tests' frontend options: a short ask
// timeout and retry backoff, so a failover shows within the tests' bounds.
func quickFrontend() []frontend.Option {
	return []frontend.Option{frontend.WithAskTimeout(time.Second), frontend.WithRetryBackoff(50*time.Millisecond, 500*time.Millisecond)}
}
