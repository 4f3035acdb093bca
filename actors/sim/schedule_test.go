package sim

import (
	"os"
	"runtime"
	"strconv"
	"testing"
)

// TestScheduleSeeds runs seeds of the default cluster and fault mix with
// the scheduler and its schedules (Config.Schedules): tick_at_most_once,
// tick_never_early, tick_fired and every other invariant must hold
// (SIM_SCHED_SEEDS of them, 100 by default, 20 with -short).
func TestScheduleSeeds(t *testing.T) {
	n := 100
	if testing.Short() {
		n = 20
	}
	if s := os.Getenv("SIM_SCHED_SEEDS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	cfg := DefaultConfig()
	cfg.Schedules = true
	acked := 0
	failed, err := Search(t.Context(), cfg, Seeds(1, n), runtime.GOMAXPROCS(0), func(_ int, rep Report) { acked += rep.Acked })
	if err != nil {
		t.Fatal(err)
	}
	if failed != nil {
		t.Fatalf("seed %d: %v\n%s", failed.Seed, failed.Violation, failed.Trace)
	}
	t.Logf("%d seeds with schedules, %d acked submissions", n, acked)
}

// TestScheduleRegressionSeeds keeps the seeds (with Config.Schedules) that
// found bugs; each must pass now.
//   - 6000003: the admin asked to pause a schedule, and asked again while
//     the first request's SchedulePaused was still being written; the
//     scheduler answered the second at once from its memory ("already
//     paused", nothing to record), the write then failed, and the
//     recovered scheduler ran the schedule the admin was told is paused
//     (actors/schedule's shell, and the simulator's adapter that mirrors
//     it, answered a request that records nothing before the events
//     persisted ahead of it were durable).
//   - 6000457: a tick's job ran out of attempts and died while the
//     scheduler's retried submission of the tick was in flight; the retry
//     reached the master, which runs a dead id submitted again, and the tick
//     ran twice (the scheduler now submits its ticks with Work.once).
func TestScheduleRegressionSeeds(t *testing.T) {
	for _, seed := range []uint64{6000003, 6000457} {
		cfg := DefaultConfig()
		cfg.Seed, cfg.Schedules = seed, true
		rep, err := Run(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Failed() {
			t.Errorf("seed %d: %v\n%s", seed, rep.Violation, rep.Trace)
		}
	}
}
