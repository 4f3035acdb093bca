package master

import (
	"strconv"
	"testing"
	"time"

	"github.com/foreman-actors/foreman/messages"
)

// BenchmarkWorkStateSnapshot measures building the snapshot message of a
// state with 200,000 pending works, on the master's goroutine (it blocks
// the master while it runs).
func BenchmarkWorkStateSnapshot(b *testing.B) {
	s := NewWorkState()
	for i := range 200_000 {
		id := "job-" + strconv.Itoa(i*7919%200_000) // not in id order
		if err := s.Apply(&messages.WorkAccepted{Work: &messages.Work{WorkId: id, JobType: "square", Payload: []byte("7")},
			AtUnixNano: t0.Add(time.Duration(i)).UnixNano()}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		if snap := s.Snapshot(); len(snap.GetEntries()) != 200_000 {
			b.Fatal(len(snap.GetEntries()))
		}
	}
}
