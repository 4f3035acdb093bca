//go:build !race

package node_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/messages"
)

// holdJobs is a registry whose "hold" job runs until its ctx ends (a
// cancelled job reports its cause) and reports that it started.
type holdJobs struct {
	reg     *worker.Registry
	started chan string
	ended   chan error
}

func newHoldJobs(t *testing.T) *holdJobs {
	h := &holdJobs{reg: worker.NewRegistry(), started: make(chan string, 16), ended: make(chan error, 16)}
	require.NoError(t, h.reg.Register("hold", func(ctx context.Context, p []byte) ([]byte, error) {
		h.started <- string(p)
		<-ctx.Done()
		h.ended <- context.Cause(ctx)
		return nil, context.Cause(ctx)
	}))
	return h
}

func eventuallyCancelled(t *testing.T, c *frontend.Client, id string) {
	t.Helper()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		st, err := c.WorkStatus(ctx, id)
		return err == nil && st.GetStatus() == messages.WorkStatus_WORK_STATUS_CANCELLED
	}, 30*time.Second, 50*time.Millisecond, "work %s never became cancelled", id)
}

// TestClusterCallerInterest: the caller on a frontend node, the worker on
// another node. A caller that leaves before its job starts, or while it
// runs, or whose node is killed, ends the job CANCELLED; a job whose caller
// left is never started.
func TestClusterCallerInterest(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test: skipped with -short")
	}
	h := newClusterHarness(t)
	h.start(node.RoleBackend, nil)
	fe, _ := h.start(node.RoleFrontend, nil)
	fe2, _ := h.start(node.RoleFrontend, nil)
	client := fe.Client()
	jobs := newHoldJobs(t)

	// Before the job starts: no worker yet.
	ctx, cancel := context.WithCancel(context.Background())
	call, err := client.Call(ctx, &messages.Work{WorkId: "before", JobType: "hold", Payload: []byte("before")})
	require.NoError(t, err)
	cancel()
	call.Close()

	// The caller's node killed before its job starts.
	call2, err := fe2.Client().Call(context.Background(), &messages.Work{WorkId: "killed", JobType: "hold", Payload: []byte("killed")})
	require.NoError(t, err)
	defer call2.Close()
	fe2.Kill()

	h.start(node.RoleWorker, func(c *node.ClusterConfig) {
		c.Workers = 1
		c.Registry = jobs.reg
		c.WorkerOptions = []worker.Option{worker.WithRegisterInterval(200 * time.Millisecond), worker.WithWindow(4)}
	})
	eventuallyCancelled(t, client, "before")
	eventuallyCancelled(t, client, "killed")
	select {
	case id := <-jobs.started:
		t.Fatalf("job %q started though its caller had left", id)
	default:
	}

	// While the job runs, on the worker's node: its ctx is cancelled.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := client.Do(ctx, &messages.Work{WorkId: "during", JobType: "hold", Payload: []byte("during")})
		errc <- err
	}()
	select {
	case <-jobs.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the job never started")
	}
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	select {
	case cause := <-jobs.ended:
		require.ErrorIs(t, cause, worker.ErrCallerGone)
	case <-time.After(30 * time.Second):
		t.Fatal("the running job was not cancelled")
	}
	eventuallyCancelled(t, client, "during")
}

// TestClusterResultFeedSurvivesKills: 2 backends, a consuming frontend, 2
// workers; while jobs run, the master's backend is killed and so is the
// consuming frontend, which restarts with its cursor file. Every acked
// job's result is consumed (duplicates counted, not forbidden).
func TestClusterResultFeedSurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster acceptance test: skipped with -short")
	}
	h := newClusterHarness(t)
	masterOpts := func(c *node.ClusterConfig) {
		c.MasterOptions = []master.Option{master.WithWorkTimeout(5 * time.Second), master.WithSnapshotEvery(200)}
	}
	b1, p1 := h.start(node.RoleBackend, masterOpts)
	b2, p2 := h.start(node.RoleBackend, masterOpts)

	var (
		mu      sync.Mutex
		results = map[string]int{}
	)
	cursor := frontend.FileCursor{Path: filepath.Join(t.TempDir(), "results.cursor")}
	consumer := func(c *node.ClusterConfig) {
		c.OnResult = func(r *messages.WorkResult) {
			mu.Lock()
			results[r.GetWorkId()]++
			mu.Unlock()
		}
		c.ResultCursor = cursor
		c.FrontendOptions = quickFrontend()
	}
	feConsumer, _ := h.start(node.RoleFrontend, consumer)
	feSubmit, _ := h.start(node.RoleFrontend, func(c *node.ClusterConfig) {
		c.ResultsFromPubSub = true // only submits
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
	client := feSubmit.Client()
	const jobs = 1000
	var next atomic.Int64
	var wg sync.WaitGroup
	var kills sync.Once
	var survivor string // membership endpoint of the backend left
	acked := make(chan string, jobs)
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
					kills.Do(func() {
						victim := hostOfMaster(ctx, t, feSubmit, b1, b2)
						t.Logf("killing the master's backend %s and the consuming frontend", victim.Address())
						survivor = p2.HTTPAddr()
						if victim == b2 {
							survivor = p1.HTTPAddr()
						}
						victim.Kill()
						feConsumer.Kill()
					})
				}
			}
		}()
	}
	wg.Wait()
	close(acked)
	require.Len(t, acked, jobs)
	// The consumer restarts with its cursor file. Seeded with a survivor:
	// the harness's seed may be the killed backend.
	h.seed = survivor
	h.start(node.RoleFrontend, consumer)

	deadline := time.Now().Add(2 * time.Minute)
	var missing []string
	for time.Now().Before(deadline) {
		missing = missing[:0]
		mu.Lock()
		for i := 1; i <= jobs; i++ {
			if id := fmt.Sprintf("job-%04d", i); results[id] == 0 {
				missing = append(missing, id)
			}
		}
		mu.Unlock()
		if len(missing) == 0 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	mu.Lock()
	dups := 0
	for _, n := range results {
		dups += n - 1
	}
	got := len(results)
	mu.Unlock()
	t.Logf("results consumed from the feed: %d distinct of %d acked jobs, %d duplicates", got, jobs, dups)
	require.Empty(t, missing, "acked jobs whose result was never consumed")
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("ran out of time")
	}
}
