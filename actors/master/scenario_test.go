package master_test

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// These tests run on real time, with generous bounds: they prove the wiring
// that the manual-clock tests cannot (timers, concurrency, restarts).

type workerTick struct{}

// scenarioWorker squares its payload at once. It registers and re-sends
// unacknowledged results every 100 ms, as a real worker does. A flaky one
// fails its failOn-th job and goes silent for good on its dieOn-th.
type scenarioWorker struct {
	id            string
	master        *atomic.Pointer[actor.PID]
	failOn, dieOn int
	jobs          int
	dead          bool
	unacked       map[string][]byte
}

func (w *scenarioWorker) Receive(c actor.Context) {
	m := w.master.Load()
	switch msg := c.Message().(type) {
	case *actor.Started:
		w.unacked = make(map[string][]byte)
		w.tick(c, m)
	case workerTick:
		if !w.dead {
			w.tick(c, m)
		}
	case *messages.WorkIsReady:
		if !w.dead {
			c.Request(m, &messages.WorkerRequestsWork{WorkerId: w.id, Worker: pids.Wire(c.Self()), Capacity: 2, Bundles: true})
		}
	case *messages.WorkBundle:
		for _, work := range msg.GetWorks() {
			w.run(c, m, work)
		}
	case *messages.Work:
		w.run(c, m, msg)
	case *messages.Ack:
		delete(w.unacked, msg.GetWorkId())
	}
}

// run takes one handed-out work, as a Work or within a WorkBundle.
func (w *scenarioWorker) run(c actor.Context, m *actor.PID, msg *messages.Work) {
	if w.dead {
		return
	}
	w.jobs++
	switch w.jobs {
	case w.dieOn:
		w.dead = true
		return
	case w.failOn:
		c.Request(m, &messages.WorkFailed{WorkerId: w.id, WorkId: msg.GetWorkId(), Error: "flaky executor"})
	default:
		n, _ := strconv.Atoi(string(msg.GetPayload()))
		res := []byte(strconv.Itoa(n * n))
		w.unacked[msg.GetWorkId()] = res
		c.Request(m, &messages.WorkIsDone{WorkerId: w.id, WorkId: msg.GetWorkId(), Result: res})
	}
	c.Request(m, &messages.WorkerRequestsWork{WorkerId: w.id, Worker: pids.Wire(c.Self()), Capacity: 1})
}

func (w *scenarioWorker) tick(c actor.Context, m *actor.PID) {
	c.Request(m, &messages.RegisterWorker{WorkerId: w.id, Worker: pids.Wire(c.Self())})
	for id, res := range w.unacked {
		c.Request(m, &messages.WorkIsDone{WorkerId: w.id, WorkId: id, Result: res})
	}
	c.Request(m, &messages.WorkerRequestsWork{WorkerId: w.id, Worker: pids.Wire(c.Self()), Capacity: 2, Bundles: true})
	self, root := c.Self(), c.ActorSystem().Root
	time.AfterFunc(100*time.Millisecond, func() { root.Send(self, workerTick{}) })
}

// submitAll submits jobs from..to from 8 goroutines, each retrying a job
// until it is acknowledged, as the WorkProducer does.
func submitAll(t *testing.T, sys *actor.ActorSystem, m *atomic.Pointer[actor.PID], from, to int, acked func(id string)) {
	t.Helper()
	ids := make(chan int)
	var wg sync.WaitGroup
	deadline := time.Now().Add(20 * time.Second)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range ids {
				id := strconv.Itoa(n)
				for time.Now().Before(deadline) {
					reply, err := sys.Root.RequestFuture(m.Load(), &messages.Work{WorkId: id, JobType: "square", Payload: []byte(id)}, time.Second).Result()
					if _, ok := reply.(*messages.Ack); ok && err == nil {
						acked(id)
						break
					}
				}
			}
		}()
	}
	for n := from; n <= to; n++ {
		ids <- n
	}
	close(ids)
	wg.Wait()
}

// TestScenarioDistributedWorkers is the Akka DistributedWorkerSpec scenario
// on the master: 3 good workers and a flaky one that fails its 3rd job and
// dies on its 5th; jobs 1..100 are submitted; each gets exactly one result.
// Reference: seed 001, "jobs should not be lost, and if a worker fails, the
// job should be retried".
func TestScenarioDistributedWorkers(t *testing.T) {
	t.Parallel()
	j := journal.NewMemory()
	t.Cleanup(func() { _ = j.Close() })
	sys := testkit.NewSystem(t)
	var mu sync.Mutex
	results := map[string][]string{}
	allDone := make(chan struct{})
	pub := master.PublisherFunc(func(r *messages.WorkResult) {
		mu.Lock()
		defer mu.Unlock()
		results[r.GetWorkId()] = append(results[r.GetWorkId()], string(r.GetResult()))
		if len(results) == 100 {
			close(allDone)
		}
	})
	var m atomic.Pointer[actor.PID]
	m.Store(sys.Root.Spawn(mustProps(t, j, master.WithPublisher(pub), master.WithWorkTimeout(time.Second),
		master.WithBackoff(10*time.Millisecond, 100*time.Millisecond))))
	for i := range 4 {
		w := &scenarioWorker{id: fmt.Sprintf("w%d", i), master: &m}
		if i == 3 {
			w.failOn, w.dieOn = 3, 5
		}
		sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return w }))
	}
	var acked atomic.Int64
	submitAll(t, sys, &m, 1, 100, func(string) { acked.Add(1) })
	require.Equal(t, int64(100), acked.Load(), "every submission acked")
	select {
	case <-allDone:
	case <-time.After(20 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("only %d of 100 results within 20 s", len(results))
	}
	mu.Lock()
	defer mu.Unlock()
	for n := 1; n <= 100; n++ {
		id := strconv.Itoa(n)
		require.Equal(t, []string{strconv.Itoa(n * n)}, results[id], "job %s: exactly one result", id)
	}
}

// TestScenarioMasterRestartLosesNothing stops the master mid-run and starts
// a new one on the same journal: every acknowledged job completes.
func TestScenarioMasterRestartLosesNothing(t *testing.T) {
	t.Parallel()
	j := journal.NewMemory()
	t.Cleanup(func() { _ = j.Close() })
	sys := testkit.NewSystem(t)
	props := mustProps(t, j, master.WithWorkTimeout(time.Second), master.WithSnapshotEvery(50),
		master.WithBackoff(10*time.Millisecond, 100*time.Millisecond))
	var m atomic.Pointer[actor.PID]
	m.Store(sys.Root.Spawn(props))
	for i := range 3 {
		w := &scenarioWorker{id: fmt.Sprintf("w%d", i), master: &m}
		sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return w }))
	}
	var ackedMu sync.Mutex
	var acked []string
	record := func(id string) { ackedMu.Lock(); acked = append(acked, id); ackedMu.Unlock() }
	submitAll(t, sys, &m, 1, 150, record)
	require.NoError(t, sys.Root.StopFuture(m.Load()).Wait())
	m.Store(sys.Root.Spawn(props))
	submitAll(t, sys, &m, 151, 300, record)
	require.Len(t, acked, 300)

	deadline := time.Now().Add(20 * time.Second)
	for _, id := range acked {
		for {
			reply, err := sys.Root.RequestFuture(m.Load(), &messages.GetWorkStatus{WorkId: id}, time.Second).Result()
			if st, ok := reply.(*messages.WorkStatusReply); ok && err == nil && st.GetStatus() == messages.WorkStatus_WORK_STATUS_DONE {
				n, _ := strconv.Atoi(id)
				require.Equal(t, strconv.Itoa(n*n), string(st.GetResult()))
				break
			}
			require.True(t, time.Now().Before(deadline), "job %s not done after the restart", id)
			time.Sleep(10 * time.Millisecond) // polling a real-time integration run
		}
	}
}
