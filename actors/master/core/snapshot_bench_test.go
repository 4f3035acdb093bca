package core

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

// pendingState returns a state of n pending works, accepted out of id order.
func pendingState(b *testing.B, n int) *WorkState {
	b.Helper()
	s := NewWorkState()
	for i := range n {
		id := "job-" + strconv.Itoa(i*7919%n)
		if err := s.Apply(&messages.WorkAccepted{Work: &messages.Work{WorkId: id, JobType: "square", Payload: []byte("7")},
			AtUnixNano: t0.Add(time.Duration(i)).UnixNano()}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkWorkStateSnapshot measures a snapshot of a state of pending
// works: "build" is WorkState.Snapshot, on the master's goroutine (it blocks
// the master while it runs); "encode" adds the journal's marshalling (off
// the master); "wire" is what the master does instead since
// persistence.Marshaled, packing straight into the stored bytes; "decode"
// is what recovery does with the stored bytes: unmarshal and
// RestoreWorkState. legacy= is the WorkEntry form masters wrote before the
// packed encoding (see legacySnapshot).
func BenchmarkWorkStateSnapshot(b *testing.B) {
	if testing.Short() {
		b.Skip("builds states of up to a million works")
	}
	for _, n := range []int{200_000, 1_000_000} {
		s := pendingState(b, n)
		for _, legacy := range []bool{false, true} {
			build := s.Snapshot
			if legacy {
				build = func() *messages.MasterSnapshot { return legacySnapshot(s) }
			}
			name := fmt.Sprintf("works=%d/legacy=%t", n, legacy)
			b.Run(name+"/build", func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					build()
				}
			})
			b.Run(name+"/encode", func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					data, err := proto.MarshalOptions{Deterministic: true}.Marshal(build())
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(len(data))/(1<<20), "MB")
				}
			})
			if !legacy {
				// What the master hands the journal since
				// persistence.Marshaled: the wire form, packed straight
				// into one buffer (sized as the master sizes it, here
				// from a first snapshot).
				_, size := s.PackedWire(SnapshotSize{})
				b.Run(name+"/wire", func(b *testing.B) {
					b.ReportAllocs()
					for range b.N {
						data, _ := s.PackedWire(size)
						b.ReportMetric(float64(len(data))/(1<<20), "MB")
					}
				})
			}
			data, err := proto.MarshalOptions{Deterministic: true}.Marshal(build())
			if err != nil {
				b.Fatal(err)
			}
			b.Run(name+"/decode", func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					var snap messages.MasterSnapshot
					if err := proto.Unmarshal(data, &snap); err != nil {
						b.Fatal(err)
					}
					r, err := RestoreWorkState(&snap)
					if err != nil || r.Len() != n {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkEntryRoundTrip: a submitted Work into an entry and back, per
// work: what accepting a work (newEntry) and handing it out (toWork) cost
// beside the queue (issue 34 item 6: the look for fields kept as extra
// bytes rides on every acceptance).
func BenchmarkEntryRoundTrip(b *testing.B) {
	w := &messages.Work{WorkId: "job-123456", JobType: "square", Payload: []byte("7"),
		Waiter: &messages.PID{Address: "127.0.0.1:8090", Id: "interest$42"}}
	// Kept, as the master keeps the entry and sends the Work: neither
	// lives on the benchmark's stack.
	keep := make([]*messages.Work, 64)
	entries := make([]*entry, 64)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		e := newEntry(w)
		entries[i%64], keep[i%64] = e, e.toWork()
		i++
	}
	if keep[0].GetWorkId() == "" || entries[0] == nil {
		b.Fatal("lost the id")
	}
}
