package core

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/messages"
)

// FuzzDedupe checks Dedupe against a dumb model: a slice of the last n
// distinct outcomes added. Each byte picks an id and one of four tags, so
// that the outcomes of one id are told apart.
func FuzzDedupe(f *testing.F) {
	f.Add(uint8(2), []byte{1, 2, 1, 3, 3, 4, 1})
	f.Add(uint8(1), []byte{0, 0, 1, 0})
	f.Add(uint8(3), []byte{5, 69, 5, 133, 69, 197, 5})
	f.Fuzz(func(t *testing.T, n uint8, ids []byte) {
		size := int(n%40) + 1
		s := NewDedupe(size, NoBug)
		var model []string
		for _, b := range ids {
			id, tag := fmt.Sprint(b%64), uint64(b/64)
			o := fmt.Sprint(id, "/", tag)
			want := !slices.Contains(model, o)
			require.Equal(t, want, s.Add(id, tag), "add(%s) with model %v", o, model)
			if want {
				model = append(model, o)
				if len(model) > size {
					model = model[1:]
				}
			}
			require.Equal(t, len(model), s.Len())
			checkSeenTable(t, s)
		}
	})
}

// checkSeenTable: the table holds exactly the ring's ids, each reachable
// from its home slot without crossing an empty one.
func checkSeenTable(t *testing.T, s *Dedupe) {
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

// TestOutcomeTag: the outcomes of one work id that dedupe must tell apart
// have different tags; the same outcome read again has the same tag.
func TestOutcomeTag(t *testing.T) {
	t.Parallel()
	const (
		done      = messages.WorkStatus_WORK_STATUS_DONE
		dead      = messages.WorkStatus_WORK_STATUS_DEAD
		cancelled = messages.WorkStatus_WORK_STATUS_CANCELLED
	)
	require.Equal(t, OutcomeTag(done, 0), OutcomeTag(messages.WorkStatus_WORK_STATUS_UNKNOWN, 0),
		"pub-sub's completions (no status) are DONE")
	require.Equal(t, OutcomeTag(dead, 7), OutcomeTag(dead, 7), "the same end read again")
	tags := map[uint64]string{}
	for _, o := range []struct {
		status messages.WorkStatus
		seq    int64
	}{{dead, 7}, {dead, 9}, {cancelled, 7}, {cancelled, 12}, {done, 0}, {done, 14}, {done, 1 << 40}} {
		tag := OutcomeTag(o.status, o.seq)
		require.NotContains(t, tags, tag, "%v@%d has the tag of %s", o.status, o.seq, tags[tag])
		tags[tag] = fmt.Sprint(o.status, "@", o.seq)
	}
}
