package frontend

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/foreman-actors/foreman/messages"
)

// everyShard calls ask for each of n shards at once and returns their
// answers in shard order. Any shard's error fails the whole call (all of
// them, joined): the queries that merge every shard's answer (ListWork,
// Queues, KeyLimits) cannot give a partial one that looks whole.
func everyShard[T any](n int, ask func(k int) (T, error)) ([]T, error) {
	out := make([]T, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[k], errs[k] = ask(k)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// shardAnswer is an answer of a shard's master that says why it could not
// serve: unavailable (not serving yet, or no longer) or a refused request.
type shardAnswer interface {
	GetUnavailable() bool
	GetReason() string
}

// askShard asks shard k's master msg (one ask, no retry) and checks that
// the answer is a T that served it: an unavailable master is a
// RejectedError (UNAVAILABLE) naming the shard, a refusal ErrInvalidWork.
func askShard[T shardAnswer](ctx context.Context, c *Client, k int, msg any) (T, error) {
	var none T
	res, err := c.askTo(ctx, c.master.Shard(k), msg, c.cfg.askTimeout)
	if err != nil {
		return none, fmt.Errorf("shard %d: %w", k, err)
	}
	a, ok := res.(T)
	switch {
	case !ok:
		return none, fmt.Errorf("%w: %T answering %T", ErrUnexpectedReply, res, msg)
	case a.GetUnavailable():
		return none, &RejectedError{Code: messages.RejectCode_REJECT_CODE_UNAVAILABLE, Reason: fmt.Sprintf("shard %d: %s", k, a.GetReason())}
	case a.GetReason() != "":
		return none, fmt.Errorf("%w: %s", ErrInvalidWork, a.GetReason())
	}
	return a, nil
}
