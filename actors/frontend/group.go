package frontend

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/frontend/core"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/messages"
)

// DefaultSubmitGroups is how many groups of single submissions each shard
// has on their way to its master at once (WithSubmitGroups). Two keep the
// master's journal busy with the next group while the previous one syncs;
// more make the groups smaller and the CPU per work higher for no
// throughput (docs/benchmarks/issue39-cpu.md).
const DefaultSubmitGroups = 2

// shardGroup gathers one shard's single submissions (core.Group, under
// mu).
type shardGroup struct {
	mu sync.Mutex
	g  *core.Group[*groupedSubmit]
}

// groupedSubmit is one Submit attempt waiting in, or travelling with, a
// group. left and sent are guarded by its shard's mu.
type groupedSubmit struct {
	w    *messages.Work
	done chan error // the attempt's outcome; buffered, written once
	// left is set when the caller stopped waiting (its ctx ended): a
	// group not yet sent leaves the work out.
	left bool
	// sent is the group the work travels in, once it was sent.
	sent *sentGroup
}

// sentGroup is a group on its way. Its ask is no single caller's: it
// ends at the ask timeout, or at once when every caller in it has left
// (the works may still become durable, as a lone ask's may), so that no
// goroutine waits for an answer nobody wants.
type sentGroup struct {
	live   int // callers still waiting, under the shard's mu
	cancel context.CancelFunc
}

// newShardGroups returns a gatherer per shard, or nil when grouping is off.
func newShardGroups(shards, inFlight int) []*shardGroup {
	if inFlight <= 0 {
		return nil
	}
	out := make([]*shardGroup, shards)
	for k := range out {
		out[k] = &shardGroup{g: core.NewGroup[*groupedSubmit](inFlight, MaxChunkWorks, MaxChunkBytes)}
	}
	return out
}

// submitAttempt is one attempt of Submit: in a group with other
// submissions to the same shard (WithSubmitGroups), or alone.
func (c *Client) submitAttempt(ctx context.Context, w *messages.Work) error {
	if c.groups == nil || w == nil || w.GetWorkId() == "" {
		return c.SubmitOnce(ctx, w) // SubmitOnce names a nil work or empty id
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	k := route.ShardOf(w.GetWorkId(), len(c.groups))
	sg := c.groups[k]
	p := &groupedSubmit{w: w, done: make(chan error, 1)}
	sg.mu.Lock()
	send := sg.g.Add(p, proto.Size(w))
	sg.mu.Unlock()
	if send != nil {
		go c.sendGroups(k, send)
	}
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		sg.mu.Lock()
		p.left = true
		if p.sent == nil {
			sg.g.Remove(func(q *groupedSubmit) bool { return q == p })
		} else if p.sent.live--; p.sent.live == 0 {
			p.sent.cancel()
		}
		sg.mu.Unlock()
		return ctx.Err()
	}
}

// sendGroups sends shard k's master the group first as one WorkBatch,
// tells each submission its outcome, and goes on with the groups that
// gathered meanwhile until none waits. Submissions whose callers left
// before their group went are left out of it.
func (c *Client) sendGroups(k int, first []*groupedSubmit) {
	sg := c.groups[k]
	for group := first; group != nil; {
		ctx, cancel := context.WithCancel(context.Background())
		sent := &sentGroup{cancel: cancel}
		sg.mu.Lock()
		live := group[:0]
		for _, p := range group {
			if !p.left {
				p.sent = sent
				live = append(live, p)
			}
		}
		sent.live = len(live)
		sg.mu.Unlock()
		if len(live) > 0 {
			c.sendGroup(ctx, k, live)
		}
		cancel()
		sg.mu.Lock()
		group = sg.g.Answered()
		sg.mu.Unlock()
	}
}

// sendGroup asks shard k's master to take group's works (one attempt: a
// WorkBatch, or the Work itself when it is alone) and
// gives every submission its outcome: nil (durable), *DuplicateError,
// *RejectedError, or the ask's error for all of them (each caller's retry
// loop decides again, and the retries gather in new groups).
func (c *Client) sendGroup(ctx context.Context, k int, group []*groupedSubmit) {
	if len(group) == 1 { // alone: the plain Work and Ack, as without grouping
		group[0].done <- c.SubmitOnce(ctx, group[0].w)
		return
	}
	batch := &messages.WorkBatch{Works: make([]*messages.Work, len(group))}
	for j, p := range group {
		batch.Works[j] = p.w
	}
	err := c.askBatch(ctx, c.master.Shard(k), batch, func(j int, o *messages.BatchOutcome) {
		group[j].done <- outcomeOf(o)
	})
	if err != nil {
		err = fmt.Errorf("submit %d works together: %w", len(group), err)
		for _, p := range group {
			p.done <- err
		}
	}
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
