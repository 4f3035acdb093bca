package throttler_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/throttler"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// permitRig is throttler activations of one job type on one real SQLite
// journal, a manual clock and a probe that stands for a master shard's
// permit pool (grants go to the request's sender).
type permitRig struct {
	t    *testing.T
	sys  *actor.ActorSystem
	clk  *clock.Manual
	j    persistence.Journal
	pool *testkit.Probe
}

func newPermitRig(t *testing.T) *permitRig {
	t.Helper()
	clk := clock.NewManual(t0)
	j, err := journal.OpenSQLite(filepath.Join(t.TempDir(), "j.db"), journal.WithClock(clk))
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	sys := testkit.NewSystem(t)
	return &permitRig{t: t, sys: sys, clk: clk, j: j, pool: testkit.NewProbe(t, sys)}
}

// spawn starts an activation configured (--rate) with rate and strict. No
// lease: the test jumps the manual clock by most of a period at once, which
// a lease holder takes as a pause that lost its lease; the epochs still
// fence a replaced activation.
func (r *permitRig) spawn(rate throttler.Rate, strict bool, opts ...throttler.PermitOption) *actor.PID {
	r.t.Helper()
	props, err := throttler.PermitThrottlerProps(r.j, "square", rate, strict,
		append([]throttler.PermitOption{throttler.WithPermitClock(r.clk), throttler.WithPermitLogger(r.sys.Logger())}, opts...)...)
	require.NoError(r.t, err)
	pid := r.sys.Root.Spawn(props)
	r.status(pid) // answered once it has recovered and serves
	return pid
}

func (r *permitRig) status(pid *actor.PID) *messages.ThrottleStatus {
	r.t.Helper()
	res, err := r.sys.Root.RequestFuture(pid, &messages.ThrottleGetStatus{JobType: "square"}, testkit.Timeout()).Result()
	require.NoError(r.t, err)
	return res.(*messages.ThrottleStatus)
}

// ask sends a permit request from the pool probe.
func (r *permitRig) ask(pid *actor.PID, want int) {
	r.pool.Send(pid, &messages.PermitRequest{JobType: "square", Want: int32(want), Pool: 7})
}

// granted waits for one grant and returns its permits.
func (r *permitRig) granted() []throttler.Permit {
	r.t.Helper()
	g := testkit.ExpectMsgType[*messages.PermitGrant](r.pool, testkit.Timeout())
	require.Empty(r.t, g.GetError())
	require.EqualValues(r.t, 7, g.GetPool(), "the grant names the pool that asked")
	ps, _ := throttler.GrantPermits(g)
	return ps
}

// A successor that replaces its predecessor mid-period (here by taking a
// new epoch while the predecessor still runs, as after a partition or a
// move) resumes from the SQLite journal: the predecessor's grants count
// (no burst), the period ends when the predecessor's would have (no pause
// of a whole period), and the fenced predecessor grants nothing more.
func TestPermitThrottlerSuccessorNeitherBurstsNorPauses(t *testing.T) {
	r := newPermitRig(t)
	rate := throttler.PerMinute(10)
	a := r.spawn(rate, false)
	r.ask(a, 10)
	ps := r.granted()
	require.Len(t, ps, 10, "ten vouchers in the first period")
	require.WithinDuration(t, t0.Add(time.Minute-1), ps[0].NotAfter, 0, "valid until the period ends")

	r.clk.Advance(20 * time.Second)
	b := r.spawn(rate, false) // takes a new epoch: a is fenced at its next write
	r.ask(b, 10)
	r.pool.ExpectNoMsg(100 * time.Millisecond) // the period's vouchers are spent

	// The predecessor, still running, asked again: it has no voucher left
	// in this period either, and at its tick its grant's write is fenced,
	// so nothing reaches the pool from it.
	r.ask(a, 10)
	r.clk.Advance(39 * time.Second) // t0+59s: still the first period
	r.pool.ExpectNoMsg(100 * time.Millisecond)

	r.clk.Advance(time.Second) // t0+60s: the predecessor's period ends; b's first tick
	ps = r.granted()
	require.Len(t, ps, 10, "the successor grants the next period's vouchers when the period ends, not one period after it took over")
	require.WithinDuration(t, t0.Add(time.Minute), ps[0].NotBefore, 0)
	r.pool.ExpectNoMsg(100 * time.Millisecond) // and the fenced predecessor nothing
}

// In the strict mode a successor keeps the sliding window of its
// predecessor's grants, each taken as spent at the end of its validity
// (the spend reports are not journaled): at 5/s the predecessor's 5 permits
// fill the window, so the successor's first permit starts one period after
// their latest instant, no sooner (no burst) and no later (no pause).
func TestPermitThrottlerStrictSuccessorKeepsTheWindow(t *testing.T) {
	r := newPermitRig(t)
	rate := throttler.PerSecond(5)
	lead, v := throttler.StrictLead(rate), throttler.StrictValidity(rate)
	a := r.spawn(rate, true, throttler.WithPermitSlices(0)) // a window's permits as one burst
	r.ask(a, 5)
	ps := r.granted()
	require.Len(t, ps, 5, "an empty window grants a period's permits")
	require.WithinDuration(t, t0.Add(lead), ps[0].NotBefore, 0, "a strict permit starts StrictLead ahead")
	require.WithinDuration(t, ps[0].NotBefore.Add(v), ps[0].NotAfter, 0)
	require.NoError(t, r.sys.Root.StopFuture(a).Wait())

	r.clk.Advance(100 * time.Millisecond)
	b := r.spawn(rate, true, throttler.WithPermitSlices(0)) // a window's permits as one burst
	r.ask(b, 5)
	r.pool.ExpectNoMsg(100 * time.Millisecond) // the predecessor's permits hold the window
	r.clk.Advance(time.Second + v - 100*time.Millisecond - time.Millisecond)
	r.pool.ExpectNoMsg(100 * time.Millisecond)
	r.clk.Advance(time.Millisecond)
	ps = r.granted()
	require.Len(t, ps, 5)
	require.WithinDuration(t, t0.Add(lead+v+time.Second), ps[0].NotBefore, 0, "one period after the predecessor's permits' latest instant")
}

// The strict throttler anchors each permit on the reported spend of the
// permit Calls grants earlier: spent 3 ms after their start, a window's
// permits free the next window's 3 ms after the period, not at the end of
// their validity; an expired permit counts as no spend (without its report
// the fifth permit would wait until a period after its validity ended).
func TestPermitThrottlerStrictAnchorsOnReportedSpends(t *testing.T) {
	r := newPermitRig(t)
	rate := throttler.PerSecond(5)
	lead := throttler.StrictLead(rate)
	a := r.spawn(rate, true, throttler.WithPermitSlices(0)) // a window's permits as one burst
	r.ask(a, 5)
	ps := r.granted()
	require.Len(t, ps, 5)
	uses := make([]throttler.PermitUse, 0, len(ps))
	for k, p := range ps {
		require.EqualValues(t, k+1, p.Seq, "strict permits are numbered")
		u := throttler.PermitUse{Seq: p.Seq, Spent: p.NotBefore.Add(3 * time.Millisecond)}
		if k == 4 {
			u.Spent = time.Time{} // expired unspent
		}
		uses = append(uses, u)
	}
	r.pool.Send(a, throttler.UsedMessage("square", 7, uses))
	r.ask(a, 5)
	r.clk.Advance(time.Second + 3*time.Millisecond - time.Millisecond)
	r.pool.ExpectNoMsg(100 * time.Millisecond)
	r.clk.Advance(time.Millisecond)
	ps = r.granted()
	require.Len(t, ps, 5, "the whole next window at once")
	require.WithinDuration(t, t0.Add(lead+time.Second+3*time.Millisecond), ps[0].NotBefore, 0, "a period after the reported spends")
	require.EqualValues(t, 6, ps[0].Seq)
}

// A run-time SetRate is an event of the throttler's stream: a restart keeps
// it; a restart with another configured rate (the cluster's --rate changed)
// starts from that one.
func TestPermitThrottlerSetRateIsDurable(t *testing.T) {
	r := newPermitRig(t)
	a := r.spawn(throttler.PerSecond(10), false)
	res, err := r.sys.Root.RequestFuture(a, &messages.ThrottleSetRate{JobType: "square", Calls: 30, PerNanos: int64(time.Minute), Strict: true}, testkit.Timeout()).Result()
	require.NoError(t, err)
	st := res.(*messages.ThrottleStatus)
	require.Empty(t, st.GetError())
	require.EqualValues(t, 30, st.GetCalls())
	require.True(t, st.GetStrict())

	res, err = r.sys.Root.RequestFuture(a, &messages.ThrottleSetRate{JobType: "square", Calls: 0, PerNanos: int64(time.Second)}, testkit.Timeout()).Result()
	require.NoError(t, err)
	require.Contains(t, res.(*messages.ThrottleStatus).GetError(), "Calls is 0", "a bad rate is refused and says why")

	require.NoError(t, r.sys.Root.StopFuture(a).Wait())
	b := r.spawn(throttler.PerSecond(10), false)
	st = r.status(b)
	require.EqualValues(t, 30, st.GetCalls(), "the run-time rate survives the restart")
	require.Equal(t, int64(time.Minute), st.GetPerNanos())
	require.True(t, st.GetStrict())

	require.NoError(t, r.sys.Root.StopFuture(b).Wait())
	c := r.spawn(throttler.PerSecond(12), false)
	st = r.status(c)
	require.EqualValues(t, 12, st.GetCalls(), "a changed --rate replaces the run-time rate")
	require.False(t, st.GetStrict())
}

// A request for another job type is refused with a reason.
func TestPermitThrottlerRefusesAnotherType(t *testing.T) {
	r := newPermitRig(t)
	a := r.spawn(throttler.PerSecond(10), false)
	r.pool.Send(a, &messages.PermitRequest{JobType: "factorize", Want: 1, Pool: 7})
	g := testkit.ExpectMsgType[*messages.PermitGrant](r.pool, testkit.Timeout())
	require.Contains(t, g.GetError(), `limits job type "square", not "factorize"`)
}

// A throttler that stops (its kind moves to a backend that joined, or its
// node drains) tells each pool whose ask still waits in its queue to ask
// again now, with an empty grant whose hint is now: the ask would otherwise
// be lost with the activation, and the pool would ask the successor only
// when its ask timed out (250 ms on a cluster node), a pause of dispatch
// that a backend joining must not cause.
func TestPermitThrottlerStoppingTellsWaitingPoolsToAskAgain(t *testing.T) {
	r := newPermitRig(t)
	a := r.spawn(throttler.PerSecond(5), false)
	r.ask(a, 5)
	require.Len(t, r.granted(), 5, "the period's vouchers")
	r.ask(a, 5)
	r.pool.ExpectNoMsg(50 * time.Millisecond) // 5 permits wait for the next period
	r.sys.Root.Stop(a)
	g := testkit.ExpectMsgType[*messages.PermitGrant](r.pool, testkit.Timeout())
	require.Empty(t, g.GetError())
	require.EqualValues(t, 7, g.GetPool())
	ps, again := throttler.GrantPermits(g)
	require.Empty(t, ps)
	require.True(t, r.clk.Now().Equal(again), "ask again now, not at %v", again)
}
