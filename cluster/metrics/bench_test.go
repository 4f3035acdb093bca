package metrics

import (
	"strconv"
	"testing"
	"time"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// BenchmarkObserveJob: what the metrics add to one job on the master's
// node: its three durable events (accepted, started, completed) and one
// counts update.
func BenchmarkObserveJob(b *testing.B) {
	m := New()
	o := m.MasterObserver()
	ids := make([]string, 1024)
	for i := range ids {
		ids[i] = "job-" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := ids[i%len(ids)]
		o.Durable("master", &messages.WorkAccepted{Work: &messages.Work{WorkId: id, JobType: "square"}, AtUnixNano: int64(i)}, "square")
		o.Durable("master", &messages.WorkStarted{WorkId: id, AtUnixNano: int64(i)}, "square")
		o.Durable("master", &messages.WorkCompleted{WorkId: id, AtUnixNano: int64(i) + 1000}, "square")
		o.Counts("master", master.Counts{Pending: 1, InProgress: 2, Done: i}, 1, 1)
	}
}

// BenchmarkObserveCommit: one group-commit observation.
func BenchmarkObserveCommit(b *testing.B) {
	obs := New().CommitObserver()
	st := journal.CommitStats{Requests: 8, Events: 24, Duration: time.Millisecond}
	b.ReportAllocs()
	for b.Loop() {
		obs(st)
	}
}
