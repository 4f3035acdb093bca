package sim

import (
	"os"
	"runtime"
	"strconv"
	"testing"
)

// TestKeysSeeds runs seeds of the default cluster and fault mix with keyed
// jobs (Config.Keys): unique_never_twice and concurrency_limit_held, and
// every other invariant, must hold (SIM_KEY_SEEDS of them, 100 by default,
// 20 with -short).
func TestKeysSeeds(t *testing.T) {
	n := 100
	if testing.Short() {
		n = 20
	}
	if s := os.Getenv("SIM_KEY_SEEDS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	cfg := DefaultConfig()
	cfg.Keys = true
	keyed := 0
	failed, err := Search(t.Context(), cfg, Seeds(1, n), runtime.GOMAXPROCS(0), func(_ int, rep Report) { keyed += rep.Acked })
	if err != nil {
		t.Fatal(err)
	}
	if failed != nil {
		t.Fatalf("seed %d: %v\n%s", failed.Seed, failed.Violation, failed.Trace)
	}
	t.Logf("%d seeds with keyed jobs, %d acked submissions", n, keyed)
}
