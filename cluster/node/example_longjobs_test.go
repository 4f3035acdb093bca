package node_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/messages"
)

// A long job heartbeats with its progress, so it runs past the master's
// work timeout (1 s here) without being retried (docs/long-jobs.md).
func ExampleStartLocal_longJob() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "foreman-example-*")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = os.RemoveAll(dir) }()

	reg := worker.NewRegistry()
	err = reg.Register("steps", func(ctx context.Context, _ []byte) ([]byte, error) {
		const steps = 10
		for i := range steps {
			select { // one step of real work: 200 ms
			case <-ctx.Done():
				return nil, context.Cause(ctx) // e.g. worker.ErrDrainTimeout
			case <-time.After(200 * time.Millisecond):
			}
			worker.Progress(ctx, float64(i+1)/steps, fmt.Sprintf("step %d of %d", i+1, steps))
		}
		return []byte(`"all steps done"`), nil
	}, worker.WithHeartbeatTimeout(3*time.Second)) // several heartbeat intervals (1 s by default)
	if err != nil {
		fmt.Println(err)
		return
	}
	n, err := node.StartLocal(ctx, node.WithDataDir(dir), node.WithWorkers(1), node.WithRegistry(reg),
		node.WithLogger(slog.New(slog.DiscardHandler)),
		node.WithMasterOptions(master.WithWorkTimeout(time.Second)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = n.Stop(context.Background()) }()

	if err := n.Client().Submit(ctx, &messages.Work{WorkId: "job-1", JobType: "steps"}); err != nil {
		fmt.Println(err)
		return
	}
	for {
		st, err := n.Client().WorkStatus(ctx, "job-1")
		if err == nil && st.GetStatus() == messages.WorkStatus_WORK_STATUS_DONE {
			fmt.Printf("%s after %d attempt(s)\n", st.GetResult(), st.GetAttempts())
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Output: "all steps done" after 1 attempt(s)
}
