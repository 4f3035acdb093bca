package node

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/worker"
)

// drainAll drains workers at once (worker.Drain with timeout: they ask for
// no more work, running jobs may finish for up to timeout, then are
// cancelled and handed back) and waits until each has answered Drained, or
// timeout plus drainBound, or ctx ends; stopping the workers then hands back
// what is left. Worker nodes and the all-in-one node share it.
func drainAll(ctx context.Context, root *actor.RootContext, workers []*actor.PID, timeout time.Duration, log *slog.Logger) {
	start := time.Now()
	log.Info("draining workers: no more work is asked for; running jobs may finish", "workers", len(workers), "drain_timeout", timeout)
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait := timeout + drainBound
			if dl, ok := ctx.Deadline(); ok {
				wait = min(wait, time.Until(dl))
			}
			if _, err := root.RequestFuture(w, &worker.Drain{Timeout: timeout}, wait).Result(); err != nil {
				log.Warn("a worker did not finish its drain; stopping it hands the rest back", "worker", w.GetId(), "error", err)
			}
		}()
	}
	wg.Wait()
	log.Info("workers drained", "took", time.Since(start).Round(time.Millisecond))
}
