package sim

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// TestSeeds runs a fixed set of seeds of the default cluster and fault
// mix: every invariant must hold in each.
func TestSeeds(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 20
	}
	if s := os.Getenv("SIM_SEEDS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	start := time.Now()
	var events int
	var total Report
	faults := map[string]int{}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		cfg := DefaultConfig()
		cfg.Seed = seed
		rep, err := Run(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		events += rep.Events
		total.Acked += rep.Acked
		total.Done += rep.Done
		total.Dead += rep.Dead
		total.Cancelled += rep.Cancelled
		for _, f := range rep.Faults {
			faults[f.Kind] += f.Count
		}
		if rep.Failed() {
			t.Fatalf("seed %d: %v\n%s", seed, rep.Violation, rep.Trace)
		}
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
	if p := os.Getenv("SIM_TRACE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cfg.Trace = f
	}
	rep, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rep)
}
