package persistence_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/journal/journaltest"
)

// The lease tests run two activations of the set actor on one Memory
// journal, whose leases run on the bundle's manual clock. With ttl 300 ms a
// serving activation has two timers (its renewal every step and its
// deadline) and a waiting one has one (its next look at the lease, every
// step while the holder renews).
const (
	ttl  = 300 * time.Millisecond
	step = ttl / 3
)

var errCut = errors.New("the lease table cannot be reached (injected)")

// activation is one activation of the set actor, with its own view of the
// journal (so one's lease calls can fail and not the other's).
type activation struct {
	pid    *actor.PID
	faulty *journaltest.Faulty
	track  *tracking
	events *testkit.Probe // told "recovered"
}

// activate spawns an activation with the bundle's options and opts.
func (b *bundle) activate(t *testing.T, opts ...persistence.Option) *activation {
	t.Helper()
	return b.activateWith(t, "", nil, opts...)
}

// activateWith spawns an activation named name (generated if empty) whose
// Handler is wrap(actor) (the actor itself if wrap is nil).
func (b *bundle) activateWith(t *testing.T, name string, wrap func(*setActor) persistence.Handler, opts ...persistence.Option) *activation {
	t.Helper()
	f := journaltest.NewFaulty(b.mem)
	tr := &tracking{Journal: f}
	rt, err := persistence.New(tr, stream, append(append([]persistence.Option{}, b.opts...), opts...)...)
	require.NoError(t, err)
	ev := testkit.NewProbe(t, b.sys)
	a := &setActor{rt: rt, track: tr, violations: &b.violations, recovered: ev.PID(), resets: &b.resets}
	if wrap != nil {
		a.handler = wrap(a)
	}
	props := actor.PropsFromProducer(func() actor.Actor { return a })
	var pid *actor.PID
	if name == "" {
		pid = b.sys.Root.Spawn(props)
	} else {
		pid, err = b.sys.Root.SpawnNamed(props, name)
		require.NoError(t, err)
	}
	return &activation{pid: pid, faulty: f, track: tr, events: ev}
}

func (a *activation) holds(st persistence.LeaseState) bool {
	return strings.HasPrefix(st.Holder, a.pid.GetAddress()+"/"+a.pid.GetId()+"#")
}

// observe asks for the lease as an observer: refused while another's lease
// is live, it changes nothing then and tells who holds it and for how long.
// (A free lease is granted to the observer, which the calling test then
// sees as a failure.)
func (b *bundle) observe() (persistence.LeaseState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer cancel()
	return b.mem.Lease(ctx, stream, "observer", time.Hour)
}

// requireHeld requires the lease to be live and returns it.
func (b *bundle) requireHeld(t *testing.T) persistence.LeaseState {
	t.Helper()
	st, err := b.observe()
	require.ErrorIs(t, err, persistence.ErrLeaseHeld, "the lease is held")
	return st
}

// waitRenewed waits until a holds the lease with the whole ttl left (it
// renewed at the clock's present time) and its keeper has armed the next
// renewal, a step from now. The journal shows the renewal before the keeper
// has armed its next tick: a clock advanced in between would leave that
// tick due at once on a manual clock, which fires only at the next advance
// (a loaded run of BusyMailboxKeepsTheLease failed so).
func (b *bundle) waitRenewed(t *testing.T, a *activation) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, err := b.observe()
		return errors.Is(err, persistence.ErrLeaseHeld) && a.holds(st) && st.Remaining == ttl
	}, testkit.Timeout(), time.Millisecond, "the holder renews its lease")
	require.Eventually(t, func() bool {
		next := b.clk.Now().Add(step)
		return slices.ContainsFunc(b.clk.NextDue(), next.Equal)
	}, testkit.Timeout(), time.Millisecond, "the keeper arms its next renewal")
}

// advance moves the manual clock by d once at least n timers are armed
// (every activation has re-armed after the previous step).
func (b *bundle) advance(t *testing.T, n int, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	timer := time.AfterFunc(testkit.Timeout(), func() { close(done) })
	defer timer.Stop()
	require.True(t, b.clk.WaitForPending(done, n), "fewer than %d timers armed (pending %d)", n, b.clk.Pending())
	b.clk.Advance(d)
}

// waitArmed waits until at least n timers are armed.
func (b *bundle) waitArmed(t *testing.T, n int) {
	t.Helper()
	done := make(chan struct{})
	timer := time.AfterFunc(testkit.Timeout(), func() { close(done) })
	defer timer.Stop()
	require.True(t, b.clk.WaitForPending(done, n), "fewer than %d timers armed (pending %d)", n, b.clk.Pending())
}

func (b *bundle) phase(t *testing.T, pid *actor.PID) string {
	t.Helper()
	res, err := b.sys.Root.RequestFuture(pid, &phaseQuery{}, testkit.Timeout()).Result()
	require.NoError(t, err)
	return res.(*wrapperspb.StringValue).GetValue()
}

// logRecorder keeps the level and message of every record.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string // guarded by mu
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Level.String()+" "+r.Message)
	return nil
}

func (l *logRecorder) count(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if strings.HasPrefix(m, prefix) {
			n++
		}
	}
	return n
}

// slowReset blocks the first Reset (the first recovery) until until is
// closed, as a long replay would.
type slowReset struct {
	*setActor
	once           sync.Once
	entered, until chan struct{}
}

func (s *slowReset) Reset(snap *persistence.Snapshot) error {
	s.once.Do(func() {
		close(s.entered)
		<-s.until
	})
	return s.setActor.Reset(snap)
}

func TestRuntimeLease(t *testing.T) {
	t.Parallel()

	t.Run("SecondWaitsWhileTheFirstRenews", func(t *testing.T) {
		t.Parallel()
		b := setup(t, persistence.WithLease(ttl))
		first := b.activate(t)
		first.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		logs := &logRecorder{}
		second := b.activate(t, persistence.WithLogger(slog.New(logs)))
		require.Equal(t, "waiting for lease", b.phase(t, second.pid))
		b.client.Request(second.pid, &add{key: "x"})
		b.client.ExpectMsg(wrapperspb.String("unavailable"), testkit.Timeout())
		for range 10 { // a second: more than three ttls
			b.advance(t, 3, step)
			b.waitRenewed(t, first)
		}
		b.add(first.pid, "a")
		b.client.ExpectMsg(wrapperspb.Int64(1), testkit.Timeout()) // not fenced: the second took no epoch
		require.Equal(t, "waiting for lease", b.phase(t, second.pid))
		second.events.ExpectNoMsg(10 * time.Millisecond)
		require.GreaterOrEqual(t, second.track.leases.Load(), int64(10), "the waiting one re-reads the lease every step")
		require.Equal(t, 1, logs.count("INFO another activation holds the lease"), "the wait is logged once")
	})

	t.Run("StrayYieldsAfterTheMaxWait", func(t *testing.T) {
		t.Parallel()
		// The first keeps renewing; the second, allowed 3 ttls of waiting,
		// stops itself once they have passed, and took no epoch.
		b := setup(t, persistence.WithLease(ttl), persistence.WithLeaseMaxWait(3*ttl))
		first := b.activate(t)
		first.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		second := b.activate(t)
		b.client.Watch(second.pid)
		// Timers: the first's renewal and deadline, the second's next look.
		for range 8 { // 800 ms: still within 3 ttls of waiting
			b.advance(t, 3, step)
			b.waitRenewed(t, first)
		}
		require.Equal(t, "waiting for lease", b.phase(t, second.pid))
		b.advance(t, 3, step) // 900 ms: the second's look finds it has waited 3 ttls
		b.waitRenewed(t, first)
		b.client.ExpectMsg(&actor.Terminated{Who: second.pid}, testkit.Timeout())
		b.add(first.pid, "a")
		b.client.ExpectMsg(wrapperspb.Int64(1), testkit.Timeout()) // not fenced: the stray took no epoch
		second.events.ExpectNoMsg(10 * time.Millisecond)
	})

	t.Run("AGrantAnsweredAfterItsDeadlineTakesNoEpoch", func(t *testing.T) {
		// The simulator's seed 8355 (persistence/core's Session had the
		// same gap): the take is granted, but its answer comes back only
		// after the lease it granted could have lapsed, when another
		// activation may hold it. Taking an epoch then would fence that
		// one; the runtime takes the lease again first.
		t.Parallel()
		b := setup(t, persistence.WithLease(ttl))
		f := journaltest.NewFaulty(b.mem)
		var once sync.Once
		tr := &tracking{Journal: f}
		var epochsAtSecondTake atomic.Int64
		epochsAtSecondTake.Store(-1)
		tr.afterGrant = func() {
			if tr.granted.Load() == 2 {
				epochsAtSecondTake.Store(tr.epochs.Load())
			}
			once.Do(func() { b.clk.Advance(ttl) }) // the first answer is a whole ttl late
		}
		rt, err := persistence.New(tr, stream, b.opts...)
		require.NoError(t, err)
		ev := testkit.NewProbe(t, b.sys)
		a := &setActor{rt: rt, track: tr, violations: &b.violations, recovered: ev.PID(), resets: &b.resets}
		b.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }))
		b.advance(t, 1, step) // the retry after the late grant (a probe, then recovery)
		ev.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		require.Equal(t, int64(0), epochsAtSecondTake.Load(), "no epoch was taken on the late grant")
		require.Equal(t, int64(1), tr.epochs.Load())
	})

	t.Run("GracefulStopHandsOverAtOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t, persistence.WithLease(ttl))
		first := b.activate(t)
		first.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		second := b.activate(t)
		b.advance(t, 3, step) // T0+100: the first renews until T0+400
		b.waitRenewed(t, first)
		b.add(first.pid, "a")
		b.client.ExpectMsg(wrapperspb.Int64(1), testkit.Timeout())
		require.NoError(t, b.sys.Root.StopFuture(first.pid).Wait())
		b.advance(t, 1, step) // T0+200: the second's next look
		second.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		require.Equal(t, []string{"a"}, b.keys(t, second.pid))
		require.True(t, second.holds(b.requireHeld(t)))
	})

	t.Run("ReleaseFollowsTheAppendsInFlight", func(t *testing.T) {
		t.Parallel()
		b := setup(t, persistence.WithLease(ttl))
		first := b.activate(t)
		first.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		b.client.Watch(first.pid)
		first.faulty.HoldWrites()
		b.add(first.pid, "a")
		require.Eventually(t, func() bool { return first.faulty.HeldWrites() == 1 }, testkit.Timeout(), time.Millisecond)
		b.sys.Root.Stop(first.pid)
		b.client.ExpectNoMsg(100 * time.Millisecond) // stopping: waits for its append
		require.True(t, first.holds(b.requireHeld(t)), "the lease is kept while an append is in flight")
		first.faulty.ReleaseWrites()
		got := b.client.ReceiveN(2, testkit.Timeout()) // the ack and Terminated, in either order
		require.Len(t, got, 2)
		require.Eventually(t, func() bool {
			st, err := b.observe() // granted once the first released
			return err == nil && st.Holder == "observer"
		}, testkit.Timeout(), time.Millisecond, "released after the append")
	})

	t.Run("HolderThatCannotRenewStopsAfterItsDeadlineAndTheSecondServes", func(t *testing.T) {
		t.Parallel()
		b := setup(t, persistence.WithLease(ttl))
		first := b.activate(t) // T0: holds the lease until T0+300
		first.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		b.client.Watch(first.pid)
		second := b.activate(t)
		first.faulty.FailLeases(errCut)
		b.advance(t, 3, step) // T0+100: the renewal fails
		b.advance(t, 3, step) // T0+200: again
		st := b.requireHeld(t)
		require.True(t, first.holds(st))
		require.Equal(t, step, st.Remaining, "not renewed since T0")
		require.Equal(t, "running", b.phase(t, first.pid), "serves until its deadline")
		b.add(first.pid, "a")
		b.client.ExpectMsg(wrapperspb.Int64(1), testkit.Timeout())
		require.Equal(t, "waiting for lease", b.phase(t, second.pid))
		b.advance(t, 3, step) // T0+300: the deadline, and the lease lapses
		// The second takes it; the first's last-chance renewal fails too.
		second.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		require.Equal(t, []string{"a"}, b.keys(t, second.pid))
		// A question behind the first's expiry in its mailbox: once it is
		// answered, the last chance's deadline (T0+400) is armed. Without
		// it a loaded machine advanced the clock on other timers first, and
		// that deadline fell at T0+500, which never came.
		require.Equal(t, "running", b.phase(t, first.pid), "on its last chance")
		b.client.Request(first.pid, &add{key: "b"})
		// But it does not serve.
		b.client.ExpectMsg(wrapperspb.String("unavailable"), testkit.Timeout())
		b.advance(t, 4, step) // T0+400: the last chance is over
		b.client.ExpectTerminated(first.pid, testkit.Timeout())
	})

	t.Run("PausedHolderTakesTheLeaseBackAndRecovers", func(t *testing.T) {
		t.Parallel()
		// As a process stopped past its deadline: no renewal lands for a
		// ttl, then the journal answers again. Nobody took the lapsed
		// lease, so the last-chance renewal gets it back; but it was
		// answered after the deadline, when another activation could
		// have served, so the runtime recovers (a new epoch) before it
		// serves again: no stop.
		b := setup(t, persistence.WithLease(ttl))
		first := b.activate(t)
		first.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		b.client.Watch(first.pid)
		// Its timers: the keeper's next renewal and the lease's deadline.
		first.faulty.FailLeases(errCut)
		b.advance(t, 2, step) // T0+100
		b.advance(t, 2, step) // T0+200
		b.waitArmed(t, 2)     // the renewal of T0+200 has failed and armed the next
		first.faulty.FailLeases(nil)
		granted := first.track.granted.Load()
		b.advance(t, 2, step) // T0+300: the deadline has passed; renew at once
		// (Not observed until then: an observer would take a lapsed lease.)
		require.Eventually(t, func() bool { return first.track.granted.Load() > granted },
			testkit.Timeout(), time.Millisecond, "renewed at the last chance")
		first.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout()) // again
		require.True(t, first.holds(b.requireHeld(t)))
		b.client.ExpectNoMsg(20 * time.Millisecond) // not stopped
		require.Equal(t, "running", b.phase(t, first.pid))
		b.add(first.pid, "a")
		b.client.ExpectMsg(wrapperspb.Int64(1), testkit.Timeout())
	})

	t.Run("DeadHolderIsWaitedOutForItsTTL", func(t *testing.T) {
		t.Parallel()
		b := setup(t, persistence.WithLease(ttl))
		first := b.activate(t) // T0: holds the lease until T0+300
		first.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		second := b.activate(t)
		first.faulty.FailLeases(errCut) // it dies without releasing
		require.NoError(t, b.sys.Root.StopFuture(first.pid).Wait())
		b.advance(t, 1, step) // T0+100
		b.advance(t, 1, step) // T0+200
		require.Equal(t, "waiting for lease", b.phase(t, second.pid))
		b.advance(t, 1, step) // T0+300: lapsed
		second.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
	})

	t.Run("RefusedRenewalStops", func(t *testing.T) {
		t.Parallel()
		b := setup(t, persistence.WithLease(ttl))
		first := b.activate(t)
		first.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		b.client.Watch(first.pid)
		// As if the first had paused past its lease and another took it.
		ctx := t.Context()
		require.NoError(t, b.mem.ReleaseLease(ctx, stream, b.requireHeld(t).Holder))
		_, err := b.mem.Lease(ctx, stream, "usurper", time.Hour)
		require.NoError(t, err)
		b.advance(t, 2, step) // T0+100, long before its deadline: the renewal is refused
		b.client.ExpectTerminated(first.pid, testkit.Timeout())
		require.Equal(t, "usurper", b.requireHeld(t).Holder, "it did not release another's lease")
	})

	t.Run("GuardFalseWhileServingStopsAndReleases", func(t *testing.T) {
		t.Parallel()
		b := setup(t, persistence.WithLease(ttl))
		var cut atomic.Bool
		logs := &logRecorder{}
		first := b.activate(t, persistence.WithLeaseGuard(func() bool { return !cut.Load() }), persistence.WithLogger(slog.New(logs)))
		first.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout()) // T0: lease until T0+300
		second := b.activate(t)
		b.client.Watch(first.pid)
		b.add(first.pid, "a")
		b.client.ExpectMsg(wrapperspb.Int64(1), testkit.Timeout())
		cut.Store(true)
		b.advance(t, 3, step) // T0+100: the guard is asked before renewing
		b.client.ExpectTerminated(first.pid, testkit.Timeout())
		require.Equal(t, 1, logs.count("WARN the lease guard reports this node cut off"))
		b.advance(t, 1, step) // T0+200 at the latest, before the lease would lapse
		second.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		require.Equal(t, []string{"a"}, b.keys(t, second.pid))
	})

	t.Run("GuardFalseNeverTakesTheLease", func(t *testing.T) {
		t.Parallel()
		b := setup(t, persistence.WithLease(ttl))
		var ok atomic.Bool
		first := b.activate(t, persistence.WithLeaseGuard(ok.Load))
		for range 3 {
			require.Equal(t, "waiting for lease", b.phase(t, first.pid))
			b.advance(t, 1, step) // the guard is asked again
		}
		require.Equal(t, "waiting for lease", b.phase(t, first.pid))
		require.Zero(t, first.track.leases.Load(), "no Lease call while the guard says no")
		ok.Store(true)
		b.advance(t, 1, step)
		first.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		require.True(t, first.holds(b.requireHeld(t)))
	})

	t.Run("LongRecoveryKeepsTheLease", func(t *testing.T) {
		t.Parallel()
		b := setup(t, persistence.WithLease(ttl))
		entered, until := make(chan struct{}), make(chan struct{})
		first := b.activateWith(t, "", func(a *setActor) persistence.Handler {
			return &slowReset{setActor: a, entered: entered, until: until}
		})
		select { // the lease and the epoch are taken; the replay is slow
		case <-entered:
		case <-time.After(testkit.Timeout()):
			t.Fatal("recovery did not start")
		}
		for range 6 { // twice the ttl
			b.advance(t, 1, step)
			b.waitRenewed(t, first)
		}
		second := b.activate(t)
		require.Equal(t, "waiting for lease", b.phase(t, second.pid))
		close(until)
		first.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		b.add(first.pid, "a")
		b.client.ExpectMsg(wrapperspb.Int64(1), testkit.Timeout())
	})

	t.Run("BusyMailboxKeepsTheLease", func(t *testing.T) {
		t.Parallel()
		b := setup(t, persistence.WithLease(ttl))
		first := b.activate(t)
		first.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		entered, until := make(chan struct{}), make(chan struct{})
		b.client.Send(first.pid, &block{entered: entered, until: until})
		<-entered // the actor is busy for twice the ttl
		for range 6 {
			b.advance(t, 1, step)
			b.waitRenewed(t, first) // renewed without the actor
		}
		close(until)
		require.Equal(t, "running", b.phase(t, first.pid), "its deadline moved while it was busy")
		b.add(first.pid, "a")
		b.client.ExpectMsg(wrapperspb.Int64(1), testkit.Timeout())
	})

	t.Run("ReusedPIDIsAnotherHolder", func(t *testing.T) {
		t.Parallel()
		b := setup(t, persistence.WithLease(ttl))
		first := b.activateWith(t, "set", nil) // T0: holds the lease until T0+300
		first.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		first.faulty.FailLeases(errCut) // it dies without releasing
		require.NoError(t, b.sys.Root.StopFuture(first.pid).Wait())
		again := b.activateWith(t, "set", nil)
		require.Equal(t, first.pid.String(), again.pid.String())
		b.advance(t, 1, step) // T0+100
		b.advance(t, 1, step) // T0+200
		require.Equal(t, "waiting for lease", b.phase(t, again.pid), "the dead one's lease is not its own")
		b.advance(t, 1, step) // T0+300
		again.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
	})

	t.Run("OffByDefault", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first := b.activate(t)
		first.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		second := b.activate(t) // fences the first, as without leases
		second.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		require.Zero(t, first.track.leases.Load()+second.track.leases.Load())
		_, err := b.observe()
		require.NoError(t, err, "nobody holds the lease")
	})
}
