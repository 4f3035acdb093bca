package testkit_test

import (
	"log/slog"
	"strings"
	"testing"
	"testing/quick"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/messages"
)

func TestWatchExpectTerminated(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	p := testkit.NewProbe(t, sys)
	victim := sys.Root.Spawn(echoProps())
	p.Watch(victim)
	sys.Root.Stop(victim)
	term := p.ExpectTerminated(victim, testkit.Timeout())
	require.True(t, term.GetWho().Equal(victim))

	// Unwatched actors stop silently.
	other := sys.Root.Spawn(echoProps())
	p.Watch(other)
	p.Unwatch(other)
	sys.Root.Stop(other)
	p.ExpectNoMsg(50 * time.Millisecond)
}

func TestIgnoreMsg(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	p := testkit.NewProbe(t, sys)
	p.IgnoreMsg(func(m any) bool { s, ok := m.(string); return ok && strings.HasPrefix(s, "heartbeat") })
	for _, m := range []string{"heartbeat 1", "work", "heartbeat 2", "done"} {
		sys.Root.Send(p.PID(), m)
	}
	require.Equal(t, []any{"work", "done"}, p.ReceiveN(2, testkit.Timeout()))
	p.IgnoreMsg(nil)
	sys.Root.Send(p.PID(), "heartbeat 3")
	p.ExpectMsg("heartbeat 3", testkit.Timeout())
}

func TestSetAutoReply(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	worker := testkit.NewProbe(t, sys) // plays a worker that acks every Work
	worker.SetAutoReply(func(m any, _ *actor.PID) any {
		if w, ok := m.(*messages.Work); ok {
			return &messages.Ack{WorkId: w.GetWorkId()}
		}
		return nil
	})
	master := testkit.NewProbe(t, sys)
	master.Request(worker.PID(), &messages.Work{WorkId: "a"})
	master.ExpectMsg(&messages.Ack{WorkId: "a"}, testkit.Timeout())
	require.True(t, master.LastSender().Equal(worker.PID()))
	// The worker still records what it got.
	testkit.ExpectMsgType[*messages.Work](worker, testkit.Timeout())
	// No reply for messages the function answers with nil.
	master.Request(worker.PID(), "ping")
	master.ExpectNoMsg(50 * time.Millisecond)
}

func TestWithinNestedAndRemaining(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	p := testkit.NewProbe(t, sys)
	require.Equal(t, testkit.Timeout(), p.Remaining(), "outside Within: the default timeout")
	p.Within(0, time.Hour, func() {
		require.Greater(t, p.Remaining(), 59*time.Minute)
		p.Within(0, 2*time.Hour, func() {
			require.LessOrEqual(t, p.Remaining(), time.Hour, "a nested block cannot outlast its parent")
		})
		p.Within(0, 100*time.Millisecond, func() {
			require.LessOrEqual(t, p.Remaining(), 100*time.Millisecond)
		})
		require.Greater(t, p.Remaining(), 59*time.Minute, "the parent's end is restored")
	})
}

func TestNewSystemLogsToTB(t *testing.T) {
	t.Parallel()
	rec := newRecordingTB(t)
	sys := testkit.NewSystem(rec)
	sys.Logger().Info("chatty", slog.Int("n", 1))
	sys.Logger().WithGroup("g").Warn("careful", slog.String("worker_id", "w1"))
	logs := rec.logged()
	require.Len(t, logs, 1, "Info is below the default level")
	require.Contains(t, logs[0], "WARN careful")
	require.Contains(t, logs[0], "system="+sys.ID)
	require.Contains(t, logs[0], "g.worker_id=w1")

	quiet := testkit.NewSystem(rec, testkit.WithDiscardLogs())
	quiet.Logger().Error("dropped")
	require.Len(t, rec.logged(), 1)

	verbose := testkit.NewSystem(rec, testkit.WithLogLevel(slog.LevelDebug))
	verbose.Logger().Debug("shown")
	logs = rec.logged()
	require.Contains(t, logs[len(logs)-1], "DEBUG shown system="+verbose.ID)
}

func TestTimeoutEnv(t *testing.T) {
	// t.Setenv forbids t.Parallel.
	tests := []struct {
		name     string
		ci, over string
		want     time.Duration
	}{
		{name: "local", want: testkit.DefaultTimeout},
		{name: "ci", ci: "true", want: testkit.DefaultCITimeout},
		{name: "ci false", ci: "false", want: testkit.DefaultTimeout},
		{name: "override", ci: "true", over: "42s", want: 42 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			t.Setenv(testkit.TimeoutEnv, tt.over)
			require.Equal(t, tt.want, testkit.Timeout())
		})
	}
	t.Run("bad override", func(t *testing.T) {
		t.Setenv(testkit.TimeoutEnv, "soon")
		require.PanicsWithValue(t,
			`testkit: FOREMAN_TEST_TIMEOUT="soon" is not a positive Go duration; set it like FOREMAN_TEST_TIMEOUT=20s or unset it`,
			func() { testkit.Timeout() })
	})
}

// TestProbeOrderProperty: whatever messages are sent, ReceiveN returns them
// in sending order and ExpectMsgAllOf accepts them in any order.
func TestProbeOrderProperty(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	p := testkit.NewProbe(t, sys)
	prop := func(ms []int16) bool {
		if len(ms) > 50 {
			ms = ms[:50]
		}
		want := make([]any, len(ms))
		for i, m := range ms {
			want[i] = m
			sys.Root.Send(p.PID(), m)
		}
		got := p.ReceiveN(len(ms), testkit.Timeout())
		for i, m := range ms {
			sys.Root.Send(p.PID(), m)
			want[len(ms)-1-i] = m // reversed
		}
		p.ExpectMsgAllOf(testkit.Timeout(), want...)
		return len(got) == len(ms) && len(p.Queued()) == 0 && equalInOrder(got, ms)
	}
	require.NoError(t, quick.Check(prop, &quick.Config{MaxCount: 50}))
}

func equalInOrder(got []any, ms []int16) bool {
	for i, m := range ms {
		if got[i] != m {
			return false
		}
	}
	return true
}

// FuzzEqual: protobuf messages compare by value, others by DeepEqual, and
// a protobuf message never equals a non-protobuf value.
func FuzzEqual(f *testing.F) {
	f.Add("w1", "w1")
	f.Add("w1", "w2")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, a, b string) {
		pa, pb := &messages.Ack{WorkId: a}, &messages.Ack{WorkId: b}
		require.Equal(t, a == b, testkit.Equal(pa, pb))
		require.True(t, testkit.Equal(pa, &messages.Ack{WorkId: a}))
		require.Equal(t, a == b, testkit.Equal(a, b))
		require.False(t, testkit.Equal(pa, a))
		require.False(t, testkit.Equal(a, pa))
		require.Equal(t, testkit.Equal(pa, pb), testkit.Equal(pb, pa))
	})
}

// TestLoggerQuietAfterTest: actors that log after their test has finished
// must not make the testing package panic ("Log in goroutine after Test
// has completed").
func TestLoggerQuietAfterTest(t *testing.T) {
	t.Parallel()
	var sys *actor.ActorSystem
	var rec *recordingTB
	t.Run("inner", func(t *testing.T) {
		rec = newRecordingTB(t)
		sys = testkit.NewSystem(rec)
		sys.Logger().Warn("during")
	})
	before := len(rec.logged())
	require.NotPanics(t, func() { sys.Logger().Warn("after the test") })
	require.Len(t, rec.logged(), before)
}
