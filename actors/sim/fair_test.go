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
