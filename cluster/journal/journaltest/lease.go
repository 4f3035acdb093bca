package journaltest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/persistence"
)

// LeaseFactory opens a new, independent journal for one lease subtest. clk
// is a fresh manual clock: a backend that measures leases on a clock of the
// process passes it to the journal (journal.WithClock) and returns manual
// true, and the suite moves time by advancing clk and checks times exactly;
// a backend on its server's clock returns false, and the suite lets real
// time pass (about a second per subtest) and checks times within generous
// bounds.
type LeaseFactory func(t *testing.T, clk *clock.Manual) (j persistence.Journal, manual bool)

// RunLeases runs the clauses of Journal.Lease and ReleaseLease against
// journals made by open.
func RunLeases(t *testing.T, open LeaseFactory) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(*testing.T, leaseEnv)
	}{
		{"FreeLeaseIsGranted", testLeaseFree},
		{"HolderRenews", testLeaseRenew},
		{"LiveLeaseIsHeldForAnother", testLeaseHeld},
		{"LapsedLeaseGoesToAnother", testLeaseLapsed},
		{"ReleaseFreesAtOnce", testLeaseRelease},
		{"ReleaseByNonHolderIsNoOp", testLeaseReleaseNonHolder},
		{"LeasesOfStreamsAreIndependent", testLeaseStreams},
		{"LeaseIsAdvisory", testLeaseAdvisory},
		{"ConcurrentTakersOneWins", testLeaseConcurrent},
		{"LeaseInvalidArguments", testLeaseInvalid},
		{"LeaseCallsAfterCloseFail", testLeaseAfterClose},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			j, manual := open(t, clk)
			t.Cleanup(func() { _ = j.Close() })
			env := leaseEnv{j: j}
			if manual {
				env.clk = clk
			}
			tc.fn(t, env)
		})
	}
}

// leaseEnv is a journal under test and how time passes for its leases.
type leaseEnv struct {
	j   persistence.Journal
	clk *clock.Manual // nil: the journal reads a real clock
}

// ttl is the lease time of a subtest that lets no lease lapse. On real time
// it leaves room for a slow machine between two calls.
func (e leaseEnv) ttl() time.Duration {
	if e.clk == nil {
		return 2 * time.Second
	}
	return 10 * time.Second
}

// pass lets d pass on the journal's clock. On real time this waits: it is
// the time under test, not a synchronisation.
func (e leaseEnv) pass(d time.Duration) {
	if e.clk != nil {
		e.clk.Advance(d)
		return
	}
	time.Sleep(d)
}

// requireRemaining checks a lease's time left: exactly want on a manual
// clock; on real time, at most want and more than want minus half the
// ttl (the real time two calls may take on a loaded machine).
func (e leaseEnv) requireRemaining(t *testing.T, want, got time.Duration) {
	t.Helper()
	if e.clk != nil {
		require.Equal(t, want, got, "time left of the lease")
		return
	}
	require.LessOrEqual(t, got, want, "time left of the lease")
	require.Greater(t, got, want-e.ttl()/2, "time left of the lease")
}

// take requires holder to be granted the lease of stream for ttl.
func (e leaseEnv) take(t *testing.T, stream, holder string, ttl time.Duration) {
	t.Helper()
	st, err := e.j.Lease(ctx(t), stream, holder, ttl)
	require.NoError(t, err, "%s takes the lease", holder)
	require.Equal(t, persistence.LeaseState{Holder: holder, Remaining: ttl}, st)
}

// refused requires holder to be refused the lease of stream because
// owner's is live, and returns owner's time left.
func (e leaseEnv) refused(t *testing.T, stream, holder, owner string) time.Duration {
	t.Helper()
	st, err := e.j.Lease(ctx(t), stream, holder, e.ttl())
	require.ErrorIs(t, err, persistence.ErrLeaseHeld, "%s is refused the lease", holder)
	require.Equal(t, owner, st.Holder, "the refusal names the holder")
	require.Positive(t, st.Remaining, "a live lease has time left")
	return st.Remaining
}

func testLeaseFree(t *testing.T, e leaseEnv) {
	e.take(t, Stream(t, "s"), "a", e.ttl())
}

func testLeaseRenew(t *testing.T, e leaseEnv) {
	s, ttl := Stream(t, "s"), e.ttl()
	e.take(t, s, "a", ttl)
	e.pass(ttl / 2)
	e.take(t, s, "a", ttl)
	// Without the renewal a would have at most ttl/2 left.
	e.requireRemaining(t, ttl, e.refused(t, s, "b", "a"))
	if e.clk != nil {
		e.pass(ttl / 2) // past the first lease's end
		e.requireRemaining(t, ttl/2, e.refused(t, s, "b", "a"))
	}
}

func testLeaseHeld(t *testing.T, e leaseEnv) {
	s, ttl := Stream(t, "s"), e.ttl()
	e.take(t, s, "a", ttl)
	e.pass(ttl / 4)
	e.requireRemaining(t, ttl-ttl/4, e.refused(t, s, "b", "a"))
	e.refused(t, s, "b", "a") // a refusal changes nothing
}

func testLeaseLapsed(t *testing.T, e leaseEnv) {
	s, ttl := Stream(t, "s"), e.ttl()
	e.take(t, s, "a", ttl)
	if e.clk != nil {
		e.pass(ttl - time.Nanosecond)
		e.requireRemaining(t, time.Nanosecond, e.refused(t, s, "b", "a"))
		e.pass(time.Nanosecond)
	} else {
		e.refused(t, s, "b", "a")
		// The journal's clock read a's grant after the call began, so
		// after ttl more of real time it has lapsed there too.
		e.pass(ttl)
	}
	e.take(t, s, "b", ttl)
	e.refused(t, s, "a", "b")
}

func testLeaseRelease(t *testing.T, e leaseEnv) {
	s := Stream(t, "s")
	e.take(t, s, "a", time.Hour)
	require.NoError(t, e.j.ReleaseLease(ctx(t), s, "a"))
	e.take(t, s, "b", e.ttl())
	e.refused(t, s, "a", "b")
	require.NoError(t, e.j.ReleaseLease(ctx(t), s, "a"), "a released it already")
}

func testLeaseReleaseNonHolder(t *testing.T, e leaseEnv) {
	s := Stream(t, "s")
	require.NoError(t, e.j.ReleaseLease(ctx(t), s, "b"), "no lease at all")
	e.take(t, s, "a", e.ttl())
	require.NoError(t, e.j.ReleaseLease(ctx(t), s, "b"))
	e.refused(t, s, "b", "a")
}

func testLeaseStreams(t *testing.T, e leaseEnv) {
	s1, s2 := Stream(t, "s1"), Stream(t, "s2")
	e.take(t, s1, "a", e.ttl())
	e.take(t, s2, "b", e.ttl())
	require.NoError(t, e.j.ReleaseLease(ctx(t), s2, "b"))
	e.refused(t, s1, "b", "a")
}

// testLeaseIsAdvisory: the epoch fences writes, the lease does not.
func testLeaseAdvisory(t *testing.T, e leaseEnv) {
	s := Stream(t, "s")
	e.take(t, s, "a", e.ttl())
	epoch, _ := acquire(t, e.j, s)
	require.NoError(t, e.j.Append(ctx(t), s, epoch, Evs(1, 1)))
	e.refused(t, s, "b", "a")
}

func testLeaseConcurrent(t *testing.T, e leaseEnv) {
	s := Stream(t, "s")
	const takers = 8
	type outcome struct {
		holder string
		st     persistence.LeaseState
		err    error
	}
	out := make([]outcome, takers)
	var wg sync.WaitGroup
	for i := range takers {
		wg.Go(func() {
			h := fmt.Sprintf("h%d", i)
			st, err := e.j.Lease(ctx(t), s, h, e.ttl())
			out[i] = outcome{holder: h, st: st, err: err}
		})
	}
	wg.Wait()
	var winner string
	for _, o := range out {
		if o.err == nil {
			require.Empty(t, winner, "two takers were granted the lease: %s and %s", winner, o.holder)
			winner = o.holder
		}
	}
	require.NotEmpty(t, winner, "no taker was granted the free lease: %v", out)
	for _, o := range out {
		if o.holder != winner {
			require.ErrorIs(t, o.err, persistence.ErrLeaseHeld)
			require.Equal(t, winner, o.st.Holder)
		}
	}
}

func testLeaseInvalid(t *testing.T, e leaseEnv) {
	s := Stream(t, "s")
	tests := []struct {
		name   string
		stream string
		holder string
		ttl    time.Duration
	}{
		{name: "EmptyStream", holder: "a", ttl: time.Second},
		{name: "EmptyHolder", stream: s, ttl: time.Second},
		{name: "ZeroTTL", stream: s, holder: "a"},
		{name: "NegativeTTL", stream: s, holder: "a", ttl: -time.Second},
	}
	for _, tc := range tests {
		_, err := e.j.Lease(ctx(t), tc.stream, tc.holder, tc.ttl)
		require.ErrorIs(t, err, persistence.ErrInvalid, tc.name)
	}
	require.ErrorIs(t, e.j.ReleaseLease(ctx(t), "", "a"), persistence.ErrInvalid, "release: empty stream")
	require.ErrorIs(t, e.j.ReleaseLease(ctx(t), s, ""), persistence.ErrInvalid, "release: empty holder")
	e.take(t, s, "a", e.ttl()) // nothing was stored
}

func testLeaseAfterClose(t *testing.T, e leaseEnv) {
	s := Stream(t, "s")
	e.take(t, s, "a", e.ttl())
	require.NoError(t, e.j.Close())
	_, err := e.j.Lease(ctx(t), s, "a", e.ttl())
	require.ErrorIs(t, err, persistence.ErrClosed)
	require.ErrorIs(t, e.j.ReleaseLease(ctx(t), s, "a"), persistence.ErrClosed)
}

// testLeaseTwoHandles: a lease is the store's, seen by every handle (every
// process), and it outlives the handle that took it: a process that dies
// without releasing leaves it to lapse.
func testLeaseTwoHandles(t *testing.T, open func() persistence.Journal) {
	s := Stream(t, "s")
	a, b := open(), open()
	st, err := a.Lease(ctx(t), s, "x", time.Hour)
	require.NoError(t, err)
	require.Equal(t, "x", st.Holder)
	_, err = b.Lease(ctx(t), s, "y", time.Hour)
	require.ErrorIs(t, err, persistence.ErrLeaseHeld)
	require.NoError(t, a.Close())

	st, err = b.Lease(ctx(t), s, "y", time.Hour)
	require.ErrorIs(t, err, persistence.ErrLeaseHeld, "the lease outlives the handle that took it")
	require.Equal(t, "x", st.Holder)
	c := open()
	require.NoError(t, c.ReleaseLease(ctx(t), s, "x"))
	st, err = b.Lease(ctx(t), s, "y", time.Hour)
	require.NoError(t, err)
	require.Equal(t, "y", st.Holder)
	_, err = c.Lease(ctx(t), s, "x", time.Hour)
	require.ErrorIs(t, err, persistence.ErrLeaseHeld, "y's lease, seen through another handle")
}
