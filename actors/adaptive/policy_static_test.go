package adaptive_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/adaptive"
)

func TestStaticPolicies(t *testing.T) {
	t.Parallel()

	t.Run("FixedNeverMoves", func(t *testing.T) {
		t.Parallel()
		f, err := adaptive.NewFixed(4)
		require.NoError(t, err)
		require.Equal(t, 4, f.Limit())
		for i := range 10 {
			obs := adaptive.Observation{Arrival: epoch, Started: epoch, InFlight: 4, Limit: 4, Queued: 100 * i}
			require.Equal(t, 4, f.Observe(obs, epoch.Add(time.Duration(i)*time.Second)))
		}
	})

	t.Run("UnboundedNeverQueues", func(t *testing.T) {
		t.Parallel()
		c := adaptive.NewCore[int](adaptive.Unbounded())
		started := c.PushBatch(epoch, make([]int, 1000))
		require.Len(t, started, 1000)
		require.Equal(t, adaptive.Stats{Queue: 0, InFlight: 1000, Limit: adaptive.Unlimited}, c.Stats())
		started = c.Done(epoch.Add(time.Second), started[0].Ticket, -1)
		require.Empty(t, started)
		require.Equal(t, adaptive.Unlimited, c.Stats().Limit)
	})

	tests := []struct {
		name string
		n    int
		ok   bool
	}{
		{name: "One", n: 1, ok: true},
		{name: "SeedsFour", n: 4, ok: true},
		{name: "Zero", n: 0},
		{name: "Negative", n: -3},
		{name: "AboveUnlimited", n: adaptive.Unlimited + 1},
	}
	for _, tt := range tests {
		t.Run("Validate"+tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := adaptive.NewFixed(tt.n)
			_, perr := adaptive.Props(adaptive.WithFixed(tt.n))
			_, lerr := adaptive.NewLimiter(adaptive.WithFixed(tt.n))
			if tt.ok {
				require.NoError(t, err)
				require.NoError(t, perr)
				require.NoError(t, lerr)
				return
			}
			for _, e := range []error{err, perr, lerr} {
				require.ErrorIs(t, e, adaptive.ErrInvalidConfig)
				require.ErrorContains(t, e, "fixed level")
			}
		})
	}

	t.Run("WithFixedOverridesWithPolicy", func(t *testing.T) {
		t.Parallel()
		l, err := adaptive.NewLimiter(adaptive.WithPolicy(adaptive.PolicySeed), adaptive.WithFixed(3))
		require.NoError(t, err)
		require.Equal(t, 3, l.Limit())
		l, err = adaptive.NewLimiter(adaptive.WithUnbounded())
		require.NoError(t, err)
		require.Equal(t, adaptive.Unlimited, l.Limit())
	})
}
