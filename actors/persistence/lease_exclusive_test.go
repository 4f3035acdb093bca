package persistence_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/journal/journaltest"
)

// fastClock is the journal's clock in the exclusivity test: it runs 1%
// faster than the runtimes' manual clock (10,000 ppm, twenty times NTP's
// slew limit), so the journal lets a lease lapse a little before the ttl
// has passed on the holder's clock.
type fastClock struct {
	*clock.Manual
	base time.Time
}

func (f fastClock) Now() time.Time {
	d := f.Manual.Now().Sub(f.base)
	return f.base.Add(d + d/100)
}

func (f fastClock) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

// slowLeases delays every Lease call by delay on the manual clock before
// it reaches the journal, as a slow network or a stalled database would:
// the journal decides at the later time, the caller timed its lease from
// before the call.
type slowLeases struct {
	persistence.Journal
	clk  *clock.Manual
	gone chan struct{} // closed when the test ends

	mu    sync.Mutex
	delay time.Duration // guarded by mu; 0: not delayed
}

func (s *slowLeases) setDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

func (s *slowLeases) Lease(ctx context.Context, stream, holder string, ttl time.Duration) (persistence.LeaseState, error) {
	s.mu.Lock()
	d := s.delay
	s.mu.Unlock()
	if d > 0 {
		arrived := make(chan struct{})
		s.clk.AfterFunc(d, func() { close(arrived) })
		// ctx's timeout runs on the real clock: on a loaded machine a call
		// may time out before the manual clock has moved its delay (it
		// then fails, as in RenewalsFail), and it must, for a stopping
		// activation waits for its keeper's call.
		select {
		case <-arrived:
		case <-ctx.Done():
			return persistence.LeaseState{}, ctx.Err()
		case <-s.gone:
			return persistence.LeaseState{}, persistence.ErrClosed
		}
	}
	return s.Journal.Lease(ctx, stream, holder, ttl)
}

// spawnOn spawns an activation of the set actor on j (wrapped in a Faulty
// of its own) with the bundle's options and opts.
func (b *bundle) spawnOn(t *testing.T, j persistence.Journal, opts ...persistence.Option) *activation {
	t.Helper()
	f := journaltest.NewFaulty(j)
	tr := &tracking{Journal: f}
	rt, err := persistence.New(tr, stream, append(append([]persistence.Option{}, b.opts...), opts...)...)
	require.NoError(t, err)
	ev := testkit.NewProbe(t, b.sys)
	a := &setActor{rt: rt, track: tr, violations: &b.violations, recovered: ev.PID(), resets: &b.resets}
	pid := b.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }))
	return &activation{pid: pid, faulty: f, track: tr, events: ev}
}

// watched follows one activation's life for serving.
type watched struct {
	pid     *actor.PID
	watcher *testkit.Probe
	stopped bool
}

func (b *bundle) watch(t *testing.T, a *activation) *watched {
	t.Helper()
	w := &watched{pid: a.pid, watcher: testkit.NewProbe(t, b.sys)}
	w.watcher.Watch(a.pid)
	return w
}

// serving asks w's activation whether it would decide at this instant; a
// stopped activation does not. A question that reaches an activation
// while it stops is dropped: then it must have terminated.
func (b *bundle) serving(t *testing.T, w *watched) bool {
	t.Helper()
	if w.stopped {
		return false
	}
	res, err := b.sys.Root.RequestFuture(w.pid, &servingQuery{}, testkit.Timeout()).Result()
	if errors.Is(err, actor.ErrDeadLetter) || errors.Is(err, actor.ErrTimeout) {
		w.watcher.ExpectTerminated(w.pid, testkit.Timeout())
		w.stopped = true
		return false
	}
	require.NoError(t, err)
	return res.(*wrapperspb.BoolValue).GetValue()
}

// TestLeaseHoldersNeverServeTogether models the journal's lease and two
// activations: the first holds the lease and then cannot renew it in time
// (its renewals fail, or reach the journal late), the second waits for it.
// The journal's clock runs 1% fast. Every millisecond of the manual clock
// both are asked whether they would decide (hand out work, answer a
// status) at that instant: never both, and the second takes over.
func TestLeaseHoldersNeverServeTogether(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault func(first *activation, slow *slowLeases)
	}{
		{"RenewalsFail", func(first *activation, _ *slowLeases) { first.faulty.FailLeases(errCut) }},
		{"RenewalsArriveLate", func(_ *activation, slow *slowLeases) { slow.setDelay(ttl * 5 / 6) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, persistence.WithLease(ttl))
			store := journal.NewMemory(journal.WithClock(fastClock{Manual: b.clk, base: b.clk.Now()}))
			t.Cleanup(func() { _ = store.Close() })
			slow := &slowLeases{Journal: store, clk: b.clk, gone: make(chan struct{})}
			t.Cleanup(func() { close(slow.gone) })
			first := b.spawnOn(t, slow) // T0: the lease until T0+300 on its clock, T0+297 on the journal's
			first.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
			second := b.spawnOn(t, store)
			require.Equal(t, "waiting for lease", b.phase(t, second.pid))
			fw, sw := b.watch(t, first), b.watch(t, second)
			require.True(t, b.serving(t, fw))
			tc.fault(first, slow)
			t0 := b.clk.Now()
			var firstStopped, secondServes time.Duration
			for b.clk.Now().Sub(t0) < 2*ttl {
				b.clk.Advance(time.Millisecond)
				at := b.clk.Now().Sub(t0)
				f, s := b.serving(t, fw), b.serving(t, sw)
				require.False(t, f && s, "at T0+%v both activations serve", at)
				if !f && firstStopped == 0 {
					firstStopped = at
				}
				if s && secondServes == 0 {
					secondServes = at
				}
			}
			t.Logf("the first stopped serving at T0+%v, the second serves from T0+%v", firstStopped, secondServes)
			require.NotZero(t, secondServes, "the second never took over")
			require.False(t, b.serving(t, fw), "the first serves again")
		})
	}
}
