package frontend

import (
	"context"
	"fmt"

	"github.com/foreman-actors/foreman/messages"
)

// ListWork asks the master for the works in status, newest first (see
// messages.ListWork); one ask, no retry.
func (c *Client) ListWork(ctx context.Context, status messages.WorkStatus, limit int) (*messages.WorkList, error) {
	res, err := c.ask(ctx, &messages.ListWork{Status: status, Limit: int32(min(limit, 1<<30))})
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
	res, err := c.ask(ctx, &messages.ResubmitWork{WorkId: workID})
	if err != nil {
		return nil, err
	}
	r, ok := res.(*messages.ResubmitReply)
	if !ok {
		return nil, fmt.Errorf("%w: %T answering ResubmitWork", ErrUnexpectedReply, res)
	}
	return r, nil
}
