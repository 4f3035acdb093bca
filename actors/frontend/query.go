package frontend

import (
	"context"
	"fmt"
	"sort"

	"github.com/foreman-actors/foreman/messages"
)

// ListWork asks the master for the works in status, newest first (see
// messages.ListWork); one ask per shard, no retry. With several shards the
// lists are merged (ordered by when the works started or finished, newest
// first) and cut to limit; the total is the sum. Any shard's error fails
// the whole list.
func (c *Client) ListWork(ctx context.Context, status messages.WorkStatus, limit int) (*messages.WorkList, error) {
	lists, err := everyShard(c.master.Shards(), func(k int) (*messages.WorkList, error) {
		return c.listShard(ctx, k, status, limit)
	})
	if err != nil {
		return nil, err
	}
	if len(lists) == 1 {
		return lists[0], nil
	}
	out := &messages.WorkList{}
	for _, l := range lists {
		out.Works = append(out.Works, l.GetWorks()...)
		out.Total += l.GetTotal()
	}
	when := func(w *messages.WorkSummary) int64 {
		return max(w.GetFinishedAtUnixNano(), w.GetStartedAtUnixNano())
	}
	sort.SliceStable(out.Works, func(i, j int) bool { return when(out.Works[i]) > when(out.Works[j]) })
	if limit > 0 && len(out.Works) > limit {
		out.Works = out.Works[:limit]
	}
	return out, nil
}

func (c *Client) listShard(ctx context.Context, k int, status messages.WorkStatus, limit int) (*messages.WorkList, error) {
	res, err := c.askTo(ctx, c.master.Shard(k), &messages.ListWork{Status: status, Limit: int32(min(limit, 1<<30))}, c.cfg.askTimeout)
	if err != nil {
		return nil, err
	}
	r, ok := res.(*messages.WorkList)
	if !ok {
		return nil, fmt.Errorf("%w: %T answering ListWork", ErrUnexpectedReply, res)
	}
	return r, nil
}

// Resubmit asks the master to run a dead work again (see
// messages.ResubmitWork); one ask, no retry: a lost answer may have
// re-submitted it, which GetWorkStatus tells.
func (c *Client) Resubmit(ctx context.Context, workID string) (*messages.ResubmitReply, error) {
	res, err := c.askWork(ctx, workID, &messages.ResubmitWork{WorkId: workID})
	if err != nil {
		return nil, err
	}
	r, ok := res.(*messages.ResubmitReply)
	if !ok {
		return nil, fmt.Errorf("%w: %T answering ResubmitWork", ErrUnexpectedReply, res)
	}
	return r, nil
}
