package gather

import (
	"context"
	"fmt"
	"sync"
)

// Send delivers one group of items and returns one answer per item, in
// order, or an error for the whole group (every caller in it gets that
// error). ctx ends when every caller in the group has left.
type Send[T, R any] func(ctx context.Context, items []T) ([]R, error)

// Gatherer runs a [Group] for concurrent callers: Do blocks until the
// caller's own answer comes. It is safe for concurrent use.
type Gatherer[T, R any] struct {
	send Send[T, R]

	mu sync.Mutex
	g  *Group[*call[T, R]]
}

// call is one Do waiting in, or travelling with, a group. left and sent
// are guarded by the Gatherer's mu.
type call[T, R any] struct {
	item T
	done chan answer[R] // buffered, written once
	// left is set when the caller stopped waiting (its ctx ended): a
	// group not yet sent leaves the item out.
	left bool
	// sent is the group the item travels in, once it was sent.
	sent *sent
}

type answer[R any] struct {
	r   R
	err error
}

// sent is a group on its way. Its send is no single caller's: it ends
// when send returns, or is cancelled as soon as every caller in it has
// left, so that no goroutine waits for an answer nobody wants.
type sent struct {
	live   int // callers still waiting, under the Gatherer's mu
	cancel context.CancelFunc
}

// NewGatherer returns a Gatherer that delivers groups with send, keeping
// at most inFlight groups on their way at once, each of at most maxItems
// items and maxBytes bytes (an item larger than that goes alone).
func NewGatherer[T, R any](inFlight, maxItems, maxBytes int, send Send[T, R]) *Gatherer[T, R] {
	return &Gatherer[T, R]{send: send, g: NewGroup[*call[T, R]](inFlight, maxItems, maxBytes)}
}

// Do queues item (size: its encoded size) and returns its answer once its
// group was delivered, or ctx.Err() when ctx ends first: an item not yet
// sent is then left out of its group; one already sent may still be
// delivered.
func (g *Gatherer[T, R]) Do(ctx context.Context, item T, size int) (R, error) {
	var zero R
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	c := &call[T, R]{item: item, done: make(chan answer[R], 1)}
	g.mu.Lock()
	group := g.g.Add(c, size)
	g.mu.Unlock()
	if group != nil {
		go g.deliver(group)
	}
	select {
	case a := <-c.done:
		return a.r, a.err
	case <-ctx.Done():
		g.mu.Lock()
		c.left = true
		if c.sent == nil {
			g.g.Remove(func(q *call[T, R]) bool { return q == c })
		} else if c.sent.live--; c.sent.live == 0 {
			c.sent.cancel()
		}
		g.mu.Unlock()
		return zero, ctx.Err()
	}
}

// Waiting is how many items wait for a group to go.
func (g *Gatherer[T, R]) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.g.Waiting()
}

// deliver sends group, answers its callers, and goes on with the groups
// that gathered meanwhile until none waits.
func (g *Gatherer[T, R]) deliver(group []*call[T, R]) {
	for group != nil {
		ctx, cancel := context.WithCancel(context.Background())
		s := &sent{cancel: cancel}
		g.mu.Lock()
		live := group[:0]
		for _, c := range group {
			if !c.left {
				c.sent = s
				live = append(live, c)
			}
		}
		s.live = len(live)
		g.mu.Unlock()
		if len(live) > 0 {
			g.sendOne(ctx, live)
		}
		cancel()
		g.mu.Lock()
		group = g.g.Answered()
		g.mu.Unlock()
	}
}

// sendOne delivers one group and hands every caller its answer.
func (g *Gatherer[T, R]) sendOne(ctx context.Context, group []*call[T, R]) {
	items := make([]T, len(group))
	for j, c := range group {
		items[j] = c.item
	}
	rs, err := g.send(ctx, items)
	if err == nil && len(rs) != len(items) {
		err = fmt.Errorf("gather: %d answers for a group of %d", len(rs), len(items))
	}
	for j, c := range group {
		if err != nil {
			c.done <- answer[R]{err: err}
			continue
		}
		c.done <- answer[R]{r: rs[j]}
	}
}
