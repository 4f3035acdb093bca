package core

import (
	"strconv"
	"testing"

	"github.com/foreman-actors/foreman/messages"
)

// BenchmarkDedupeAdd: adding new ids to a full window of 65,536 (the
// consumer's default), as a result feed does: every add evicts the oldest.
func BenchmarkDedupeAdd(b *testing.B) {
	const window = 1 << 16
	ids := make([]string, 4*window)
	for i := range ids {
		ids[i] = "bench-1764200000-" + strconv.Itoa(i)
	}
	s := NewDedupe(window, NoBug)
	for _, id := range ids[:window] {
		s.Add(id, OutcomeTag(messages.WorkStatus_WORK_STATUS_DONE, 0))
	}
	b.ReportAllocs()
	i := window
	for b.Loop() {
		if !s.Add(ids[i%len(ids)], OutcomeTag(messages.WorkStatus_WORK_STATUS_DONE, int64(i))) {
			b.Fatal("a new id was taken for a duplicate")
		}
		i++
		if i%len(ids) == 0 {
			i += window // skip the ids still in the window
		}
	}
}
