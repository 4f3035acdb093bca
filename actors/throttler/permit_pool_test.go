package throttler

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
)

// simulation drives shards PermitPools against one PermitCore (the
// throttler's decisions) on a manual clock: every shard always has work and
// calls Reserve each tick; asks reach the throttler after rtt/2 and grants
// come back after another rtt/2. The journal is the list of the core's
// events (a grant's events are durable before it leaves). At failAt (if
// set) the throttler dies with every ask and grant in flight; a successor
// replays the journal and serves detect later. It returns the spend times.
type simulation struct {
	rate   Rate
	strict bool
	shards int
	rtt    time.Duration
	run    time.Duration
	failAt time.Duration
	detect time.Duration
	tick   time.Duration
	// lag > 0 models a master: a pool is not asked every tick but when the
	// master looks (a denied Reserve's wait, then lag for the worker's
	// round trip: WorkIsReady out, RequestWork back), and each look spends
	// at most capacity permits (the workers' free slots), then looks again
	// lag later.
	lag      time.Duration
	capacity int
}

type event struct {
	at    time.Time
	shard int
	want  int  // an ask arriving at the throttler
	reply bool // a grant arriving at the shard
	ps    []Permit
	uses  []PermitUse // a pool's spend reports arriving at the throttler
}

func (s simulation) spends(t *testing.T) []time.Time {
	t.Helper()
	var (
		queue   []event
		now     time.Time
		journal []proto.Message
		tickAt  time.Time // zero: no timer
		every   time.Duration
		core    *PermitCore[int]
	)
	apply := func(st PermitStep[int]) {
		journal = append(journal, st.Events...)
		for _, g := range st.Grants {
			queue = append(queue, event{at: now.Add(s.rtt / 2), shard: g.To, reply: true, ps: slices.Clone(g.Permits)})
		}
		switch st.Timer {
		case TimerStartPeriodic:
			every, tickAt = st.TimerAfter, now.Add(st.TimerAfter)
			if st.TimerFirst > 0 {
				tickAt = now.Add(st.TimerFirst)
			}
		case TimerStartOnce:
			every, tickAt = 0, now.Add(st.TimerAfter)
		case TimerStop:
			tickAt = time.Time{}
		case TimerNone:
		}
	}
	activate := func() {
		c, err := NewPermitCore[int]("square", s.rate, s.strict)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range journal {
			if err := c.Replay(ev); err != nil {
				t.Fatal(err)
			}
		}
		core, tickAt = c, time.Time{}
		apply(core.Serve(now))
	}
	pools := make([]*PermitPool, s.shards)
	for k := range pools {
		pools[k] = NewPermitPool(func(want int) {
			queue = append(queue, event{at: now.Add(s.rtt / 2), shard: k, want: want})
		}, 250*time.Millisecond)
		pools[k].ReportUses(func(uses []PermitUse) {
			queue = append(queue, event{at: now.Add(s.rtt / 2), shard: k, uses: slices.Clone(uses)})
		})
	}
	now = t0
	activate()
	var out []time.Time
	look := make([]time.Time, s.shards) // lag > 0: when each master looks next
	failed, back := false, false
	for ; now.Before(t0.Add(s.run)); now = now.Add(s.tick) {
		if s.failAt > 0 && !failed && !now.Before(t0.Add(s.failAt)) {
			failed, core, queue, tickAt = true, nil, nil, time.Time{} // in flight: lost
		}
		if failed && !back && !now.Before(t0.Add(s.failAt+s.detect)) {
			back = true
			activate()
		}
		if core != nil && !tickAt.IsZero() && !now.Before(tickAt) {
			due := tickAt
			tickAt = time.Time{}
			st := core.Tick(now)
			rearm := st.Timer == TimerNone && every > 0 && core.Status().State == StateActive
			apply(st)
			if rearm {
				tickAt = due.Add(every)
			}
		}
		sort.SliceStable(queue, func(a, b int) bool { return queue[a].at.Before(queue[b].at) })
		for len(queue) > 0 && !queue[0].at.After(now) {
			e := queue[0]
			queue = queue[1:]
			if e.reply {
				pools[e.shard].Add(e.ps, time.Time{})
				continue
			}
			if core != nil && e.uses != nil {
				apply(core.Used(e.at, e.shard, e.uses))
				continue
			}
			if core != nil {
				apply(core.Request(e.at, e.shard, e.want))
			}
		}
		for k, p := range pools {
			if s.lag > 0 && now.Before(look[k]) {
				continue
			}
			spent := 0
			for s.lag == 0 || spent < s.capacity {
				ok, wait := p.Reserve(now)
				if !ok {
					look[k] = now.Add(wait + s.lag)
					break
				}
				out = append(out, now)
				spent++
				look[k] = now.Add(s.lag)
			}
		}
	}
	return out
}

// maxWindow returns the most spends in any half-open window of length w.
func maxWindow(ts []time.Time, w time.Duration) int {
	best, lo := 0, 0
	for hi := range ts {
		for !ts[hi].Before(ts[lo].Add(w)) {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

func maxGap(ts []time.Time) time.Duration {
	var g time.Duration
	for k := 1; k < len(ts); k++ {
		g = max(g, ts[k].Sub(ts[k-1]))
	}
	return g
}

// The master shards' pools share the rate the throttler grants, and a
// successor that replays the journal keeps the bound (no burst: the
// predecessor's grants count) and resumes at once (no pause of a period:
// the gap is the death's detection plus the pools' ask timeout).
func TestPermitPoolsShareTheRate(t *testing.T) {
	cases := []struct {
		sim        simulation
		maxWin     int           // most spends in any window of Per
		minPerSec  float64       // least mean rate
		maxGapWant time.Duration // the strict mode grants in bursts of Calls: gaps of about Per between them
	}{
		{simulation{rate: PerSecond(100), strict: true, shards: 4, rtt: 2 * time.Millisecond, run: 20 * time.Second, tick: time.Millisecond}, 100, 97, 1100 * time.Millisecond},
		{simulation{rate: PerSecond(100), strict: true, shards: 1, rtt: 5 * time.Millisecond, run: 20 * time.Second, tick: time.Millisecond}, 100, 97, 1100 * time.Millisecond},
		{simulation{rate: PerSecond(3), strict: true, shards: 4, rtt: 2 * time.Millisecond, run: 20 * time.Second, tick: time.Millisecond}, 3, 2.9, 1100 * time.Millisecond},
		{simulation{rate: PerSecond(100), shards: 4, rtt: 2 * time.Millisecond, run: 20 * time.Second, tick: time.Millisecond}, 200, 97, 1100 * time.Millisecond},
		{simulation{rate: PerMinute(100), shards: 4, rtt: 2 * time.Millisecond, run: 5 * time.Minute, tick: 10 * time.Millisecond}, 200, 97.0 / 60, time.Minute + 100*time.Millisecond},
		// Failover: the throttler dies at 10 s (mid-window), its successor
		// serves 300 ms later from the journal; the bound holds across, and
		// dispatch resumes within the pools' ask timeout.
		{simulation{rate: PerSecond(100), strict: true, shards: 4, rtt: 2 * time.Millisecond, run: 20 * time.Second, tick: time.Millisecond, failAt: 10*time.Second + 500*time.Millisecond, detect: 300 * time.Millisecond}, 100, 95, 1100 * time.Millisecond},
		{simulation{rate: PerSecond(100), shards: 3, rtt: 2 * time.Millisecond, run: 20 * time.Second, tick: time.Millisecond, failAt: 10*time.Second + 500*time.Millisecond, detect: 300 * time.Millisecond}, 200, 95, 1100 * time.Millisecond},
		// 100/m: a successor 20 s into the period neither bursts nor waits
		// for a period of its own.
		{simulation{rate: PerMinute(100), shards: 4, rtt: 2 * time.Millisecond, run: 5 * time.Minute, tick: 10 * time.Millisecond, failAt: 2*time.Minute + 20*time.Second, detect: 300 * time.Millisecond}, 200, 97.0 / 60, time.Minute + 100*time.Millisecond},
	}
	for _, tc := range cases {
		s := tc.sim
		t.Run(fmt.Sprintf("strict%v/%s/shards%d/fail%s", s.strict, s.rate, s.shards, s.failAt), func(t *testing.T) {
			ts := s.spends(t)
			if len(ts) == 0 {
				t.Fatal("no spends")
			}
			if n := maxWindow(ts, s.rate.Per); n > tc.maxWin {
				t.Errorf("a window of %s held %d spends, want at most %d", s.rate.Per, n, tc.maxWin)
			}
			// The mean over the run: the timer mode's periods each grant
			// Calls, the strict mode's windows Calls per Per+validity.
			span := s.run.Seconds()
			limit := float64(s.rate.Calls) / s.rate.Per.Seconds()
			if r := float64(len(ts)) / span; r < tc.minPerSec || r > limit*1.05 {
				t.Errorf("mean rate %.3f/s, want %.3f..%.3f", r, tc.minPerSec, limit*1.05)
			}
			if g := maxGap(ts); g > tc.maxGapWant {
				t.Errorf("largest gap %s, want at most %s", g, tc.maxGapWant)
			}
			t.Logf("%d spends, max window %d, max gap %s", len(ts), maxWindow(ts, s.rate.Per), maxGap(ts))
		})
	}
}

// Strict permits are spent by masters that look late: a denied Reserve's
// wait plus a worker's round trip, a few permits per look. The throttler
// must grant so that they are spent, not expired: the delivered rate is
// within 1.1% of the limit (measured as the benchmark does, hand-outs less
// one over first to last), and no window of Per holds more than Calls. The
// strict mode's ceiling is Calls per Per+StrictValidity, 99.01% of the
// limit, so 99% itself is met only by a run that loses nothing and whose
// last spend lands on its slot; 98.9% leaves the measurement's rounding. Before,
// the strict FSM granted Calls at one instant, valid for Per/100 only, so
// most expired in the masters' pools (item 5 measured 3-17/s of 100/s).
func TestStrictPermitsAreSpentByLaggingMasters(t *testing.T) {
	cases := []simulation{
		{rate: PerSecond(100), strict: true, shards: 4, rtt: 2 * time.Millisecond, run: 20 * time.Second, tick: time.Millisecond, lag: 5 * time.Millisecond, capacity: 8},
		{rate: PerSecond(100), strict: true, shards: 4, rtt: 4 * time.Millisecond, run: 20 * time.Second, tick: time.Millisecond, lag: 8 * time.Millisecond, capacity: 16},
		{rate: PerSecond(20), strict: true, shards: 1, rtt: 2 * time.Millisecond, run: 20 * time.Second, tick: time.Millisecond, lag: 5 * time.Millisecond, capacity: 4},
		{rate: PerMinute(600), strict: true, shards: 3, rtt: 4 * time.Millisecond, run: 3 * time.Minute, tick: time.Millisecond, lag: 20 * time.Millisecond, capacity: 8},
	}
	for _, s := range cases {
		t.Run(fmt.Sprintf("%s/shards%d/lag%s/cap%d", s.rate, s.shards, s.lag, s.capacity), func(t *testing.T) {
			ts := s.spends(t)
			if len(ts) < 2 {
				t.Fatalf("%d spends", len(ts))
			}
			limit := float64(s.rate.Calls) / s.rate.Per.Seconds()
			r := float64(len(ts)-1) / ts[len(ts)-1].Sub(ts[0]).Seconds()
			// (Not above the limit is the window's check: first to last
			// leaves out the last group's spacing, so a run of a few
			// large groups measures above the limit.)
			if r < 0.989*limit {
				t.Errorf("delivered %.3f/s, want at least %.3f (98.9%% of the limit)", r, 0.989*limit)
			}
			if n := maxWindow(ts, s.rate.Per); n > s.rate.Calls {
				t.Errorf("a window of %s held %d spends, want at most %d", s.rate.Per, n, s.rate.Calls)
			}
			t.Logf("%d spends, %.3f/s, max window %d, max gap %s", len(ts), r, maxWindow(ts, s.rate.Per), maxGap(ts))
		})
	}
}

// In timer mode a pool whose asks take long to be granted (the journal's
// write and two trips under load: 100 ms here) still spends every voucher:
// a pool that runs dry while its ask is in flight asks for more next time.
// Before, it doubled only when dry with no ask in flight, which an ask sent
// at half-empty almost never is, and the run spent 60% of the vouchers.
func TestTimerPermitsKeepUpWithASlowGrant(t *testing.T) {
	s := simulation{rate: PerSecond(100), shards: 4, rtt: 100 * time.Millisecond, run: 20 * time.Second, tick: time.Millisecond, lag: 5 * time.Millisecond, capacity: 8}
	ts := s.spends(t)
	// 20 periods of 100 vouchers; the first starts at the first ask, and
	// the last period's grants reach the pools 50 ms in.
	if len(ts) < 1950 {
		t.Errorf("%d spends in 20 s at 100/s, want at least 1950", len(ts))
	}
	if n := maxWindow(ts, time.Second); n > 200 {
		t.Errorf("a window of 1 s held %d spends, want at most 200 (timer mode)", n)
	}
}

func TestPermitPoolDropsExpiredAndAsksAgainAfterTimeout(t *testing.T) {
	var asks []int
	p := NewPermitPool(func(want int) { asks = append(asks, want) }, time.Second)
	if ok, wait := p.Reserve(t0); ok || wait <= 0 {
		t.Fatalf("empty pool: Reserve = %v, %s; want false and a positive wait", ok, wait)
	}
	if len(asks) != 1 {
		t.Fatalf("asks %v, want one", asks)
	}
	if ok, _ := p.Reserve(t0.Add(500 * time.Millisecond)); ok || len(asks) != 1 {
		t.Fatalf("ask in flight: asks %v, want still one", asks)
	}
	if _, _ = p.Reserve(t0.Add(1100 * time.Millisecond)); len(asks) != 2 {
		t.Fatalf("after the timeout: asks %v, want a second", asks)
	}
	p.Add([]Permit{{NotBefore: t0.Add(2 * time.Second), NotAfter: t0.Add(2*time.Second + 10*time.Millisecond)}}, t0)
	if ok, wait := p.Reserve(t0.Add(1900 * time.Millisecond)); ok || wait != 100*time.Millisecond {
		t.Fatalf("future permit: Reserve = %v, %s; want false, 100ms", ok, wait)
	}
	if ok, _ := p.Reserve(t0.Add(2020 * time.Millisecond)); ok {
		t.Fatal("spent an expired permit")
	}
	if st := p.Stats(); st.Expired != 1 || st.Granted != 0 || st.Held != 0 {
		t.Fatalf("stats %+v, want one expired, none granted or held", st)
	}
}

// TestPermitPoolConcurrentAddAndReserve runs Reserve on one goroutine and
// Add on another, as a master and the throttler's grants do; with -race it
// checks the locking, and every permit added is spent exactly once.
func TestPermitPoolConcurrentAddAndReserve(t *testing.T) {
	const n = 1000
	asks := make(chan int, n)
	p := NewPermitPool(func(want int) {
		select {
		case asks <- want:
		default:
		}
	}, time.Nanosecond)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range n {
			p.Add([]Permit{{NotBefore: t0, NotAfter: t0.Add(time.Hour)}}, t0)
		}
	}()
	spent := 0
	for now := t0; spent < n; now = now.Add(time.Nanosecond) {
		if ok, _ := p.Reserve(now); ok {
			spent++
		}
	}
	<-done
	if st := p.Stats(); st.Granted != n || st.Held != 0 {
		t.Fatalf("stats %+v, want %d granted and none held", st, n)
	}
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// A pool reports each strict permit it spends with the spend time, and
// one that expires unspent with none, from Reserve or, when its master has
// no more work and calls no Reserve, from Sweep.
func TestPermitPoolReportsUses(t *testing.T) {
	var got []PermitUse
	p := NewPermitPool(func(int) {}, time.Second)
	p.ReportUses(func(uses []PermitUse) { got = append(got, uses...) })
	v := 50 * time.Millisecond
	p.Add([]Permit{
		{NotBefore: t0, NotAfter: t0.Add(v), Seq: 7},
		{NotBefore: t0, NotAfter: t0.Add(v), Seq: 8},
		{NotBefore: t0.Add(time.Second), NotAfter: t0.Add(time.Second + v), Seq: 9},
	}, time.Time{})
	ok, _ := p.Reserve(t0.Add(3 * time.Millisecond))
	if !ok {
		t.Fatal("a valid permit was not spent")
	}
	if want := []PermitUse{{Seq: 7, Spent: t0.Add(3 * time.Millisecond)}}; !slices.Equal(got, want) {
		t.Fatalf("after a spend: reported %v, want %v", got, want)
	}
	got = nil
	p.Sweep(t0.Add(v - time.Millisecond))
	if len(got) != 0 {
		t.Fatalf("a permit still valid was reported: %v", got)
	}
	p.Sweep(t0.Add(v + time.Millisecond))
	if want := []PermitUse{{Seq: 8}}; !slices.Equal(got, want) {
		t.Fatalf("after the sweep: reported %v, want %v (expired, no spend time)", got, want)
	}
	if st := p.Stats(); st.Held != 1 || st.Expired != 1 {
		t.Fatalf("stats %+v, want 1 held and 1 expired", st)
	}
}
