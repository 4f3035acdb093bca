package httpapi_test

import (
	"context"

	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/messages"
)

// The harness's backend passes the queue controls on to the real one.

func (b *countingBackend) Queues(ctx context.Context) ([]*messages.QueueState, error) {
	return b.Backend.(httpapi.QueueBackend).Queues(ctx)
}

func (b *countingBackend) PauseQueue(ctx context.Context, jobType string, paused bool) ([]*messages.QueueState, error) {
	return b.Backend.(httpapi.QueueBackend).PauseQueue(ctx, jobType, paused)
}
