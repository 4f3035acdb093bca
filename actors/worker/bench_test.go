package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/messages"
)

// BenchmarkWorker measures the worker's own cost per job: an instant master
// (hands out as many jobs as asked, acks every WorkIsDone at once) and a
// no-op job, so the figure is Worker + WorkExecutor + protoactor messaging.
func BenchmarkWorker(b *testing.B) {
	if testing.Short() {
		b.Skip("benchmark skipped in -short mode")
	}
	for _, window := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("window=%d", window), func(b *testing.B) {
			b.ReportAllocs()
			sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
				return slog.New(slog.DiscardHandler)
			}))
			defer sys.Shutdown()
			reg := worker.NewRegistry()
			_ = reg.Register("noop", func(context.Context, []byte) ([]byte, error) { return nil, nil })

			done := make(chan struct{})
			master := spawnBenchMaster(sys, b.N, func(id string) *messages.Work { return &messages.Work{WorkId: id, JobType: "noop"} }, done)
			props, err := worker.Props(route.Fixed(master), reg, worker.WithWindow(window))
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			w := sys.Root.Spawn(props)
			<-done
			b.StopTimer()
			_ = sys.Root.StopFuture(w).Wait()
		})
	}
}

// spawnBenchMaster spawns a master for the worker benchmarks: it hands out
// as many works (made by work from ids "1".."n") as asked, acknowledges
// every result at once and closes done after the n-th.
func spawnBenchMaster(sys *actor.ActorSystem, n int, work func(id string) *messages.Work, done chan struct{}) *actor.PID {
	handed, completed := 0, 0
	completes := func(k int) {
		if completed += k; completed == n {
			close(done)
		}
	}
	return sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *messages.RegisterWorker:
			c.Send(pids.Actor(m.GetWorker()), &messages.WorkIsReady{})
		case *messages.WorkerRequestsWork:
			for i := int32(0); i < m.GetCapacity() && handed < n; i++ {
				handed++
				c.Send(pids.Actor(m.GetWorker()), work(strconv.Itoa(handed)))
			}
		case *messages.WorkIsDone:
			c.Respond(&messages.Ack{WorkId: m.GetWorkId()})
			completes(1)
		case *messages.WorkIsDoneBatch:
			ids := make([]string, len(m.GetDone()))
			for i, d := range m.GetDone() {
				ids[i] = d.GetWorkId()
			}
			c.Respond(&messages.AckBatch{WorkIds: ids})
			completes(len(ids))
		}
	}))
}
