package frontend

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/messages"
)

// SetKeyLimit replaces a concurrency key's run-time limits (both parts
// zero: removes them, back to the flags') at the master of the key's shard
// (every work of the key lives there), which journals it before it
// answers, and returns that master's effective limits. It is idempotent:
// call it again after an error.
func (c *Client) SetKeyLimit(ctx context.Context, limit *messages.KeyLimitSet) ([]*messages.KeyLimitState, error) {
	if limit.GetKey() == "" {
		return nil, fmt.Errorf("%w: the key is empty", ErrInvalidWork)
	}
	shard := route.ShardOf(limit.GetKey(), c.master.Shards())
	l, err := c.askLimits(ctx, shard, &messages.SetKeyLimit{Limit: limit})
	if err != nil {
		return nil, err
	}
	return l.GetLimits(), nil
}

// KeyLimits asks every shard's master for its effective limits (one ask
// each, no retry) and merges them by key: the flags' are the same on
// every shard, a key's run-time ones are its shard's. Any shard's error
// fails the whole answer.
func (c *Client) KeyLimits(ctx context.Context) ([]*messages.KeyLimitState, error) {
	n := c.master.Shards()
	lists, err := everyShard(n, func(k int) (*messages.KeyLimitList, error) {
		return c.askLimits(ctx, k, &messages.GetKeyLimits{})
	})
	if err != nil {
		return nil, err
	}
	var out []*messages.KeyLimitState
	at := make(map[string]int)
	for k, l := range lists {
		for _, st := range l.GetLimits() {
			i, seen := at[st.GetKey()]
			switch {
			case !seen:
				at[st.GetKey()] = len(out)
				out = append(out, st)
			case n > 1 && st.GetKey() != "" && route.ShardOf(st.GetKey(), n) == k:
				out[i] = st // the key's own shard knows its run-time limits
			}
		}
	}
	slices.SortFunc(out, func(a, b *messages.KeyLimitState) int { return strings.Compare(a.GetKey(), b.GetKey()) })
	return out, nil
}

// askLimits asks shard k's master msg and checks its KeyLimitList.
func (c *Client) askLimits(ctx context.Context, k int, msg any) (*messages.KeyLimitList, error) {
	return askShard[*messages.KeyLimitList](ctx, c, k, msg)
}
