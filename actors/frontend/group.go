package frontend

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/gather"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/messages"
)

// DefaultSubmitGroups is how many groups of single submissions each shard
// has on their way to its master at once (WithSubmitGroups): two, so that
// the master's journal has the next group while the previous one syncs.
// One, two and four measured the same CPU per job within the noise
// (docs/benchmarks/issue39-cpu.md).
const DefaultSubmitGroups = 2

// shardGatherer gathers one shard's single submissions; each answer is
// the submission's outcome as SubmitOnce would give it.
type shardGatherer = gather.Gatherer[*messages.Work, error]

// newShardGatherers returns a gatherer per shard, or nil when grouping is
// off.
func (c *Client) newShardGatherers(shards, inFlight int) []*shardGatherer {
	if inFlight <= 0 {
		return nil
	}
	out := make([]*shardGatherer, shards)
	for k := range out {
		out[k] = gather.NewGatherer(inFlight, MaxChunkWorks, MaxChunkBytes,
			func(ctx context.Context, works []*messages.Work) ([]error, error) { return c.sendGroup(ctx, k, works) })
	}
	return out
}

// submitAttempt is one attempt of Submit: gathered with other submissions
// to the same shard (WithSubmitGroups), or alone.
func (c *Client) submitAttempt(ctx context.Context, w *messages.Work) error {
	if c.groups == nil || w == nil || w.GetWorkId() == "" {
		return c.SubmitOnce(ctx, w) // SubmitOnce names a nil work or empty id
	}
	outcome, err := c.groups[route.ShardOf(w.GetWorkId(), len(c.groups))].Do(ctx, w, proto.Size(w))
	if err != nil {
		return err
	}
	return outcome
}

// sendGroup asks shard k's master to take works (one attempt: a WorkBatch,
// or the Work itself when it is alone) and returns each work's outcome:
// nil (durable), *DuplicateError or *RejectedError; or the ask's error for
// all of them (each caller's retry loop decides again, and the retries
// gather in new groups).
func (c *Client) sendGroup(ctx context.Context, k int, works []*messages.Work) ([]error, error) {
	if len(works) == 1 { // alone: the plain Work and Ack, as without grouping
		return []error{c.SubmitOnce(ctx, works[0])}, nil
	}
	outs := make([]error, len(works))
	err := c.askBatch(ctx, c.master.Shard(k), &messages.WorkBatch{Works: works}, func(j int, o *messages.BatchOutcome) {
		outs[j] = outcomeOf(o)
	})
	if err != nil {
		return nil, fmt.Errorf("submit %d works together: %w", len(works), err)
	}
	return outs, nil
}

// outcomeOf is the error a single Submit attempt gives for o.
func outcomeOf(o *messages.BatchOutcome) error {
	switch {
	case !o.GetAccepted():
		return &RejectedError{WorkID: o.GetWorkId(), Code: o.GetCode(), Reason: o.GetReason()}
	case o.GetDuplicateOf() != "":
		return &DuplicateError{WorkID: o.GetWorkId(), Of: o.GetDuplicateOf(), Status: o.GetDuplicateStatus()}
	}
	return nil
}
