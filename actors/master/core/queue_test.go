package core

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestQueueHeap: under random pushes and removals (of the head, as a
// hand-out does, or of any entry, as a cancellation does) the queue keeps
// the heap order and every entry's heapIdx, and empties in hand-out order.
func TestQueueHeap(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var q queue
		var live []*entry
		order := int64(0)
		check := func() {
			for i, it := range q {
				require.Equal(t, int32(i), it.e.heapIdx, "round %d: heapIdx of item %d", round, i)
				require.Equal(t, it.e.readyAt, it.key)
				if i > 0 {
					require.False(t, it.before(q[(i-1)/2]), "round %d: item %d before its parent", round, i)
				}
			}
			require.Len(t, q, len(live))
		}
		for range 1 + rng.IntN(300) {
			switch {
			case len(live) == 0 || rng.IntN(3) > 0:
				order++
				// Mostly increasing ready times, as accepts are; some in
				// the past or future, as retries with a backoff are.
				e := &entry{readyAt: order*10 + int64(rng.IntN(40)) - 20, order: order}
				q.push(e)
				live = append(live, e)
			case rng.IntN(2) == 0:
				head := q[0].e
				q.remove(0)
				require.Equal(t, int32(-1), head.heapIdx)
				live = slices.DeleteFunc(live, func(e *entry) bool { return e == head })
			default:
				victim := live[rng.IntN(len(live))]
				q.remove(int(victim.heapIdx))
				require.Equal(t, int32(-1), victim.heapIdx)
				live = slices.DeleteFunc(live, func(e *entry) bool { return e == victim })
			}
			check()
		}
		slices.SortFunc(live, func(a, b *entry) int {
			if (qitem{a.readyAt, a.order, a}).before(qitem{b.readyAt, b.order, b}) {
				return -1
			}
			return 1
		})
		for len(live) > 0 {
			want := live[0]
			live = live[1:]
			require.Same(t, want, q[0].e, "round %d: hand-out order", round)
			q.remove(0)
			check()
		}
		require.Empty(t, q)
	}
}
