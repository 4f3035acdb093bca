package frontend

import (
	"context"
	"fmt"
	"sort"

	"github.com/foreman-actors/foreman/messages"
)

// Queues asks every shard's master for the state of its queues (one ask
// each, no retry) and merges them by job type: counts add up, a type is
// paused when any shard says so (a pause goes to every shard; a shard that
// missed it is paused again by the next PauseQueue). Any shard's error
// fails the whole answer.
func (c *Client) Queues(ctx context.Context) ([]*messages.QueueState, error) {
	return c.queuesAll(ctx, &messages.GetQueues{})
}

// PauseQueue pauses (paused true) or resumes a job type on every shard's
// master, each of which journals it before it answers, and returns the
// merged queues. A shard's error fails the call; the shards that answered
// keep the change (call again: it is idempotent).
func (c *Client) PauseQueue(ctx context.Context, jobType string, paused bool) ([]*messages.QueueState, error) {
	if jobType == "" {
		return nil, fmt.Errorf("%w: the job type is empty", ErrInvalidWork)
	}
	return c.queuesAll(ctx, &messages.PauseQueue{JobType: jobType, Paused: paused})
}

func (c *Client) queuesAll(ctx context.Context, msg any) ([]*messages.QueueState, error) {
	lists, err := everyShard(c.master.Shards(), func(k int) (*messages.QueueList, error) {
		return askShard[*messages.QueueList](ctx, c, k, msg)
	})
	if err != nil {
		return nil, err
	}
	by := make(map[string]*messages.QueueState)
	var out []*messages.QueueState
	for _, l := range lists {
		for _, q := range l.GetQueues() {
			m := by[q.GetJobType()]
			if m == nil {
				m = &messages.QueueState{JobType: q.GetJobType()}
				by[q.GetJobType()] = m
				out = append(out, m)
			}
			m.Paused = m.GetPaused() || q.GetPaused()
			m.Pending += q.GetPending()
			m.Delayed += q.GetDelayed()
			m.Running += q.GetRunning()
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetJobType() < out[j].GetJobType() })
	return out, nil
}
