package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

// coreRun drives a PermitCore and keeps its journal.
type coreRun struct {
	t       *testing.T
	c       *PermitCore[string]
	journal []proto.Message
}

// newCoreRun returns a core whose strict window is granted as one burst
// (PermitSlices(0)): these tests follow the window's places permit by
// permit; TestPermitCoreStrictSlices checks the slices.
func newCoreRun(t *testing.T, rate Rate, strict bool, journal []proto.Message, opts ...PermitCoreOption) *coreRun {
	t.Helper()
	c, err := NewPermitCore[string]("square", rate, strict, append([]PermitCoreOption{PermitSlices(0)}, opts...)...)
	require.NoError(t, err)
	for _, ev := range journal {
		require.NoError(t, c.Replay(ev))
	}
	return &coreRun{t: t, c: c, journal: journal}
}

// take records a step's events and returns the permits granted per pool.
func (r *coreRun) take(st PermitStep[string]) map[string]int {
	r.journal = append(r.journal, st.Events...)
	out := map[string]int{}
	for _, g := range st.Grants {
		out[g.To] += len(g.Permits)
	}
	return out
}

func TestPermitCoreStep(t *testing.T) {
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type action struct {
		at      time.Duration
		do      string // serve, ask, tick, pause, setrate
		from    string
		want    int
		rate    Rate
		strict  bool
		granted map[string]int
		timer   TimerOp
		first   time.Duration
		after   time.Duration // checked when set
		events  int
	}
	cases := []struct {
		name    string
		rate    Rate
		strict  bool
		actions []action
	}{
		{name: "RequestsWaitForTheTarget", rate: PerSecond(3), actions: []action{
			{do: "ask", from: "a", want: 2, granted: map[string]int{}},
			{do: "serve", granted: map[string]int{"a": 2}, timer: TimerStartPeriodic, events: 2}, // the rate, the grant
		}},
		{name: "VouchersPerPeriodAndTheQueue", rate: PerSecond(3), actions: []action{
			{do: "serve", granted: map[string]int{}, events: 1},
			{do: "ask", from: "a", want: 2, granted: map[string]int{"a": 2}, timer: TimerStartPeriodic, events: 1},
			{do: "ask", from: "b", want: 2, granted: map[string]int{"b": 1}, events: 1},
			{at: time.Second, do: "tick", granted: map[string]int{"b": 1}, events: 1},
			{at: 2 * time.Second, do: "tick", granted: map[string]int{}, timer: TimerStop},
		}},
		{name: "AskingAgainTopsUpRatherThanAdds", rate: PerSecond(1), actions: []action{
			{do: "serve", granted: map[string]int{}, events: 1},
			{do: "ask", from: "a", want: 5, granted: map[string]int{"a": 1}, timer: TimerStartPeriodic, events: 1},
			{do: "ask", from: "a", want: 5, granted: map[string]int{}},
			{at: time.Second, do: "tick", granted: map[string]int{"a": 1}, events: 1},
		}},
		{name: "WantIsCappedAtCalls", rate: PerSecond(2), actions: []action{
			{do: "serve", granted: map[string]int{}, events: 1},
			{do: "ask", from: "a", want: 100, granted: map[string]int{"a": 2}, timer: TimerStartPeriodic, events: 1},
			{at: time.Second, do: "tick", granted: map[string]int{}, timer: TimerStop}, // the seed: an empty queue at a tick goes Idle
		}},
		{name: "PauseKeepsTheQueue", rate: PerSecond(1), actions: []action{
			{do: "serve", granted: map[string]int{}, events: 1},
			{do: "pause", granted: map[string]int{}},
			{do: "ask", from: "a", want: 1, granted: map[string]int{}},
		}},
		// Strict 2/s: permits start StrictLead (250 ms) ahead and count
		// as spent at the end of their validity (50 ms) until reported.
		{name: "StrictSlidingWindow", rate: PerSecond(2), strict: true, actions: []action{
			{do: "serve", granted: map[string]int{}, events: 1},
			{do: "ask", from: "a", want: 2, granted: map[string]int{"a": 2}, events: 1},
			{at: 500 * time.Millisecond, do: "ask", from: "b", want: 1, granted: map[string]int{}, timer: TimerStartOnce, after: 550 * time.Millisecond},
			{at: 1050 * time.Millisecond, do: "tick", granted: map[string]int{"b": 1}, timer: TimerStop, events: 1},
		}},
		// A tick that fires late (20 ms) delivers at the time it was due:
		// the next is due a period after the permits it delivered, and the
		// timer is armed for that from the late tick.
		{name: "StrictLateTick", rate: PerSecond(2), strict: true, actions: []action{
			{do: "serve", granted: map[string]int{}, events: 1},
			{do: "ask", from: "a", want: 2, granted: map[string]int{"a": 2}, events: 1},
			{do: "ask", from: "b", want: 1, granted: map[string]int{}, timer: TimerStartOnce, after: 1050 * time.Millisecond},
			{do: "ask", from: "c", want: 1, granted: map[string]int{}},
			{do: "ask", from: "a", want: 1, granted: map[string]int{}},
			{at: 1070 * time.Millisecond, do: "tick", granted: map[string]int{"b": 1, "c": 1}, timer: TimerStartOnce, after: 1030 * time.Millisecond, events: 1},
		}},
		{name: "SetRateIsAnEvent", rate: PerSecond(1), actions: []action{
			{do: "serve", granted: map[string]int{}, events: 1},
			{do: "ask", from: "a", want: 1, granted: map[string]int{"a": 1}, timer: TimerStartPeriodic, events: 1},
			{do: "ask", from: "a", want: 1, granted: map[string]int{}},
			{at: 100 * time.Millisecond, do: "setrate", rate: PerSecond(3), granted: map[string]int{"a": 1}, timer: TimerStartPeriodic, events: 2},
		}},
		{name: "SetRateToStrict", rate: PerSecond(1), actions: []action{
			{do: "serve", granted: map[string]int{}, events: 1},
			{do: "ask", from: "a", want: 1, granted: map[string]int{"a": 1}, timer: TimerStartPeriodic, events: 1},
			{do: "setrate", rate: PerSecond(2), strict: true, granted: map[string]int{}, timer: TimerStop, events: 1},
			{do: "ask", from: "a", want: 2, granted: map[string]int{"a": 2}, events: 1},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newCoreRun(t, tc.rate, tc.strict, nil)
			for i, a := range tc.actions {
				var st PermitStep[string]
				switch a.do {
				case "serve":
					st = r.c.Serve(at(a.at))
				case "ask":
					st = r.c.Request(at(a.at), a.from, a.want)
				case "tick":
					st = r.c.Tick(at(a.at))
				case "pause":
					st = r.c.Pause(at(a.at))
				case "setrate":
					var err error
					st, err = r.c.SetRate(at(a.at), a.rate, a.strict)
					require.NoError(t, err)
				}
				timer, first, events := st.Timer, st.TimerFirst, len(st.Events)
				require.Equal(t, a.granted, r.take(st), "action %d (%s)", i, a.do)
				require.Equal(t, a.timer, timer, "action %d (%s): timer", i, a.do)
				require.Equal(t, a.first, first, "action %d (%s): first tick", i, a.do)
				require.Equal(t, a.events, events, "action %d (%s): events", i, a.do)
				if a.after > 0 {
					require.Equal(t, a.after, st.TimerAfter, "action %d (%s): timer after", i, a.do)
				}
			}
		})
	}
}

// A successor replays the journal: in timer mode it continues the
// predecessor's period (vouchers left, end); in strict mode its window.
func TestPermitCoreSuccessor(t *testing.T) {
	t.Run("TimerMidPeriod", func(t *testing.T) {
		a := newCoreRun(t, PerMinute(10), false, nil)
		a.take(a.c.Serve(t0))
		require.Equal(t, map[string]int{"a": 7}, a.take(a.c.Request(t0.Add(time.Second), "a", 7)))

		b := newCoreRun(t, PerMinute(10), false, a.journal)
		st := b.c.Serve(t0.Add(21 * time.Second))
		require.Empty(t, st.Events, "the same configured rate: nothing to record")
		st = b.c.Request(t0.Add(21*time.Second), "b", 10)
		require.Equal(t, TimerStartPeriodic, st.Timer)
		require.Equal(t, 40*time.Second, st.TimerFirst, "the predecessor's period ends at t0+1s+60s")
		require.Equal(t, map[string]int{"b": 3}, b.take(st), "the period's 3 vouchers left, no more")
		require.WithinDuration(t, t0.Add(time.Minute+time.Second-1), st.Grants[0].Permits[0].NotAfter, 0)
		require.Equal(t, map[string]int{"b": 7}, b.take(b.c.Tick(t0.Add(61*time.Second))), "the next period at once")
	})
	t.Run("TimerPeriodOver", func(t *testing.T) {
		a := newCoreRun(t, PerSecond(10), false, nil)
		a.take(a.c.Serve(t0))
		a.take(a.c.Request(t0, "a", 10))
		b := newCoreRun(t, PerSecond(10), false, a.journal)
		b.take(b.c.Serve(t0.Add(5 * time.Second)))
		st := b.c.Request(t0.Add(5*time.Second), "b", 10)
		require.Zero(t, st.TimerFirst, "a period of its own")
		require.Equal(t, map[string]int{"b": 10}, b.take(st))
	})
	t.Run("StrictWindow", func(t *testing.T) {
		// 4/s strict: permits start 250 ms ahead (FSM time) and a
		// successor counts each as spent at the end of its validity, 50 ms.
		a := newCoreRun(t, PerSecond(4), true, nil)
		a.take(a.c.Serve(t0))
		require.Equal(t, map[string]int{"a": 2}, a.take(a.c.Request(t0, "a", 2)))
		b := newCoreRun(t, PerSecond(4), true, a.journal)
		b.take(b.c.Serve(t0.Add(300 * time.Millisecond)))
		st := b.c.Request(t0.Add(300*time.Millisecond), "b", 4)
		require.Equal(t, map[string]int{"b": 2}, b.take(st), "the window's 2 places left, no more")
		require.Equal(t, TimerStartOnce, st.Timer)
		require.Equal(t, 750*time.Millisecond, st.TimerAfter, "the predecessor's permits (latest instant FSM t0+300ms) hold their places for a period: no burst, and no pause beyond it")
		st = b.c.Tick(t0.Add(1050 * time.Millisecond))
		require.Equal(t, map[string]int{"b": 2}, b.take(st))
		require.EqualValues(t, 5, st.Grants[0].Permits[0].Seq, "the successor numbers on from the predecessor's permits")
	})
	t.Run("Snapshot", func(t *testing.T) {
		a := newCoreRun(t, PerMinute(10), false, nil)
		a.take(a.c.Serve(t0))
		a.take(a.c.Request(t0, "a", 6))
		b := newCoreRun(t, PerMinute(10), false, []proto.Message{a.c.Snapshot()})
		b.take(b.c.Serve(t0.Add(time.Second)))
		require.Equal(t, map[string]int{"b": 4}, b.take(b.c.Request(t0.Add(time.Second), "b", 10)), "the period's vouchers left")

		// Strict 10/m: permits start 1 s ahead, valid 3 s.
		a = newCoreRun(t, PerMinute(10), true, nil)
		a.take(a.c.Serve(t0))
		require.Equal(t, map[string]int{"a": 6}, a.take(a.c.Request(t0, "a", 6)))
		b = newCoreRun(t, PerMinute(10), true, []proto.Message{a.c.Snapshot()})
		b.take(b.c.Serve(t0.Add(time.Second)))
		st := b.c.Request(t0.Add(time.Second), "b", 10)
		require.Equal(t, map[string]int{"b": 4}, b.take(st), "the snapshot's 6 grants hold their places")
		require.Equal(t, 62*time.Second, st.TimerAfter, "until a minute after their latest instant, t0+4s")
	})
	t.Run("RunTimeRateAndChangedConfig", func(t *testing.T) {
		a := newCoreRun(t, PerSecond(10), false, nil)
		a.take(a.c.Serve(t0))
		st, err := a.c.SetRate(t0, PerMinute(5), true)
		require.NoError(t, err)
		a.take(st)
		_, err = a.c.SetRate(t0, Rate{Calls: 0, Per: time.Second}, false)
		require.ErrorIs(t, err, ErrInvalidRate)

		b := newCoreRun(t, PerSecond(10), false, a.journal)
		b.take(b.c.Serve(t0))
		require.Equal(t, PerMinute(5), b.c.Status().Rate)
		require.True(t, b.c.Status().Strict)

		c := newCoreRun(t, PerSecond(20), false, a.journal)
		st = c.c.Serve(t0)
		require.Len(t, st.Events, 1)
		require.Equal(t, PerSecond(20), c.c.Status().Rate, "the configured rate changed: it replaces the run-time one")
		rs := st.Events[0].(*messages.ThrottleRateSet)
		require.EqualValues(t, 20, rs.GetConfiguredCalls())
	})
}

func TestNewPermitCoreRejectsBadInput(t *testing.T) {
	_, err := NewPermitCore[string]("", PerSecond(1), false)
	require.ErrorIs(t, err, ErrInvalidOption)
	_, err = NewPermitCore[string]("square", Rate{Calls: 1}, false)
	require.ErrorIs(t, err, ErrInvalidRate)
	c, err := NewPermitCore[string]("square", PerSecond(1), false)
	require.NoError(t, err)
	require.Error(t, c.Replay(&messages.PermitRequest{}), "an unknown event is an error, not ignored")
}

// A pool that reports a strict permit expired frees its place in the window
// at once and loses the permits it has waiting (it asks again when dry):
// at the end of a master's backlog they would go to waste while other
// pools wait.
func TestPermitCoreExpiryFreesThePlaceAndThePoolsQueue(t *testing.T) {
	r := newCoreRun(t, PerSecond(2), true, nil)
	r.take(r.c.Serve(t0))
	st := r.c.Request(t0, "a", 2)
	first := st.Grants[0].Permits[0]
	require.Equal(t, map[string]int{"a": 2}, r.take(st))
	require.Equal(t, map[string]int{}, r.take(r.c.Request(t0, "a", 2)), "the window is full")
	require.Equal(t, 2, r.c.Status().Queued)
	require.Equal(t, map[string]int{}, r.take(r.c.Used(t0.Add(400*time.Millisecond), "a", []PermitUse{{Seq: first.Seq}})))
	require.Zero(t, r.c.Status().Queued, "the expiring pool's waiting permits are dropped")
	require.Equal(t, map[string]int{"b": 1}, r.take(r.c.Request(t0.Add(400*time.Millisecond), "b", 1)), "the expired permit's place is free")
}

// TestPermitCoreTickSharesAPeriodAndAnswersAsks: in timer mode a tick
// shares the period's vouchers among the pools that wait, one permit each
// in turn, and its grant answers a pool's ask: what it asked beyond the
// grant is forgotten. So a pool whose master ran out of work (it asks no
// more) does not take later periods' vouchers from a pool that still asks,
// and shards with equal work finish together (issue 36: at the end of a
// backlog the last works were spread over 2-3 extra periods).
func TestPermitCoreTickSharesAPeriodAndAnswersAsks(t *testing.T) {
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	r := newCoreRun(t, Rate{Calls: 10, Per: time.Second}, false, nil)
	r.take(r.c.Serve(at(0)))
	require.Equal(t, map[string]int{"a": 10}, r.take(r.c.Request(at(0), "a", 10)))
	// The period's vouchers are gone: both asks wait for the tick.
	require.Empty(t, r.take(r.c.Request(at(100*time.Millisecond), "a", 10)))
	require.Empty(t, r.take(r.c.Request(at(200*time.Millisecond), "b", 10)))
	// The tick shares the period: 5 each, not all 10 to a's older ask.
	require.Equal(t, map[string]int{"a": 5, "b": 5}, r.take(r.c.Tick(at(time.Second))))
	require.Zero(t, r.c.Status().Queued, "a grant answers the ask")
	// b's master has no more work: b asks no more. a asks for 10.
	require.Empty(t, r.take(r.c.Request(at(1500*time.Millisecond), "a", 10)))
	require.Equal(t, map[string]int{"a": 10}, r.take(r.c.Tick(at(2*time.Second))))
	// b asks again: it is served like any ask.
	require.Empty(t, r.take(r.c.Request(at(2100*time.Millisecond), "b", 3)))
	require.Equal(t, map[string]int{"b": 3}, r.take(r.c.Tick(at(3*time.Second))))
}

// TestPermitCoreStrictSlices: a strict throttler (default StrictSlices)
// grants a backlog a slice at a time: at 100/s, 10 permits that start
// together every 100 ms. The next window's slices anchor on the spends the
// pools report, slice by slice, and a successor that replays the grants
// keeps the slices going rather than granting a burst.
func TestPermitCoreStrictSlices(t *testing.T) {
	lead := StrictLead(PerSecond(100))
	r := newCoreRun(t, PerSecond(100), true, nil, PermitSlices(StrictSlices))
	r.take(r.c.Serve(t0))
	starts := map[time.Time]int{}
	var seqs []uint64
	grant := func(st PermitStep[string]) {
		for _, g := range st.Grants {
			for _, p := range g.Permits {
				starts[p.NotBefore]++
				seqs = append(seqs, p.Seq)
			}
		}
		r.take(st)
	}
	st := r.c.Request(t0, "a", 100)
	require.Equal(t, TimerStartOnce, st.Timer)
	require.Equal(t, 100*time.Millisecond, st.TimerAfter, "the next slice")
	grant(st)
	require.Equal(t, map[time.Time]int{t0.Add(lead): 10}, starts)
	for i := 1; i < 10; i++ {
		grant(r.c.Tick(t0.Add(time.Duration(i) * 100 * time.Millisecond)))
	}
	require.Len(t, starts, 10, "ten slices")
	for i := range 10 {
		require.Equal(t, 10, starts[t0.Add(lead+time.Duration(i)*100*time.Millisecond)], "slice %d", i)
	}
	require.Equal(t, uint64(100), r.c.Status().Granted)

	// The first slice is spent 3 ms after its start: the second window's
	// first slice starts a window after those spends.
	spent := t0.Add(lead + 3*time.Millisecond)
	uses := make([]PermitUse, 10)
	for i := range uses {
		uses[i] = PermitUse{Seq: seqs[i], Spent: spent}
	}
	grant(r.c.Request(t0.Add(lead), "a", 100))
	st = r.c.Used(spent, "a", uses)
	require.Empty(t, st.Grants, "not before a window after the spends")
	clear(starts)
	grant(r.c.Tick(spent.Add(time.Second - lead)))
	require.Equal(t, map[time.Time]int{spent.Add(time.Second): 10}, starts)

	// A successor replays the journal: it grants no burst, only what the
	// window and the slices allow.
	s := newCoreRun(t, PerSecond(100), true, r.journal, PermitSlices(StrictSlices))
	s.take(s.c.Serve(spent.Add(time.Second - lead)))
	st = s.c.Request(spent.Add(time.Second-lead), "b", 100)
	require.Empty(t, st.Grants, "the window and the slice are full")
	require.Equal(t, TimerStartOnce, st.Timer)
}

// TestPermitCoreStrictSlicesAreShared: each strict slice is shared among
// the pools that wait, one permit each in turn, so a pool whose master ran
// out of work wastes its share, not a whole slice (at the end of a backlog
// the whole slices that went to drained shards cost 1.5% of the rate).
func TestPermitCoreStrictSlicesAreShared(t *testing.T) {
	r := newCoreRun(t, PerSecond(100), true, nil, PermitSlices(StrictSlices))
	r.take(r.c.Serve(t0))
	require.Equal(t, map[string]int{"a": 10}, r.take(r.c.Request(t0, "a", 100)), "only a waits")
	require.Equal(t, map[string]int{}, r.take(r.c.Request(t0, "b", 100)))
	require.Equal(t, map[string]int{"a": 5, "b": 5}, r.take(r.c.Tick(t0.Add(100*time.Millisecond))))
	require.Equal(t, map[string]int{"a": 5, "b": 5}, r.take(r.c.Tick(t0.Add(200*time.Millisecond))))
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
