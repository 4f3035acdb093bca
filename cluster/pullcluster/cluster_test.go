//go:build !race

package pullcluster_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/pulling"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/membership"
	"github.com/foreman-actors/foreman/cluster/pullcluster"
)

// The cluster tests start several protoactor members in one process, where
// the pinned protoactor-go races with itself (see cluster/node's
// cluster_test.go): they build without the race detector, and .ci/run runs
// them without -race.

// clusterLeakIgnores: see testkit.CrashLeakIgnores.
var clusterLeakIgnores = testkit.CrashLeakIgnores

type harness struct {
	t    *testing.T
	seed string
}

func (h *harness) join(cfg pullcluster.Config) *pullcluster.Node {
	h.t.Helper()
	opts := []membership.Option{membership.WithHTTPAddr("127.0.0.1:0"), membership.WithLogger(testLogger())}
	if h.seed != "" {
		opts = append(opts, membership.WithSeedHTTP(h.seed))
	}
	prov, err := membership.New(opts...)
	require.NoError(h.t, err)
	cfg.Provider, cfg.Logger = prov, testLogger()
	cfg.WrapStart = func(start func()) { testkit.StartRemoteWith(h.t, start) }
	n, err := pullcluster.Join(context.Background(), cfg)
	require.NoError(h.t, err)
	h.t.Cleanup(n.Kill)
	if h.seed == "" {
		h.seed = prov.HTTPAddr()
	}
	return n
}

// TestClusterEpicSurvivesMasterMemberKill is the in-process
// acceptance test: two members host the Epic master kind over one SQLite
// journal, a client node runs 3 workers of window 2; a second client with
// 2 more workers joins mid-Epic and starts pulling (the seed's join); the
// member hosting the master is killed a third of the way through; the
// other member's activation resumes from the journaled position: every
// item is worked on, and at most the workers' windows (5 x 2) twice.
func TestClusterEpicSurvivesMasterMemberKill(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster acceptance test: skipped with -short")
	}
	const n, workers, late, window = 3000, 3, 2, 2
	j, err := journal.OpenSQLite(filepath.Join(t.TempDir(), "journal.db"))
	require.NoError(t, err)
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	open := func(context.Context, string) (pulling.SeekEpic[int], error) { return pulling.SliceSeekEpic(items), nil }
	master := pullcluster.EpicMaster(j, open, pulling.WithCodec(pulling.JSONCodec[int]()), pulling.WithBatchSize(100))

	h := &harness{t: t}
	m1 := h.join(pullcluster.Config{Member: true, Master: master})
	m2 := h.join(pullcluster.Config{Member: true, Master: master})
	client := h.join(pullcluster.Config{})
	t.Cleanup(func() {
		client.Kill()
		m1.Kill()
		m2.Kill()
		require.NoError(t, j.Close())
	})

	var mu sync.Mutex
	seen := map[int]int{}
	var total atomic.Int64
	counting := func(count *atomic.Int64) pulling.DoFunc[int] {
		return func(_ context.Context, item int) error {
			mu.Lock()
			seen[item]++
			mu.Unlock()
			total.Add(1)
			count.Add(1)
			time.Sleep(500 * time.Microsecond)
			return nil
		}
	}
	spawn := func(on *pullcluster.Node, k int, count *atomic.Int64) {
		for range k {
			props, err := pullcluster.WorkerProps(on, "numbers", counting(count), pulling.WithCodec(pulling.JSONCodec[int]()),
				pulling.WithWindow(window), pulling.WithRegisterInterval(200*time.Millisecond))
			require.NoError(t, err)
			on.System().Root.Spawn(props)
		}
	}
	var early, joined atomic.Int64
	spawn(client, workers, &early)

	ctx, cancel := context.WithTimeout(context.Background(), 6*testkit.Timeout())
	defer cancel()
	p, err := client.Start(ctx, "numbers")
	require.NoError(t, err)
	require.True(t, p.GetRunning())

	// A worker node joins mid-Epic: its workers are told WorkAvailable and
	// pull.
	require.Eventually(t, func() bool { return total.Load() >= n/6 }, 4*testkit.Timeout(), time.Millisecond)
	second := h.join(pullcluster.Config{})
	spawn(second, late, &joined)
	require.Eventually(t, func() bool { return joined.Load() > 0 }, 2*testkit.Timeout(), time.Millisecond,
		"the workers of a node that joined mid-Epic got no item")

	require.Eventually(t, func() bool { return total.Load() >= n/3 }, 4*testkit.Timeout(), time.Millisecond)
	host, err := client.Route("numbers").Resolve(ctx)
	require.NoError(t, err)
	victim, survivor := m1, m2
	if host.GetAddress() == m2.Address() {
		victim, survivor = m2, m1
	}
	victim.Kill()
	killedAt := total.Load()
	require.Less(t, killedAt, int64(n), "killed mid-Epic")

	final, err := client.Wait(ctx, "numbers", 50*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, uint64(n), final.GetFinished())
	after, err := survivor.Progress(ctx, "numbers")
	require.NoError(t, err)
	require.True(t, after.GetDone())

	mu.Lock()
	defer mu.Unlock()
	resent := 0
	for i := range n {
		require.Positive(t, seen[i], "item %d was never worked on", i)
		resent += seen[i] - 1
	}
	require.LessOrEqual(t, resent, (workers+late)*window, "only the items the workers held come round again")
	t.Logf("killed the master's member after %d items; %d worked on twice (bound %d); the late node's workers did %d, the first's %d",
		killedAt, resent, (workers+late)*window, joined.Load(), early.Load())
}
