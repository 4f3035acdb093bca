package worker_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/adaptive"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/waiter"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/messages"
)

// BenchmarkWorkerGates is BenchmarkWorker (window 4, instant master, no-op
// job) with the gates of core/gate.go: a shared adaptive limiter (a permit per
// job, one WorkerRequestsWork per permit), a caller's waiter asked before
// every job (one watcher child and an AreYouStillInterested round trip per
// job), and both.
func BenchmarkWorkerGates(b *testing.B) {
	if testing.Short() {
		b.Skip("benchmark skipped in -short mode")
	}
	for _, bc := range []struct {
		name            string
		limiter, waiter bool
	}{
		{name: "gates=none"},
		{name: "gates=limiter", limiter: true},
		{name: "gates=waiter", waiter: true},
		{name: "gates=limiter+waiter", limiter: true, waiter: true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
				return slog.New(slog.DiscardHandler)
			}))
			defer sys.Shutdown()
			reg := worker.NewRegistry()
			_ = reg.Register("noop", func(context.Context, []byte) ([]byte, error) { return nil, nil })
			opts := []worker.Option{worker.WithWindow(4)}
			if bc.limiter {
				lim, err := adaptive.NewLimiter(adaptive.WithCustomPolicy(adaptive.Fixed(4)))
				if err != nil {
					b.Fatal(err)
				}
				defer lim.Close()
				opts = append(opts, worker.WithLimiter(lim))
			}
			var waiterPID *actor.PID
			if bc.waiter {
				in := waiter.NewInterest(context.Background(), sys)
				defer in.Close()
				waiterPID = in.PID()
			}

			done := make(chan struct{})
			master := spawnBenchMaster(sys, b.N, func(id string) *messages.Work {
				return &messages.Work{WorkId: id, JobType: "noop", Waiter: pids.Wire(waiterPID)}
			}, done)
			props, err := worker.Props(route.Fixed(master), reg, opts...)
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
