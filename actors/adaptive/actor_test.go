package adaptive_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/adaptive"
	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/testkit"
)

type testBundle struct {
	sys   *actor.ActorSystem
	probe *testkit.Probe
	clock *clock.Manual
	pid   *actor.PID
	gates map[string]chan struct{}
	mu    sync.Mutex
}

// gated returns a job that finishes when gate(id) is closed, or when the
// scheduler cancels it.
func (b *testBundle) gated(id string) adaptive.Job {
	b.mu.Lock()
	defer b.mu.Unlock()
	g := make(chan struct{})
	b.gates[id] = g
	return adaptive.Job{ID: id, Run: func(ctx context.Context) error {
		select {
		case <-g:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
}

func (b *testBundle) open(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.gates[id])
}

// setup spawns a scheduler reporting to a probe that ignores JobStarted;
// setupWithStarts keeps them.
func setup(t *testing.T, opts ...adaptive.Option) *testBundle {
	t.Helper()
	b := setupWithStarts(t, opts...)
	b.probe.IgnoreMsg(func(msg any) bool { _, ok := msg.(*adaptive.JobStarted); return ok })
	return b
}

func setupWithStarts(t *testing.T, opts ...adaptive.Option) *testBundle {
	t.Helper()
	sys := testkit.NewSystem(t)
	b := &testBundle{sys: sys, probe: testkit.NewProbe(t, sys), clock: clock.NewManual(epoch), gates: map[string]chan struct{}{}}
	props, err := adaptive.Props(append([]adaptive.Option{
		adaptive.WithClock(b.clock), adaptive.WithListener(b.probe.PID()),
	}, opts...)...)
	require.NoError(t, err)
	b.pid = sys.Root.Spawn(props)
	t.Cleanup(func() { _ = sys.Root.StopFuture(b.pid).Wait() })
	return b
}

func TestScheduler(t *testing.T) {
	t.Parallel()
	within := testkit.Timeout()

	t.Run("QueuesBatchesAndRunsAtMostParallelism", func(t *testing.T) {
		t.Parallel()
		b := setup(t, adaptive.WithCustomPolicy(adaptive.Fixed(2)))
		b.probe.Send(b.pid, &adaptive.Batch{Jobs: []adaptive.Job{b.gated("a"), b.gated("b"), b.gated("c")}})
		q := testkit.ExpectMsgType[*adaptive.BatchQueued](b.probe, within)
		require.Equal(t, 3, q.Size)
		require.Equal(t, epoch, q.At)
		require.Equal(t, adaptive.Status{Queue: 1, InFlight: 2, Parallelism: 2}, q.Status)

		b.clock.Advance(5 * time.Second)
		b.open("b")
		done := testkit.ExpectMsgType[*adaptive.JobCompleted](b.probe, within)
		require.Equal(t, "b", done.ID)
		require.NoError(t, done.Err)
		require.Equal(t, 5*time.Second, done.Finished.Sub(done.Arrival), "end-to-end time from arrival")
		require.Equal(t, adaptive.Status{Queue: 0, InFlight: 2, Parallelism: 2, Completed: 1}, done.Status, "c started in b's slot")

		b.open("a")
		b.open("c")
		b.probe.ReceiveN(2, within)
		b.probe.Request(b.pid, &adaptive.GetStatus{})
		require.Equal(t, adaptive.Status{Parallelism: 2, Completed: 3}, testkit.ExpectMsgType[adaptive.Status](b.probe, within))
	})

	t.Run("AFailingOrPanickingJobIsReportedAndTheSchedulerGoesOn", func(t *testing.T) {
		t.Parallel()
		b := setup(t, adaptive.WithCustomPolicy(adaptive.Fixed(1)))
		boom := fmt.Errorf("boom")
		b.probe.Send(b.pid, adaptive.Batch{Jobs: []adaptive.Job{
			{ID: "panics", Run: func(context.Context) error { panic("oops") }},
			{ID: "fails", Run: func(context.Context) error { return boom }},
			{ID: "no-run"},
		}})
		testkit.ExpectMsgType[*adaptive.BatchQueued](b.probe, within)
		got := map[string]error{}
		for range 3 {
			c := testkit.ExpectMsgType[*adaptive.JobCompleted](b.probe, within)
			got[c.ID] = c.Err
		}
		require.ErrorIs(t, got["panics"], adaptive.ErrJobPanicked)
		require.ErrorContains(t, got["panics"], "oops")
		require.ErrorIs(t, got["fails"], boom)
		require.ErrorIs(t, got["no-run"], adaptive.ErrNoRun)
		b.probe.Request(b.pid, adaptive.GetStatus{})
		require.Equal(t, adaptive.Status{Parallelism: 1, Completed: 3, Failed: 3}, testkit.ExpectMsgType[adaptive.Status](b.probe, within))
	})

	t.Run("ReportsEachStartAfterTheEventThatCausedIt", func(t *testing.T) {
		t.Parallel()
		b := setupWithStarts(t, adaptive.WithFixed(1))
		b.probe.Send(b.pid, &adaptive.Batch{Jobs: []adaptive.Job{b.gated("a"), b.gated("b")}})
		testkit.ExpectMsgType[*adaptive.BatchQueued](b.probe, within)
		s := testkit.ExpectMsgType[*adaptive.JobStarted](b.probe, within)
		require.Equal(t, adaptive.JobStarted{ID: "a", Arrival: epoch, Started: epoch}, *s)
		b.clock.Advance(2 * time.Second)
		b.open("a")
		require.Equal(t, "a", testkit.ExpectMsgType[*adaptive.JobCompleted](b.probe, within).ID)
		s = testkit.ExpectMsgType[*adaptive.JobStarted](b.probe, within)
		require.Equal(t, adaptive.JobStarted{ID: "b", Arrival: epoch, Started: epoch.Add(2 * time.Second)}, *s, "b waited in the queue for a's slot")
		b.open("b")
		testkit.ExpectMsgType[*adaptive.JobCompleted](b.probe, within)
	})

	t.Run("UnboundedStartsEveryJobAtOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t, adaptive.WithUnbounded())
		jobs := make([]adaptive.Job, 50)
		for i := range jobs {
			jobs[i] = b.gated(fmt.Sprint(i))
		}
		b.probe.Send(b.pid, &adaptive.Batch{Jobs: jobs})
		q := testkit.ExpectMsgType[*adaptive.BatchQueued](b.probe, within)
		require.Equal(t, adaptive.Status{Queue: 0, InFlight: 50, Parallelism: adaptive.Unlimited}, q.Status)
		for i := range jobs {
			b.open(fmt.Sprint(i))
		}
		b.probe.ReceiveN(50, within)
	})

	t.Run("StoppingCancelsRunningJobs", func(t *testing.T) {
		t.Parallel()
		b := setup(t, adaptive.WithCustomPolicy(adaptive.Fixed(2)))
		b.probe.Send(b.pid, &adaptive.Batch{Jobs: []adaptive.Job{b.gated("a"), b.gated("b")}})
		testkit.ExpectMsgType[*adaptive.BatchQueued](b.probe, within)
		require.NoError(t, b.sys.Root.StopFuture(b.pid).Wait(), "stop returns once the jobs saw ctx cancelled")
	})

	t.Run("TheSeedPolicyMovesParallelism", func(t *testing.T) {
		t.Parallel()
		b := setup(t, adaptive.WithPolicy(adaptive.PolicySeed), adaptive.WithConfig(adaptive.Config{ExplorationRate: 0.9, Seed: 2}))
		levels := map[int]bool{}
		for i := range 30 {
			b.probe.Send(b.pid, &adaptive.Batch{Jobs: []adaptive.Job{{ID: fmt.Sprint(i), Run: func(context.Context) error { return nil }}}})
		}
		for range 60 {
			switch m := b.probe.ReceiveN(1, within)[0].(type) {
			case *adaptive.BatchQueued:
				levels[m.Status.Parallelism] = true
			case *adaptive.JobCompleted:
				levels[m.Status.Parallelism] = true
			}
		}
		require.Greater(t, len(levels), 1, "exploring at 0.9 visits several levels")
	})

	t.Run("LogsTheSeedsStatusLine", func(t *testing.T) {
		t.Parallel()
		var buf syncBuffer
		logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		b := setup(t, adaptive.WithCustomPolicy(adaptive.Fixed(1)), adaptive.WithLogger(logger))
		b.probe.Send(b.pid, &adaptive.Batch{Jobs: []adaptive.Job{b.gated("a"), b.gated("b")}})
		testkit.ExpectMsgType[*adaptive.BatchQueued](b.probe, within)
		require.Contains(t, buf.String(), `msg="Queue: 1, In Flight: 1, Parallelism: 1"`)
		require.Contains(t, buf.String(), "in_flight=1")
		require.Contains(t, buf.String(), "component=adaptive.scheduler")
	})
}

func TestStatusString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Queue: 91, In Flight: 4, Parallelism: 4", adaptive.Status{Queue: 91, InFlight: 4, Parallelism: 4}.String())
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
