package core

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFairnessLaneThatRefillsWaitsItsTurn: a lane that empties in its turn
// and gets work again joins the rotation at its back, behind a key that
// waits (issue 37 item 4's bound: a waiting key's work goes after at most
// one turn of every other key). Appended at the end of the ring instead,
// two keys that each have one job at a time passed the waiting key's lane
// turn after turn: b1 waited forever (found by reading pending.go for the
// simulator's fairness_bounded).
func TestFairnessLaneThatRefillsWaitsItsTurn(t *testing.T) {
	t.Parallel()
	s := build(t, queued("b0", "sq", 0, 0, -1, "B"), queued("b1", "sq", 0, 0, -1, "B"),
		queued("x0", "sq", 0, 0, -1, "X"), queued("y0", "sq", 0, 0, -1, "Y"))
	var order []string
	d := time.Second
	for range 8 {
		w := s.NextReady(t0.Add(d), nil)
		require.NotNil(t, w)
		id := w.GetWorkId()
		order = append(order, id)
		require.NoError(t, s.Apply(started(id, "w", d)))
		d += time.Millisecond
		if k := w.GetFairnessKey(); k != "B" {
			// X and Y have one job at a time: the next comes as soon as
			// one is handed out.
			require.NoError(t, s.Apply(queued(k+strconv.Itoa(len(order)), "sq", d, 0, -1, k)))
		}
	}
	require.Equal(t, "b0", order[0])
	require.Contains(t, order[1:4], "b1", "b1 waits at most one turn of X and one of Y: %v", order)
}
