package sim

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestSeeds runs a fixed set of seeds of the default cluster and fault
// mix (SIM_SEEDS of them from SIM_FIRST, 200 from 1 by default, 20 with
// -short) on every core:
// every invariant must hold in each. CI's long search sets SIM_SEEDS.
func TestSeeds(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 20
	}
	if s := os.Getenv("SIM_SEEDS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	first := uint64(1)
	if s := os.Getenv("SIM_FIRST"); s != "" {
		first, _ = strconv.ParseUint(s, 10, 64)
	}
	seeds := Seeds(first, n)
	start := time.Now()
	var events int
	var total Report
	faults := map[string]int{}
	failed, err := Search(t.Context(), DefaultConfig(), seeds, runtime.GOMAXPROCS(0), func(_ int, rep Report) {
		events += rep.Events
		total.Acked += rep.Acked
		total.Done += rep.Done
		total.Dead += rep.Dead
		total.Cancelled += rep.Cancelled
		for _, f := range rep.Faults {
			faults[f.Kind] += f.Count
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if failed != nil {
		t.Fatalf("seed %d: %v\n%s", failed.Seed, failed.Violation, failed.Trace)
	}
	el := time.Since(start)
	t.Logf("%d seeds in %v (%.0f schedules/s, %d events); acked %d, done %d, dead %d, cancelled %d; faults %v",
		n, el, float64(n)/el.Seconds(), events, total.Acked, total.Done, total.Dead, total.Cancelled, faults)
}

// TestReplaySeed replays one seed with its full trace, for debugging:
// SIM_SEED=S SIM_TRACE=/path go test -run TestReplaySeed ./actors/sim/
func TestReplaySeed(t *testing.T) {
	s := os.Getenv("SIM_SEED")
	if s == "" {
		t.Skip("set SIM_SEED (and SIM_TRACE) to replay a seed")
	}
	seed, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Seed = seed
	cfg.Keys = os.Getenv("SIM_KEYS") != "" // keyed jobs (keys_test.go)
	cfg.Fair = os.Getenv("SIM_FAIR") != "" // fairness keys (fair_test.go)
	if p := os.Getenv("SIM_TRACE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := f.Close(); err != nil {
				t.Error(err)
			}
		}()
		cfg.Trace = f
	}
	rep, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rep)
}

// TestRegressionSeeds keeps the seeds that found bugs while the simulator
// was built; each must pass now.
//   - 1: a timer armed on a drifting clock fired a nanosecond early on
//     the node's clock and was re-armed for the same instant forever (the
//     runner's clock conversion, fixed: rounded up); then a reply held for
//     an Append was sent when a later batch was confirmed, though its own
//     batch had failed (the runner's, fixed).
//   - 612: a reply held for an Append with the master's token 0 (hand-out
//     records) left when an earlier token-0 Append was confirmed (the
//     runner's, fixed: runner tokens of its own).
//   - 44: a work whose WorkCompleted write failed was requeued by the
//     recovery and handed out for attempt 4 of 3 (the master's, fixed: a
//     hand-out a failover takes back is not an attempt). Once the
//     workload changed, seed 27 is the one that shows it: attempt 4 of 3
//     after b0 took master/0 over while attempt 3 ran.
//   - 25: a worker that got no answer from a waiter it could not reach
//     cancelled a job whose caller still waited (by design: unreachable
//     waiters count as gone; the invariant judges explicit answers).
//   - 1346: a worker paused between asking a waiter and hearing "still
//     interested" ran the job after its caller had left, and the
//     invariant judged it by another worker's later question (the
//     invariant's, fixed: each passage's own question).
//   - 1716: a worker that did not hear from the second caller's waiter in
//     time dropped that waiter (WaiterLeft) though its caller waited, and
//     the job was then cancelled by the first caller's "no" (by design: a
//     waiter not heard from counts as gone; reported). Seed 3180: the same,
//     the cut-off caller's Ack arriving after the cut (the invariant's
//     accounting, fixed).
//   - 8355: b0's lease take was granted, then b0 paused 1.3 s before it
//     handled the answer; its lease had lapsed and b2 held it, yet b0
//     went on to load and took epoch 2, fencing the rightful holder
//     (persistence/core's Session and persistence.Runtime, fixed: a grant
//     handled after it could have lapsed counts for nothing). Seeds 11585
//     and 14599: the same, after pauses of 1.35 s and 0.85 s.
//   - 1001288: a status answer b2 decided inside its lease was held for
//     an earlier append's durability, whose confirmation reached b2 only
//     after a pause, past the lease; the invariant judged the answer when
//     it left (the invariant's, fixed: an answer counts when decided).
//   - 1015389: two callers waited; the second left, the worker said so
//     and the work went out again through the first's waiter; a
//     duplicate of the earlier hand-out reached the same worker, which
//     asked the gone caller again and reported "cancelled" once more, and
//     the master cancelled the work the first caller still waited for
//     (the master's, fixed: a cancellation names the waiter asked, and
//     one about a waiter no longer the work's changes nothing).
//   - 1018802: w2 restarted at its address and watched another job's
//     waiter under the watch name its earlier incarnation had used; that
//     earlier job's waiter, whose caller left, told the name "no" without
//     naming the work, and w2 cancelled the job whose caller still
//     waited (waiter/core's, fixed: the unasked "no" names the work the
//     worker asked about, and a gate drops a "no" for another work).
//   - 1019575: w1 paused 1 s right after it asked for work; the hand-out of
//     attempt 3, sent at 636 ms, reached it at 1,635 ms, after the work
//     timeout had made the job dead (its third failure) at 1,615 ms. The
//     invariant counted the late delivery as a fourth hand-out (the
//     invariant's, fixed: a hand-out is judged by the failures the master
//     knew of when it sent it; a late one is a slow worker's attempt).
func TestRegressionSeeds(t *testing.T) {
	for _, seed := range []uint64{1, 25, 27, 44, 612, 1346, 1716, 3180, 8355, 11585, 14599, 1001288, 1015389, 1018802, 1019575} {
		cfg := DefaultConfig()
		cfg.Seed = seed
		rep, err := Run(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Failed() {
			t.Errorf("seed %d: %v\n%s", seed, rep.Violation, rep.Trace)
		}
	}
}
