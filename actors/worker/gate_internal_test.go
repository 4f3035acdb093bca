package worker

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/adaptive"
)

// TestPermitBoxLosesNoPermit races puts, takes and a close: every permit is
// taken by the worker, returned by close, or refused to its goroutine
// (which abandons it), exactly once.
func TestPermitBoxLosesNoPermit(t *testing.T) {
	t.Parallel()
	for round := range 50 {
		b := newPermitBox()
		const n = 64
		permits := make([]*adaptive.Permit, n)
		for i := range permits {
			permits[i] = &adaptive.Permit{}
		}
		var (
			mu      sync.Mutex
			outcome = make(map[*adaptive.Permit]string, n)
		)
		record := func(p *adaptive.Permit, how string) {
			mu.Lock()
			defer mu.Unlock()
			require.Empty(t, outcome[p], "round %d: permit accounted twice (%s, then %s)", round, outcome[p], how)
			outcome[p] = how
		}
		var wg sync.WaitGroup
		for _, p := range permits {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if !b.put(p) {
					record(p, "refused")
					return
				}
				if b.take(p) {
					record(p, "taken")
				}
			}()
		}
		if round%2 == 0 {
			for _, p := range b.close() {
				record(p, "closed")
			}
		}
		wg.Wait()
		for _, p := range b.close() {
			record(p, "closed")
		}
		require.Len(t, outcome, n, "round %d: every permit ends somewhere", round)
		require.False(t, b.put(&adaptive.Permit{}), "a closed box refuses")
	}
}
