package sim

import (
	"os"
	"strconv"
	"testing"

	fecore "github.com/foreman-actors/foreman/actors/frontend/core"
	mcore "github.com/foreman-actors/foreman/actors/master/core"
	pcore "github.com/foreman-actors/foreman/actors/persistence/core"
	schedcore "github.com/foreman-actors/foreman/actors/schedule/core"
)

// plantedCases are the known bug shapes, the invariant that must
// catch each, and within how many seeds (1..within) of the default
// cluster and fault mix it must be caught. How often each is caught over
// seeds 1..300 is a figure, measured by TestPlantedCatchRates and kept in
// BENCHMARKS.md, not here, where it went stale.
var plantedCases = []struct {
	name   string
	bugs   Bugs
	inv    string
	within uint64
	keys   bool // Config.Keys: the workload uses unique and concurrency keys
	fair   bool // Config.Fair: the workload uses fairness keys
	sched  bool // Config.Schedules: the scheduler and its schedules run
}{
	{"lease last-chance overlap", Bugs{Lease: pcore.LastChanceOverlap}, OneServerAtATime{}.Name(), 30, false, false, false},
	{"hand-out before acceptance durable", Bugs{Master: mcore.HandOutBeforeDurable}, DurableBeforeHandOut{}.Name(), 5, false, false, false},
	{"ack before fsync", Bugs{Master: mcore.AckBeforeFsync}, AckedEndsFinal{}.Name(), 5, false, false, false},
	{"duplicate keeps first waiter", Bugs{Master: mcore.DuplicateKeepsFirstWaiter}, CancelledOnlyWhenAbandoned{}.Name(), 60, false, false, false},
	{"results deduplicated by id", Bugs{Dedupe: fecore.DedupeByIDOnly}, FeedExactlyOnce{}.Name(), 20, false, false, false},
	{"delayed work handed out early", Bugs{Master: mcore.HandOutEarly}, NeverEarly{}.Name(), 10, false, false, false},
	{"concurrency limit ignored", Bugs{Master: mcore.ConcurrencyLimitIgnored}, ConcurrencyLimitHeld{}.Name(), 10, true, false, false},
	{"unique key ignored", Bugs{Master: mcore.UniqueKeyIgnored}, UniqueNeverTwice{}.Name(), 10, true, false, false},
	{"fairness keys ignored", Bugs{Master: mcore.FairnessIgnored}, FairnessBounded{}.Name(), 10, false, true, false},
	{"tick id from the fire time", Bugs{Schedule: schedcore.IDFromFireTime}, TickAtMostOnce{}.Name(), 60, false, false, true},
	{"fired ticks forgotten at recovery", Bugs{Schedule: schedcore.ForgetsFiredAtRecovery}, TickAtMostOnce{}.Name(), 30, false, false, true},
	{"ticks fired early", Bugs{Schedule: schedcore.FiresEarly}, TickNeverEarly{}.Name(), 5, false, false, true},
	{"skip fires a missed tick", Bugs{Schedule: schedcore.SkipFiresMissed}, TickFired{}.Name(), 60, false, false, true},
	{"key rate ignored", Bugs{Master: mcore.KeyRateIgnored}, (&KeyRateHeld{}).Name(), 10, true, false, false},
	{"key rate forgotten at recovery", Bugs{Master: mcore.KeyRateForgotten}, (&KeyRateHeld{}).Name(), 200, true, false, false},
}

// TestPlantedBugsAreCaught proves the search can fail: each planted bug
// breaks its invariant within the stated number of seeds.
func TestPlantedBugsAreCaught(t *testing.T) {
	for _, c := range plantedCases {
		t.Run(c.name, func(t *testing.T) {
			for seed := uint64(1); seed <= c.within; seed++ {
				cfg := DefaultConfig()
				cfg.Seed, cfg.Planted, cfg.Keys, cfg.Fair, cfg.Schedules = seed, c.bugs, c.keys, c.fair, c.sched
				rep, err := Run(t.Context(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Violation == nil {
					continue
				}
				if rep.Violation.Invariant != c.inv {
					t.Fatalf("seed %d broke %s, not %s: %v", seed, rep.Violation.Invariant, c.inv, rep.Violation)
				}
				if os.Getenv("SIM_VERBOSE") != "" {
					t.Logf("caught at seed %d: %v", seed, rep.Violation)
				}
				return
			}
			t.Fatalf("not caught within %d seeds", c.within)
		})
	}
}

// TestPlantedCatchRates measures, for each planted bug, how many of the
// first SIM_RATE_SEEDS seeds catch it (for the figures in the report).
func TestPlantedCatchRates(t *testing.T) {
	s := os.Getenv("SIM_RATE_SEEDS")
	if s == "" {
		t.Skip("set SIM_RATE_SEEDS to measure")
	}
	n, _ := strconv.ParseUint(s, 10, 64)
	for _, c := range plantedCases {
		caught, first := 0, uint64(0)
		for seed := uint64(1); seed <= n; seed++ {
			cfg := DefaultConfig()
			cfg.Seed, cfg.Planted, cfg.Keys, cfg.Fair, cfg.Schedules = seed, c.bugs, c.keys, c.fair, c.sched
			rep, err := Run(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Violation != nil && rep.Violation.Invariant == c.inv {
				caught++
				if first == 0 {
					first = seed
				}
			}
		}
		t.Logf("%-36s caught by %d of %d seeds (first: seed %d)", c.name, caught, n, first)
	}
}
