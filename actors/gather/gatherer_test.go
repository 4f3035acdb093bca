package gather_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/gather"
	"github.com/foreman-actors/foreman/actors/testkit"
)

// gate is a send that holds every group until released and records them.
type gate struct {
	mu     sync.Mutex
	groups [][]string
	arrive chan []string
	answer chan error // nil: answer each item "ok:<item>"
}

func newGate() *gate { return &gate{arrive: make(chan []string, 16), answer: make(chan error, 16)} }

func (g *gate) send(ctx context.Context, items []string) ([]string, error) {
	g.mu.Lock()
	g.groups = append(g.groups, items)
	g.mu.Unlock()
	g.arrive <- items
	select {
	case err := <-g.answer:
		if err != nil {
			return nil, err
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = "ok:" + it
	}
	return out, nil
}

// TestGatherer: concurrent Do calls made while a group is out travel
// together in the next one, and each caller gets its own item's answer;
// a whole-group error reaches every caller in the group.
func TestGatherer(t *testing.T) {
	t.Parallel()
	gt := newGate()
	g := gather.NewGatherer(1, 100, 1<<20, gt.send)
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Timeout())
	defer cancel()
	type res struct {
		item, r string
		err     error
	}
	results := make(chan res, 10)
	do := func(item string) {
		go func() {
			r, err := g.Do(ctx, item, 1)
			results <- res{item, r, err}
		}()
	}
	do("a")
	require.Equal(t, []string{"a"}, <-gt.arrive)
	for i := range 5 {
		do(fmt.Sprint("b", i))
	}
	require.Eventually(t, func() bool { return g.Waiting() == 5 }, testkit.Timeout(), time.Millisecond)
	gt.answer <- nil
	require.Equal(t, res{"a", "ok:a", nil}, <-results)
	require.Len(t, <-gt.arrive, 5, "the five waiting items go together")
	gt.answer <- errors.New("receiver down")
	for range 5 {
		r := <-results
		require.EqualError(t, r.err, "receiver down", r.item)
	}
}

// TestGathererCallerLeaves: a caller that leaves before its group goes is
// left out of it; when every caller of a group in flight has left, the
// send's ctx is cancelled so that nothing waits for an answer nobody
// wants.
func TestGathererCallerLeaves(t *testing.T) {
	t.Parallel()
	gt := newGate()
	g := gather.NewGatherer(1, 100, 1<<20, gt.send)
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Timeout())
	defer cancel()
	firstCtx, leaveFirst := context.WithCancel(ctx)
	errc := make(chan error, 3)
	go func() { _, err := g.Do(firstCtx, "a", 1); errc <- err }()
	require.Equal(t, []string{"a"}, <-gt.arrive)
	goneCtx, leave := context.WithCancel(ctx)
	go func() { _, err := g.Do(goneCtx, "gone", 1); errc <- err }()
	go func() { _, err := g.Do(ctx, "stays", 1); errc <- err }()
	require.Eventually(t, func() bool { return g.Waiting() == 2 }, testkit.Timeout(), time.Millisecond)
	leave()
	require.ErrorIs(t, <-errc, context.Canceled)
	require.Equal(t, 1, g.Waiting())

	// The only caller of the group in flight leaves: its send is cancelled
	// (the gate returns ctx.Err()) and the next group goes.
	leaveFirst()
	require.ErrorIs(t, <-errc, context.Canceled)
	require.Equal(t, []string{"stays"}, <-gt.arrive)
	gt.answer <- nil
	require.NoError(t, <-errc)
}

// TestGathererWrongAnswerCount: a send that answers a different number of
// items than it was given fails the whole group rather than misattribute
// answers.
func TestGathererWrongAnswerCount(t *testing.T) {
	t.Parallel()
	g := gather.NewGatherer(1, 100, 1<<20, func(_ context.Context, items []int) ([]int, error) {
		return []int{}, nil
	})
	_, err := g.Do(t.Context(), 1, 1)
	require.ErrorContains(t, err, "0 answers for a group of 1")
}
