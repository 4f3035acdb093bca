package sim

import (
	"os"
	"runtime"
	"strconv"
	"testing"
)

// TestFairSeeds runs seeds of the default cluster and fault mix with
// fairness keys (Config.Fair): fairness_bounded, and every other
// invariant, must hold (SIM_FAIR_SEEDS of them from SIM_FAIR_FROM, 100
// from 1 by default, 20 with -short).
func TestFairSeeds(t *testing.T) {
	n, from := 100, uint64(1)
	if testing.Short() {
		n = 20
	}
	if s := os.Getenv("SIM_FAIR_SEEDS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	if s := os.Getenv("SIM_FAIR_FROM"); s != "" {
		from, _ = strconv.ParseUint(s, 10, 64)
	}
	cfg := DefaultConfig()
	cfg.Fair = true
	acked := 0
	failed, err := Search(t.Context(), cfg, Seeds(from, n), runtime.GOMAXPROCS(0), func(_ int, rep Report) { acked += rep.Acked })
	if err != nil {
		t.Fatal(err)
	}
	if failed != nil {
		t.Fatalf("seed %d: %v\n%s", failed.Seed, failed.Violation, failed.Trace)
	}
	t.Logf("%d seeds with fairness keys from %d, %d acked submissions", n, from, acked)
}

// TestFairScheduleSeeds runs seeds with keyed jobs, fairness keys and the
// scheduler's ticks together (Config.Keys, Fair and Schedules, as `foreman
// sim --keys --fair --schedules`): every invariant must hold
// (SIM_FAIR_SCHED_SEEDS of them from SIM_FAIR_SCHED_FROM, 50 from 1 by
// default, 10 with -short).
func TestFairScheduleSeeds(t *testing.T) {
	n, from := 50, uint64(1)
	if testing.Short() {
		n = 10
	}
	if s := os.Getenv("SIM_FAIR_SCHED_SEEDS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	if s := os.Getenv("SIM_FAIR_SCHED_FROM"); s != "" {
		from, _ = strconv.ParseUint(s, 10, 64)
	}
	cfg := DefaultConfig()
	cfg.Keys, cfg.Fair, cfg.Schedules = true, true, true
	acked := 0
	failed, err := Search(t.Context(), cfg, Seeds(from, n), runtime.GOMAXPROCS(0), func(_ int, rep Report) { acked += rep.Acked })
	if err != nil {
		t.Fatal(err)
	}
	if failed != nil {
		t.Fatalf("seed %d: %v\n%s", failed.Seed, failed.Violation, failed.Trace)
	}
	t.Logf("%d seeds with keys, fairness keys and schedules from %d, %d acked submissions", n, from, acked)
}

// TestFairScheduleRegressionSeeds keeps the seeds (with Config.Keys, Fair
// and Schedules) that found bugs; each must pass now.
//   - 7000026: fairness_bounded took a work's fairness key from its id
//     (fairKeyOf, the workload's draw) instead of the key the work
//     carries. The scheduler's tick jobs carry none, so the master files
//     them in the lane "", but sched:pause:1767225600 hashed to "a" and
//     sched:beat:1767225600 to "f": the hand-out of sched:beat (the lane
//     "" taking its turn) was counted against sched:pause as a second
//     hand-out of other keys, and the fourth broke sched:pause's bound 3
//     as if it were "a"'s (the invariant's, fixed: it reads the key from
//     the master's state; the master's rotation was right). Seed 16: the
//     same, sched:pause:1767225601 hashing to "" but the ticks
//     sched:gone:1767225602 and sched:beat:1767225601 to "b", so the lane
//     ""'s two turns counted as 2 of the 5 hand-outs of other keys.
//   - 7000312: key_rate_held dated each hand-out of key k0 at its send
//     instead of its master's decision: with Schedules the backends are
//     schedHosts, which decidedAt's assertion to *backendHost skipped, so
//     it found no master and fell back to the send's time. A one-way
//     partition held back b1's journal confirmations for 240 ms, so
//     flood0n39~1, decided at about 2,024 ms, went out at 2,271 ms, and six
//     hand-outs 1,001 ms apart on b1's clock counted as six within 758 ms
//     (the invariant's, fixed: decidedAt finds the masters of either
//     host; the master kept its rate).
func TestFairScheduleRegressionSeeds(t *testing.T) {
	for _, seed := range []uint64{16, 7000026, 7000312} {
		cfg := DefaultConfig()
		cfg.Seed, cfg.Keys, cfg.Fair, cfg.Schedules = seed, true, true, true
		rep, err := Run(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Failed() {
			t.Errorf("seed %d: %v\n%s", seed, rep.Violation, rep.Trace)
		}
	}
}
