package core

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/foreman-actors/foreman/messages"
)

// BenchmarkWorkStateMemory reports the Go heap a state keeps per work
// (live bytes after a collection, divided by the works), for a million
// works with ids like "job-123456", job type "square", payload "7" and
// result "49": pending, done (each started and completed by one of 8
// workers), and done after a snapshot round trip (what a restarted master
// holds). Each iteration builds the states anew.
func BenchmarkWorkStateMemory(b *testing.B) {
	if testing.Short() {
		b.Skip("builds states of a million works")
	}
	const n = 1_000_000
	live := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var pending, done, restored float64
	for range b.N {
		base := live()
		s := NewWorkState()
		at := func(i int) int64 { return t0.Add(time.Duration(i) * time.Microsecond).UnixNano() }
		for i := range n {
			if err := s.Apply(&messages.WorkAccepted{Work: &messages.Work{WorkId: "job-" + strconv.Itoa(i), JobType: "square", Payload: []byte("7")},
				AtUnixNano: at(i)}); err != nil {
				b.Fatal(err)
			}
		}
		pending = float64(live()-base) / n
		for i := range n {
			id, w := "job-"+strconv.Itoa(i), "worker-"+strconv.Itoa(i%8)
			if err := s.Apply(&messages.WorkStarted{WorkId: id, WorkerId: w, AtUnixNano: at(n + i)}); err != nil {
				b.Fatal(err)
			}
			if err := s.Apply(&messages.WorkCompleted{WorkId: id, WorkerId: w, Result: []byte("49"), AtUnixNano: at(n + i)}); err != nil {
				b.Fatal(err)
			}
		}
		done = float64(live()-base) / n
		snap := s.Snapshot()
		s = nil // only the restored state stays live (snap is dead after the restore)
		r, err := RestoreWorkState(snap)
		if err != nil {
			b.Fatal(err)
		}
		restored = float64(live()-base) / n
		runtime.KeepAlive(r)
	}
	b.ReportMetric(pending, "B/pending-work")
	b.ReportMetric(done, "B/done-work")
	b.ReportMetric(restored, "B/restored-done-work")
}

// BenchmarkHandOutDeepQueue: handing out a backlog, per work: the head of a
// queue of 200,000 pending works is found and started (the heap's pop).
func BenchmarkHandOutDeepQueue(b *testing.B) {
	const n = 200_000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "w-" + strconv.Itoa(i)
	}
	now := time.Unix(1_700_000_000, 0)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		s := NewWorkState()
		for i, id := range ids {
			_ = s.Apply(&messages.WorkAccepted{Work: &messages.Work{WorkId: id, JobType: "sq"}, AtUnixNano: now.UnixNano() + int64(i)})
		}
		b.StartTimer()
		later := now.Add(time.Hour)
		for range n {
			e := s.nextReady(later, nil)
			s.applyStarted(e.id, "k", later.UnixNano())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/work")
}

// BenchmarkDelayedWorkMemory reports what a delayed work (run_at an hour
// ahead, issue 37) costs beyond the same work pending without one: the
// live heap of a million of each, built alike, per work. Issue 37 allows
// 100 bytes.
func BenchmarkDelayedWorkMemory(b *testing.B) {
	if testing.Short() {
		b.Skip("builds states of a million works")
	}
	const n = 1_000_000
	live := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	build := func(delay time.Duration) float64 {
		base := live()
		s := NewWorkState()
		for i := range n {
			at := t0.Add(time.Duration(i) * time.Microsecond)
			w := &messages.Work{WorkId: "job-" + strconv.Itoa(i), JobType: "square", Payload: []byte("7")}
			if delay > 0 {
				w.RunAtUnixNano = at.Add(delay).UnixNano()
			}
			if err := s.Apply(&messages.WorkAccepted{Work: w, AtUnixNano: at.UnixNano()}); err != nil {
				b.Fatal(err)
			}
		}
		per := float64(live()-base) / n
		runtime.KeepAlive(s)
		return per
	}
	var plain, delayed float64
	for range b.N {
		plain = build(0)
		delayed = build(time.Hour)
	}
	b.ReportMetric(plain, "B/pending-work")
	b.ReportMetric(delayed, "B/delayed-work")
	b.ReportMetric(delayed-plain, "B/delay-extra")
}
