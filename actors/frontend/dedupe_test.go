package frontend

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzSeenSet checks seenSet against a dumb model: a slice of the last n
// distinct ids added.
func FuzzSeenSet(f *testing.F) {
	f.Add(uint8(2), []byte{1, 2, 1, 3, 3, 4, 1})
	f.Add(uint8(1), []byte{0, 0, 1, 0})
	f.Fuzz(func(t *testing.T, n uint8, ids []byte) {
		size := int(n%40) + 1
		s := newSeenSet(size)
		var model []string
		for _, b := range ids {
			id := fmt.Sprint(b % 64)
			want := !slices.Contains(model, id)
			require.Equal(t, want, s.add(id), "add(%s) with model %v", id, model)
			if want {
				model = append(model, id)
				if len(model) > size {
					model = model[1:]
				}
			}
			require.Equal(t, len(model), s.len())
			checkSeenTable(t, s)
		}
	})
}

// checkSeenTable: the table holds exactly the ring's ids, each reachable
// from its home slot without crossing an empty one.
func checkSeenTable(t *testing.T, s *seenSet) {
	t.Helper()
	used := 0
	for _, sl := range s.slots {
		if sl.ref != 0 {
			used++
			require.Equal(t, s.ring[sl.ref-1].hash, sl.hash)
		}
	}
	require.Equal(t, len(s.ring), used, "one slot per remembered id")
	for ref, r := range s.ring {
		i := r.hash & s.mask
		for s.slots[i].ref != int32(ref+1) {
			require.NotZero(t, s.slots[i].ref, "id %q cut off from its home slot by an empty one", r.id)
			i = (i + 1) & s.mask
		}
	}
}
