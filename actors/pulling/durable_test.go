package pulling_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/pulling"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

func openSQLite(t *testing.T) persistence.Journal {
	t.Helper()
	j, err := journal.OpenSQLite(filepath.Join(t.TempDir(), "journal.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, j.Close()) })
	return j
}

// tally counts how often each item was worked on.
type tally struct {
	mu    sync.Mutex
	seen  map[int]int
	total atomic.Int64
}

func newTally() *tally { return &tally{seen: map[int]int{}} }

func (tl *tally) do(_ context.Context, item int) error {
	tl.mu.Lock()
	tl.seen[item]++
	tl.mu.Unlock()
	tl.total.Add(1)
	time.Sleep(100 * time.Microsecond)
	return nil
}

func (tl *tally) check(t *testing.T, n int) (resent int) {
	t.Helper()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for i := range n {
		require.Positive(t, tl.seen[i], "item %d was never worked on", i)
		resent += tl.seen[i] - 1
	}
	require.Len(t, tl.seen, n)
	return resent
}

func ask(t *testing.T, sys *actor.ActorSystem, pid *actor.PID, msg any) *messages.PullingProgress {
	t.Helper()
	// A new activation answers once it has recovered from the journal:
	// as slow as the Epic's pace on a loaded machine (see stallAfter).
	res, err := sys.Root.RequestFuture(pid, msg, stallAfter()).Result()
	require.NoError(t, err)
	p, ok := res.(*messages.PullingProgress)
	require.True(t, ok, "answer %T", res)
	return p
}

// stallAfter is how long an Epic may make no progress before a wait fails.
// The waits below have no overall deadline: an Epic's pace is its
// journal's (a commit per confirmed window), and a loaded machine's
// commits take tens of milliseconds, so 3000 items can take longer than
// any fixed bound; a master that is stuck stops moving, and that fails.
func stallAfter() time.Duration { return 2 * testkit.Timeout() }

// waitMoving waits until count() reaches want, failing when it has not
// grown for stallAfter.
func waitMoving(t *testing.T, what string, count func() int64, want int64) {
	t.Helper()
	last, moved := count(), time.Now()
	for last < want {
		time.Sleep(time.Millisecond)
		if now := count(); now != last {
			last, moved = now, time.Now()
			continue
		}
		require.Less(t, time.Since(moved), stallAfter(), "%s: stuck at %d of %d for %v", what, last, want, stallAfter())
	}
}

// waitDone waits until the Epic is done, failing when its finished count
// has not grown for stallAfter.
func waitDone(t *testing.T, sys *actor.ActorSystem, pid func() *actor.PID) *messages.PullingProgress {
	t.Helper()
	var last uint64
	moved := time.Now()
	for {
		p := ask(t, sys, pid(), &messages.PullingGetProgress{})
		if p.GetDone() {
			return p
		}
		if p.GetFinished() != last {
			last, moved = p.GetFinished(), time.Now()
		}
		require.Less(t, time.Since(moved), stallAfter(), "the epic made no progress for %v: %v", stallAfter(), p)
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDurableMasterResumesAfterStop is the durability test on
// SQLite: the master's activation is stopped mid-Epic; the next activation
// resumes from the journaled position, and only items the workers held
// (their windows) are worked on twice.
func TestDurableMasterResumesAfterStop(t *testing.T) {
	t.Parallel()
	const n, workers, window = 3000, 3, 2
	j := openSQLite(t)
	sys := testkit.NewSystem(t, testkit.WithDiscardLogs())
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	var opens atomic.Int32
	open := func(_ context.Context, name string) (pulling.SeekEpic[int], error) {
		opens.Add(1)
		return pulling.SliceSeekEpic(items), nil
	}
	props, err := pulling.DurableMasterProps(j, open, pulling.WithEpicName("numbers"), pulling.WithBatchSize(100))
	require.NoError(t, err)

	var current atomic.Pointer[actor.PID]
	current.Store(sys.Root.Spawn(props))
	r := route.Resolver(func(context.Context) (*actor.PID, error) { return current.Load(), nil })
	tl := newTally()
	for range workers {
		wp, err := pulling.RouteWorkerProps(r, tl.do, pulling.WithWindow(window), pulling.WithRegisterInterval(50*time.Millisecond))
		require.NoError(t, err)
		sys.Root.Spawn(wp)
	}

	p := ask(t, sys, current.Load(), &messages.PullingStartEpic{Name: "numbers"})
	require.True(t, p.GetRunning())
	require.Empty(t, p.GetError())
	again := ask(t, sys, current.Load(), &messages.PullingStartEpic{Name: "numbers"})
	require.True(t, again.GetRunning(), "a second start is answered, and changes nothing")

	waitMoving(t, "items worked on", tl.total.Load, n/3)
	require.NoError(t, sys.Root.StopFuture(current.Load()).Wait())
	stoppedAt := tl.total.Load()
	require.Less(t, stoppedAt, int64(n), "stopped mid-Epic")
	current.Store(sys.Root.Spawn(props)) // resumes by itself: the Epic has begun

	final := waitDone(t, sys, current.Load)
	require.Empty(t, final.GetError())
	require.Equal(t, uint64(n), final.GetFinished())
	require.Equal(t, int32(2), opens.Load(), "each activation opened the Epic once")
	resent := tl.check(t, n)
	require.LessOrEqual(t, resent, workers*window, "only the items the workers held come round again")
	t.Logf("stopped after %d items, resumed; %d worked on twice (bound %d)", stoppedAt, resent, workers*window)

	// The Epic is done: a start answers so, a new activation does nothing.
	require.NoError(t, sys.Root.StopFuture(current.Load()).Wait())
	current.Store(sys.Root.Spawn(props))
	done := ask(t, sys, current.Load(), &messages.PullingStartEpic{Name: "numbers"})
	require.True(t, done.GetDone())
	require.Equal(t, uint64(n), done.GetFinished())
	require.Equal(t, int32(2), opens.Load(), "a finished Epic is not opened again")
}

func TestDurableMasterWrongName(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t, testkit.WithDiscardLogs())
	props, err := pulling.DurableMasterProps(openSQLite(t), func(context.Context, string) (pulling.SeekEpic[int], error) {
		return pulling.SliceSeekEpic([]int{1}), nil
	}, pulling.WithEpicName("a"))
	require.NoError(t, err)
	p := ask(t, sys, sys.Root.Spawn(props), &messages.PullingStartEpic{Name: "b"})
	require.Contains(t, p.GetError(), `start of epic "b" sent to the master of "a"`)
	require.False(t, p.GetRunning())
}

func TestDurableMasterPropsRejectsBadArguments(t *testing.T) {
	t.Parallel()
	j := journal.NewMemory()
	t.Cleanup(func() { _ = j.Close() })
	open := func(context.Context, string) (pulling.SeekEpic[int], error) { return nil, nil }
	tests := []struct {
		name string
		make func() error
	}{
		{"nil journal", func() error { _, err := pulling.DurableMasterProps(nil, open, pulling.WithEpicName("x")); return err }},
		{"nil opener", func() error {
			_, err := pulling.DurableMasterProps[int](j, nil, pulling.WithEpicName("x"))
			return err
		}},
		{"no name", func() error { _, err := pulling.DurableMasterProps(j, open); return err }},
		{"empty name", func() error { _, err := pulling.DurableMasterProps(j, open, pulling.WithEpicName("")); return err }},
		{"nil name func", func() error { _, err := pulling.DurableMasterProps(j, open, pulling.WithEpicNameFrom(nil)); return err }},
		{"bad register interval", func() error {
			_, err := pulling.RouteWorkerProps(route.Fixed(actor.NewPID("a", "b")), func(context.Context, int) error { return nil },
				pulling.WithRegisterInterval(0))
			return err
		}},
		{"empty route", func() error {
			_, err := pulling.RouteWorkerProps(route.Master{}, func(context.Context, int) error { return nil })
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.ErrorIs(t, tt.make(), pulling.ErrInvalidConfig)
		})
	}
}

// flakyJournal fails the next append when failNext is set.
type flakyJournal struct {
	persistence.Journal
	failNext atomic.Bool
}

var errDiskFull = errors.New("disk full")

func (j *flakyJournal) AppendAsync(stream string, epoch int64, events []persistence.Event, done func(error)) {
	if j.failNext.CompareAndSwap(true, false) {
		go done(errDiskFull)
		return
	}
	j.Journal.AppendAsync(stream, epoch, events, done)
}

// TestDurableMasterStopsAfterAFailedWrite: a confirmation that could not be
// journaled makes the activation stop (its State is ahead of the journal);
// the next activation resumes and every item is still worked on.
func TestDurableMasterStopsAfterAFailedWrite(t *testing.T) {
	t.Parallel()
	const n = 500
	j := &flakyJournal{Journal: openSQLite(t)}
	sys := testkit.NewSystem(t, testkit.WithDiscardLogs())
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	open := func(context.Context, string) (pulling.SeekEpic[int], error) { return pulling.SliceSeekEpic(items), nil }
	props, err := pulling.DurableMasterProps(j, open, pulling.WithEpicName("flaky"), pulling.WithBatchSize(50))
	require.NoError(t, err)
	var current atomic.Pointer[actor.PID]
	current.Store(sys.Root.Spawn(props))
	tl := newTally()
	wp, err := pulling.RouteWorkerProps(route.Resolver(func(context.Context) (*actor.PID, error) { return current.Load(), nil }),
		tl.do, pulling.WithWindow(2), pulling.WithRegisterInterval(50*time.Millisecond))
	require.NoError(t, err)
	sys.Root.Spawn(wp)
	probe := testkit.NewProbe(t, sys)
	probe.Watch(current.Load())
	ask(t, sys, current.Load(), &messages.PullingStartEpic{Name: "flaky"})

	waitMoving(t, "items worked on", tl.total.Load, n/4)
	j.failNext.Store(true)
	probe.ExpectTerminated(current.Load(), stallAfter())
	current.Store(sys.Root.Spawn(props))
	final := waitDone(t, sys, current.Load)
	require.Equal(t, uint64(n), final.GetFinished())
	require.LessOrEqual(t, tl.check(t, n), 2+2, "the held items and the unjournaled confirmation's items come round again")
}
