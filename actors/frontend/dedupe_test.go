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
		size := int(n%8) + 1
		s := newSeenSet(size)
		var model []string
		for _, b := range ids {
			id := fmt.Sprint(b % 16)
			want := !slices.Contains(model, id)
			require.Equal(t, want, s.add(id), "add(%s) with model %v", id, model)
			if want {
				model = append(model, id)
				if len(model) > size {
					model = model[1:]
				}
			}
			require.Len(t, s.ids, len(model))
		}
	})
}
