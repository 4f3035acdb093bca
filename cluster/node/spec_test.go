package node_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/messages"
)

func squareRegistry(t *testing.T) *worker.Registry {
	t.Helper()
	reg := worker.NewRegistry()
	require.NoError(t, worker.RegisterBuiltins(reg, worker.WithSquareDelay(0, 0)))
	return reg
}

func startLocal(t *testing.T, opts ...node.LocalOption) *node.Local {
	t.Helper()
	sys := testkit.NewSystem(t)
	j := journal.NewMemory()
	t.Cleanup(func() { require.NoError(t, j.Close()) }) // runs after the node's Stop below
	n, err := node.StartLocal(context.Background(), append([]node.LocalOption{
		node.WithActorSystem(sys), node.WithJournal(j), node.WithLogger(sys.Logger()),
	}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, n.Stop(ctx))
	})
	return n
}

// flakySquareRegistry is the spec's flaky executor: square, except that
// the 3rd call (counted in calls) panics.
func flakySquareRegistry(t *testing.T, calls *atomic.Int32) *worker.Registry {
	t.Helper()
	reg := worker.NewRegistry()
	require.NoError(t, reg.Register("square", func(_ context.Context, p []byte) ([]byte, error) {
		if calls.Add(1) == 3 {
			panic("flaky executor")
		}
		var v int64
		if err := json.Unmarshal(p, &v); err != nil {
			return nil, err
		}
		return json.Marshal(v * v)
	}))
	return reg
}

// TestDistributedWorkerSpec is the Akka sample's DistributedWorkerSpec in
// one process: three good workers and a flaky one whose executor fails on
// its 3rd job and whose worker dies on its 5th; work 1 warms up, then 2..100
// are submitted (and more, until the flaky worker has died); every
// submission is acked and yields exactly one result within 20 s.
//
// Reference: seed 001, "jobs should not be lost, and if a worker fails, the
// job should be retried".
func TestDistributedWorkerSpec(t *testing.T) {
	t.Parallel()
	n := startLocal(t,
		node.WithWorkers(3),
		node.WithRegistry(squareRegistry(t)),
		// As in the spec: a short work timeout, so the dead flaky worker's
		// job is retried quickly.
		node.WithMasterOptions(master.WithWorkTimeout(3*time.Second), master.WithBackoff(10*time.Millisecond, 100*time.Millisecond)),
		node.WithWorkerOptions(worker.WithRegisterInterval(time.Second)),
	)
	sys := n.System()

	// The flaky worker.
	var calls atomic.Int32
	flakyReg := flakySquareRegistry(t, &calls)
	var diedOnce atomic.Bool
	flakyProps, err := worker.Props(route.Fixed(n.Master()), flakyReg,
		worker.WithRegisterInterval(time.Second),
		worker.WithOnWork(func(seq int, _ *messages.Work) {
			if seq == 5 && diedOnce.CompareAndSwap(false, true) {
				panic("flaky worker dies on its 5th job")
			}
		}))
	require.NoError(t, err)
	sys.Root.Spawn(flakyProps)

	var (
		mu      sync.Mutex
		results = map[string]int{}
		wrong   []string // work ids with a wrong result
		all     = make(chan struct{})
		closed  bool
		target  = -1 // jobs submitted, once all are; guarded by mu
	)
	sub := sys.EventStream.Subscribe(func(evt any) {
		r, ok := evt.(*messages.WorkResult)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		results[r.GetWorkId()]++
		// Checked after the run: require must not stop the test from the
		// event stream's goroutine.
		if n, _ := strconv.Atoi(r.GetWorkId()); strconv.Itoa(n*n) != string(r.GetResult()) {
			wrong = append(wrong, r.GetWorkId()+"="+string(r.GetResult()))
		}
		if !closed && len(results) == target {
			closed = true
			close(all)
		}
	})
	t.Cleanup(func() { sys.EventStream.Unsubscribe(sub) })

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := n.Client()
	submit := func(i int) {
		require.NoError(t, client.Submit(ctx, &messages.Work{WorkId: strconv.Itoa(i), JobType: "square", Payload: []byte(strconv.Itoa(i))}))
	}
	submit(1) // warm-up
	start := time.Now()
	// The other workers may take every job before the flaky one gets its
	// fifth: then jobs go on (at most 1,000) until it has died.
	total := 100
	for i := 2; i <= 100; i++ {
		submit(i)
	}
	for ; !diedOnce.Load() && total < 1000; total++ {
		submit(total + 1)
	}
	mu.Lock()
	target = total
	if !closed && len(results) >= target {
		closed = true
		close(all)
	}
	mu.Unlock()
	select {
	case <-all:
	case <-time.After(20 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("only %d of %d results within 20 s", len(results), total)
	}
	t.Logf("%d jobs done in %v; the flaky executor was called %d times", total-1, time.Since(start).Round(time.Millisecond), calls.Load())
	require.GreaterOrEqual(t, calls.Load(), int32(3), "the flaky worker must have failed at least once for the test to mean anything")
	require.True(t, diedOnce.Load(), "the flaky worker must have died")

	// No duplicates, also a little later (a re-queued job whose first
	// holder completes late is re-acked, never published twice).
	st, err := client.MasterStatus(ctx)
	require.NoError(t, err)
	require.EqualValues(t, total, st.GetDone())
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, wrong, "wrong results")
	for i := 1; i <= total; i++ {
		require.Equal(t, 1, results[strconv.Itoa(i)], "results of work %d", i)
	}
}

// TestBadInput: an unknown job type and an oversized payload are rejected
// with a reason and nothing is stored; a duplicate id is acked again and
// runs once.
func TestBadInput(t *testing.T) {
	t.Parallel()
	n := startLocal(t, node.WithWorkers(1), node.WithRegistry(squareRegistry(t)),
		node.WithMasterOptions(master.WithMaxPayload(1024)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := n.Client()

	t.Run("UnknownJobType", func(t *testing.T) {
		err := client.Submit(ctx, &messages.Work{WorkId: "u1", JobType: "paint", Payload: []byte("1")})
		var rej *frontend.RejectedError
		require.ErrorAs(t, err, &rej)
		require.Equal(t, messages.RejectCode_REJECT_CODE_UNKNOWN_TYPE, rej.Code)
		require.Contains(t, err.Error(), "paint")
	})
	t.Run("OversizedPayload", func(t *testing.T) {
		err := client.Submit(ctx, &messages.Work{WorkId: "big", JobType: "square", Payload: make([]byte, 1025)})
		var rej *frontend.RejectedError
		require.ErrorAs(t, err, &rej)
		require.Equal(t, messages.RejectCode_REJECT_CODE_TOO_LARGE, rej.Code)
		st, err := client.WorkStatus(ctx, "big")
		require.NoError(t, err)
		require.Equal(t, messages.WorkStatus_WORK_STATUS_UNKNOWN, st.GetStatus(), "a rejected work is not stored")
	})
	t.Run("DuplicateID", func(t *testing.T) {
		var results atomic.Int32
		sub := n.System().EventStream.Subscribe(func(evt any) {
			if r, ok := evt.(*messages.WorkResult); ok && r.GetWorkId() == "dup" {
				results.Add(1)
			}
		})
		defer n.System().EventStream.Unsubscribe(sub)
		for range 3 {
			require.NoError(t, client.Submit(ctx, &messages.Work{WorkId: "dup", JobType: "square", Payload: []byte("6")}))
		}
		require.Eventually(t, func() bool {
			st, err := client.WorkStatus(ctx, "dup")
			return err == nil && st.GetStatus() == messages.WorkStatus_WORK_STATUS_DONE
		}, testkit.Timeout(), 10*time.Millisecond)
		st, err := client.WorkStatus(ctx, "dup")
		require.NoError(t, err)
		require.Equal(t, "36", string(st.GetResult()))
		require.EqualValues(t, 1, st.GetAttempts(), "the job ran once")
		require.NoError(t, client.Submit(ctx, &messages.Work{WorkId: "dup", JobType: "square", Payload: []byte("6")}), "a done id is acked again")
		require.EqualValues(t, 1, results.Load())
	})
	t.Run("EmptyID", func(t *testing.T) {
		err := client.Submit(ctx, &messages.Work{JobType: "square", Payload: []byte("1")})
		require.ErrorContains(t, err, "work id is empty")
	})
}
