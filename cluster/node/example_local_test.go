package node_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/messages"
)

// Foreman embedded in a program: a master on a journal, two workers, and a
// frontend client that submits a job and waits for its result.
func ExampleStartLocal() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	dir, err := os.MkdirTemp("", "foreman-example-*")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			fmt.Println(err)
		}
	}()

	reg := worker.NewRegistry()
	_ = worker.RegisterBuiltins(reg, worker.WithSquareDelay(0, 0))
	n, err := node.StartLocal(ctx,
		node.WithDataDir(dir), // the SQLite journal lives here
		node.WithWorkers(2),
		node.WithRegistry(reg),
		node.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		// Stop shuts down in order: workers, the master (its journal
		// writes complete), then the journal.
		if err := n.Stop(context.Background()); err != nil {
			fmt.Println(err)
		}
	}()

	// Submit returns once the work is durable.
	if err := n.Client().Submit(ctx, &messages.Work{WorkId: "job-1", JobType: "square", Payload: []byte("12")}); err != nil {
		fmt.Println(err)
		return
	}
	for {
		st, err := n.Client().WorkStatus(ctx, "job-1")
		if err == nil && st.GetStatus() == messages.WorkStatus_WORK_STATUS_DONE {
			fmt.Printf("job-1 done: %s\n", st.GetResult())
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Output: job-1 done: 144
}
