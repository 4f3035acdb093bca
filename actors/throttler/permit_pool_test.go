package throttler

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

// simulation drives shards PermitPools against one Issuer on a manual
// clock: every shard always has work and calls Reserve each tick; asks
// reach the issuer after rtt/2 and replies come back after another rtt/2.
// At failAt (if set) the issuer dies with every ask in flight; a new one
// is activated detect later. It returns the spend times.
type simulation struct {
	rate    Rate
	mode    Mode
	shards  int
	rtt     time.Duration
	run     time.Duration
	failAt  time.Duration
	detect  time.Duration
	tick    time.Duration
	startAt time.Duration // first activation, since t0
}

type event struct {
	at    time.Time
	shard int
	want  int  // an ask arriving at the issuer
	reply bool // a reply arriving at the shard
	ps    []Permit
	again time.Time
}

func (s simulation) spends(t *testing.T) []time.Time {
	t.Helper()
	opts := []IssuerOption{WithIssuerMode(s.mode)}
	is, err := NewIssuer(s.rate, t0.Add(s.startAt), opts...)
	if err != nil {
		t.Fatal(err)
	}
	var queue []event
	var now time.Time
	pools := make([]*PermitPool, s.shards)
	for k := range pools {
		pools[k] = NewPermitPool(func(want int) {
			queue = append(queue, event{at: now.Add(s.rtt / 2), shard: k, want: want})
		}, 0)
	}
	var out []time.Time
	failed := false
	for now = t0; now.Before(t0.Add(s.run)); now = now.Add(s.tick) {
		if s.failAt > 0 && !failed && !now.Before(t0.Add(s.failAt)) {
			failed = true
			queue = nil // asks and replies in flight are lost
			if is, err = NewIssuer(s.rate, now.Add(s.detect), opts...); err != nil {
				t.Fatal(err)
			}
		}
		sort.SliceStable(queue, func(a, b int) bool { return queue[a].at.Before(queue[b].at) })
		for len(queue) > 0 && !queue[0].at.After(now) {
			e := queue[0]
			queue = queue[1:]
			if e.reply {
				pools[e.shard].Add(e.ps, e.again)
				continue
			}
			if failed && e.at.Before(is.Open().Add(-is.holdOff())) {
				continue // the new issuer is not yet placed
			}
			ps, again := is.Grant(e.at, e.want)
			queue = append(queue, event{at: e.at.Add(s.rtt / 2), shard: e.shard, reply: true, ps: ps, again: again})
		}
		for _, p := range pools {
			for {
				ok, _ := p.Reserve(now)
				if !ok {
					break
				}
				out = append(out, now)
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

func TestPermitPoolsShareTheRate(t *testing.T) {
	cases := []struct {
		sim        simulation
		maxWin     int     // most spends in any window of Per
		minPerSec  float64 // least mean rate after the hold-off
		maxGapWant time.Duration
	}{
		{simulation{rate: PerSecond(100), mode: ModeSlidingWindow, shards: 4, rtt: 2 * time.Millisecond, run: 20 * time.Second, tick: time.Millisecond}, 100, 97, 1100 * time.Millisecond},
		{simulation{rate: PerSecond(100), mode: ModeSlidingWindow, shards: 1, rtt: 5 * time.Millisecond, run: 20 * time.Second, tick: time.Millisecond}, 100, 97, 1100 * time.Millisecond},
		{simulation{rate: PerSecond(3), mode: ModeSlidingWindow, shards: 4, rtt: 2 * time.Millisecond, run: 20 * time.Second, tick: time.Millisecond}, 3, 2.9, 1100 * time.Millisecond},
		{simulation{rate: PerSecond(100), mode: ModeTimer, shards: 4, rtt: 2 * time.Millisecond, run: 20 * time.Second, tick: time.Millisecond}, 200, 97, 1100 * time.Millisecond},
		// Failover: the issuer dies at 10 s, its successor is activated
		// 300 ms later and holds off; the bound holds across.
		{simulation{rate: PerSecond(100), mode: ModeSlidingWindow, shards: 4, rtt: 2 * time.Millisecond, run: 20 * time.Second, tick: time.Millisecond, failAt: 10 * time.Second, detect: 300 * time.Millisecond}, 100, 90, 3 * time.Second},
		{simulation{rate: PerSecond(100), mode: ModeTimer, shards: 3, rtt: 2 * time.Millisecond, run: 20 * time.Second, tick: time.Millisecond, failAt: 10 * time.Second, detect: 300 * time.Millisecond}, 200, 90, 3 * time.Second},
	}
	for _, tc := range cases {
		s := tc.sim
		t.Run(fmt.Sprintf("%s/%s/shards%d/fail%s", s.mode, s.rate, s.shards, s.failAt), func(t *testing.T) {
			ts := s.spends(t)
			if len(ts) == 0 {
				t.Fatal("no spends")
			}
			if n := maxWindow(ts, s.rate.Per); n > tc.maxWin {
				t.Errorf("a window of %s held %d spends, want at most %d", s.rate.Per, n, tc.maxWin)
			}
			if s.mode == ModeTimer {
				// Aligned periods from the first activation's open.
				counts := map[int64]int{}
				for _, x := range ts {
					counts[int64(x.Sub(t0.Add(s.rate.Per))/s.rate.Per)]++
				}
				for k, n := range counts {
					if n > s.rate.Calls && s.failAt == 0 {
						t.Errorf("period %d held %d spends, want at most %d", k, n, s.rate.Calls)
					}
				}
			}
			// The mean from the first spend to the end of the run; the
			// strict mode hands out bursts, so edges weigh up to one burst.
			span := t0.Add(s.run).Sub(ts[0]).Seconds()
			limit := float64(s.rate.Calls) / s.rate.Per.Seconds()
			if r := float64(len(ts)) / span; r < tc.minPerSec || r > limit*1.05 {
				t.Errorf("mean rate %.2f/s, want %.2f..%.2f", r, tc.minPerSec, limit*1.05)
			}
			if g := maxGap(ts); g > tc.maxGapWant {
				t.Errorf("largest gap %s, want at most %s", g, tc.maxGapWant)
			}
			t.Logf("%d spends, max window %d, max gap %s", len(ts), maxWindow(ts, s.rate.Per), maxGap(ts))
		})
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
// Add on another, as a master and an issuer's reply do; with -race it
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
