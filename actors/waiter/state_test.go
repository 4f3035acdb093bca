package waiter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Reference: seed 003, WorkScheduler: "We haven't reached our maximum
// concurrency limit yet so we don't need to queue the work" / "We're already
// running at our maximum so we queue the work instead" / "One of our workers
// has completed, so we can (potentially) get something else running".
func TestQueue(t *testing.T) {
	t.Parallel()

	type step struct {
		submit   int // job to submit, or 0 for Done
		want     Admission
		wantNext int  // for Done: the job started next, 0 for none
		running  int  // Running() after the step
		backlog  int  // Backlog() after the step
		idle     bool // Idle() after the step
	}
	tests := []struct {
		name       string
		limit      int
		maxBacklog int
		order      Order
		steps      []step
	}{
		{
			name: "starts up to the limit then queues", limit: 2, order: FIFO,
			steps: []step{
				{submit: 1, want: AdmitStart, running: 1},
				{submit: 2, want: AdmitStart, running: 2},
				{submit: 3, want: AdmitQueued, running: 2, backlog: 1},
				{submit: 4, want: AdmitQueued, running: 2, backlog: 2},
			},
		},
		{
			name: "fifo serves the oldest first", limit: 1, order: FIFO,
			steps: []step{
				{submit: 1, want: AdmitStart, running: 1},
				{submit: 2, want: AdmitQueued, running: 1, backlog: 1},
				{submit: 3, want: AdmitQueued, running: 1, backlog: 2},
				{wantNext: 2, running: 1, backlog: 1},
				{wantNext: 3, running: 1},
				{running: 0, idle: true},
			},
		},
		{
			name: "lifo serves the newest first", limit: 1, order: LIFO,
			steps: []step{
				{submit: 1, want: AdmitStart, running: 1},
				{submit: 2, want: AdmitQueued, running: 1, backlog: 1},
				{submit: 3, want: AdmitQueued, running: 1, backlog: 2},
				{wantNext: 3, running: 1, backlog: 1},
				{submit: 4, want: AdmitQueued, running: 1, backlog: 2},
				{wantNext: 4, running: 1, backlog: 1},
				{wantNext: 2, running: 1},
				{running: 0, idle: true},
			},
		},
		{
			name: "a full backlog rejects", limit: 1, maxBacklog: 1, order: FIFO,
			steps: []step{
				{submit: 1, want: AdmitStart, running: 1},
				{submit: 2, want: AdmitQueued, running: 1, backlog: 1},
				{submit: 3, want: AdmitRejected, running: 1, backlog: 1},
				{wantNext: 2, running: 1},
				{submit: 4, want: AdmitQueued, running: 1, backlog: 1},
			},
		},
		{
			name: "a free slot is used before the backlog bound matters", limit: 2, maxBacklog: 1, order: LIFO,
			steps: []step{
				{submit: 1, want: AdmitStart, running: 1},
				{running: 0, idle: true},
				{submit: 2, want: AdmitStart, running: 1},
				{submit: 3, want: AdmitStart, running: 2},
				{submit: 4, want: AdmitQueued, running: 2, backlog: 1},
				{submit: 5, want: AdmitRejected, running: 2, backlog: 1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q := NewQueue[int](tt.limit, tt.maxBacklog, tt.order)
			require.True(t, q.Idle())
			for i, s := range tt.steps {
				if s.submit != 0 {
					require.Equal(t, s.want, q.Submit(s.submit), "step %d: submit %d", i, s.submit)
				} else {
					next, ok := q.Done()
					require.Equal(t, s.wantNext != 0, ok, "step %d: Done ok", i)
					require.Equal(t, s.wantNext, next, "step %d: Done next", i)
				}
				require.Equal(t, s.running, q.Running(), "step %d: running", i)
				require.Equal(t, s.backlog, q.Backlog(), "step %d: backlog", i)
				require.Equal(t, s.idle, q.Idle(), "step %d: idle", i)
			}
		})
	}
}

func TestQueueDrain(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		order Order
		want  []int
	}{
		{name: "fifo", order: FIFO, want: []int{2, 3, 4}},
		{name: "lifo", order: LIFO, want: []int{4, 3, 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q := NewQueue[int](1, 0, tt.order)
			for j := 1; j <= 4; j++ {
				q.Submit(j)
			}
			require.Equal(t, tt.want, q.Drain())
			require.Equal(t, 0, q.Backlog())
			require.Equal(t, 1, q.Running(), "draining leaves running jobs alone")
			_, ok := q.Done()
			require.False(t, ok)
			require.True(t, q.Idle())
		})
	}
}

func TestQueueRejectsWiringMistakes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		limit      int
		maxBacklog int
		order      Order
	}{
		{name: "zero limit", limit: 0, order: FIFO},
		{name: "negative backlog", limit: 1, maxBacklog: -1, order: FIFO},
		{name: "unknown order", limit: 1, order: Order(7)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Panics(t, func() { NewQueue[int](tt.limit, tt.maxBacklog, tt.order) })
		})
	}
	require.PanicsWithValue(t, "waiter: Queue.Done called with no job running", func() {
		NewQueue[int](1, 0, FIFO).Done()
	})
}

func TestStatsRecord(t *testing.T) {
	t.Parallel()
	var s Stats
	s.record(outcomeSkipped, 0)
	s.record(outcomeDropped, 0)
	s.record(outcomeCompleted, 100*time.Millisecond)
	s.record(outcomeFailed, 10*time.Millisecond)
	s.record(outcomeCancelled, 40*time.Millisecond)
	require.Equal(t, Stats{
		Skipped: 1, Dropped: 1, Completed: 1, Failed: 1, CancelledWhileRunning: 1,
		BusyTime: 150 * time.Millisecond, WastedTime: 40 * time.Millisecond,
	}, s)
	require.Equal(t, uint64(5), s.Finished())
}

func TestStringers(t *testing.T) {
	t.Parallel()
	require.Equal(t, "fifo", FIFO.String())
	require.Equal(t, "lifo", LIFO.String())
	require.Equal(t, "Order(9)", Order(9).String())
	require.Equal(t, "rejected", AdmitRejected.String())
	require.Equal(t, "Admission(0)", Admission(0).String())
	require.Equal(t, "cancelled", outcomeCancelled.String())
	require.Equal(t, "closed", reasonClosed.String())
}
