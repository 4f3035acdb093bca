package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/journal"
)

// configJournals are the journals the settings record is tested on: each
// opens a fresh, empty one.
var configJournals = []struct {
	name string
	// skip, when set, skips a journal that is not at hand.
	skip func(t *testing.T)
	open func(t *testing.T) persistence.Journal
}{
	{"Memory", nil, func(t *testing.T) persistence.Journal {
		j := journal.NewMemory()
		t.Cleanup(func() { _ = j.Close() })
		return j
	}},
	{"SQLite", nil, func(t *testing.T) persistence.Journal {
		j, err := journal.OpenSQLite(filepath.Join(t.TempDir(), "journal.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = j.Close() })
		return j
	}},
	{"PostgreSQL", skipWithoutPostgres, openFreshPostgres},
}

// skipWithoutPostgres skips, loudly, without a test server.
func skipWithoutPostgres(t *testing.T) {
	if os.Getenv("FOREMAN_TEST_POSTGRES_DSN") == "" {
		t.Skip("SKIPPING the PostgreSQL case: FOREMAN_TEST_POSTGRES_DSN is not set. " +
			`Run: eval "$(bash cluster/journal/ci-postgres.sh)"`)
	}
}

// openFreshPostgres opens a journal in a database of its own on the server
// FOREMAN_TEST_POSTGRES_DSN names: the settings' stream has a fixed name,
// so tests cannot share a database.
func openFreshPostgres(t *testing.T) persistence.Journal {
	t.Helper()
	dsn := os.Getenv("FOREMAN_TEST_POSTGRES_DSN")
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	db := "foreman_cfg_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("FOREMAN_TEST_POSTGRES_DSN is not a postgres:// URL (%v); this test needs one to name its own database", err)
	}
	u.Path = "/" + db
	j, err := journal.OpenPostgres(ctx, u.String(), journal.WithReadConns(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = j.Close()
		if _, err := admin.Exec(ctx, "DROP DATABASE "+db+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping %s: %v", db, err)
		}
		_ = admin.Close(ctx)
	})
	return j
}

// mustLimits parses a rate spec of a test.
func mustLimits(t *testing.T, spec string) []RateLimit {
	t.Helper()
	l, err := ParseRateLimits(spec)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// wantMismatch checks that err is a refusal for the given reasons (nil:
// not that one), naming both values of each.
func wantMismatch(t *testing.T, err error, shards []string, rates []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("started; want a refusal (shards %v, rates %v)", shards, rates)
	}
	if got := errors.Is(err, ErrShardsMismatch); got != (shards != nil) {
		t.Errorf("errors.Is(ErrShardsMismatch) = %v: %v", got, err)
	}
	if got := errors.Is(err, ErrRatesMismatch); got != (rates != nil) {
		t.Errorf("errors.Is(ErrRatesMismatch) = %v: %v", got, err)
	}
	var want []string
	if shards != nil {
		want = append(want, "started with "+shards[0]+" shard(s) (--shards "+shards[0]+") but the journal records "+shards[1],
			"start every node with --shards "+shards[1], "not supported yet")
	}
	if rates != nil {
		want = append(want, "this backend was given "+rates[0]+" but the journal records "+rates[1],
			"start every backend with "+rates[1], "--change-rate")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

// configEvents is how many events ConfigStream holds.
func configEvents(t *testing.T, j persistence.Journal) int64 {
	t.Helper()
	_, _, last, err := loadSettings(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	return last
}

// TestClusterConfigRecord is issue 34 item 10 on real journals: the first
// backend records its number of shards and its rate limits, one with one
// shard and none included (on main a backend with --shards 1 recorded
// nothing, so a second one with --shards 4 started beside it); a backend
// that differs in either refuses, naming both values of each; the same
// limits written another way agree; --change-rate replaces the limits.
func TestClusterConfigRecord(t *testing.T) {
	ctx := context.Background()
	const none = "no --rate (no limits)"
	for _, jc := range configJournals {
		t.Run(jc.name, func(t *testing.T) {
			if jc.skip != nil {
				jc.skip(t)
			}
			t.Run("FirstStartRecordsThenEnforced", func(t *testing.T) {
				j := jc.open(t)
				check, err := checkClusterConfig(ctx, j, 1, nil, false)
				if err != nil || !check.recorded {
					t.Fatalf("first start: %+v, %v; want recorded", check, err)
				}
				_, err = checkClusterConfig(ctx, j, 4, nil, false)
				wantMismatch(t, err, []string{"4", "1"}, nil)
				_, err = checkClusterConfig(ctx, j, 1, mustLimits(t, "square=10/s"), false)
				wantMismatch(t, err, nil, []string{`--rate "square=10/s"`, none})
				_, err = checkClusterConfig(ctx, j, 4, mustLimits(t, "square=10/s"), false)
				wantMismatch(t, err, []string{"4", "1"}, []string{`--rate "square=10/s"`, none})
				check, err = checkClusterConfig(ctx, j, 1, nil, false)
				if err != nil || check.recorded {
					t.Fatalf("same settings again: %+v, %v; want agreed, nothing recorded", check, err)
				}
				if n := configEvents(t, j); n != 1 {
					t.Fatalf("%s holds %d events, want 1", ConfigStream, n)
				}
			})
			t.Run("RatesCompareByMeaning", func(t *testing.T) {
				j := jc.open(t)
				if _, err := checkClusterConfig(ctx, j, 4, mustLimits(t, "square=60/m:strict, factorize=1/s"), false); err != nil {
					t.Fatal(err)
				}
				if _, err := checkClusterConfig(ctx, j, 4, mustLimits(t, "factorize=1/sec,square=60/1m0s:strict"), false); err != nil {
					t.Fatalf("the same limits written another way: %v", err)
				}
				_, err := checkClusterConfig(ctx, j, 4, mustLimits(t, "square=60/m,factorize=1/s"), false)
				wantMismatch(t, err, nil, []string{`--rate "factorize=1/s,square=60/m"`, `--rate "factorize=1/s,square=60/m:strict"`})
			})
			t.Run("ChangeRates", func(t *testing.T) {
				j := jc.open(t)
				if _, err := checkClusterConfig(ctx, j, 2, mustLimits(t, "square=10/s"), false); err != nil {
					t.Fatal(err)
				}
				// A change with the wrong number of shards writes nothing.
				_, err := checkClusterConfig(ctx, j, 3, mustLimits(t, "square=20/s"), true)
				wantMismatch(t, err, []string{"3", "2"}, nil)
				if n := configEvents(t, j); n != 1 {
					t.Fatalf("a refused change wrote: %d events", n)
				}
				check, err := checkClusterConfig(ctx, j, 2, mustLimits(t, "square=20/s"), true)
				if err != nil || !check.changed || check.ratesBefore != "square=10/s" {
					t.Fatalf("change: %+v, %v; want changed from square=10/s", check, err)
				}
				_, err = checkClusterConfig(ctx, j, 2, mustLimits(t, "square=10/s"), false)
				wantMismatch(t, err, nil, []string{`--rate "square=10/s"`, `--rate "square=20/s"`})
				check, err = checkClusterConfig(ctx, j, 2, mustLimits(t, "square=20/s"), true)
				if err != nil || check.recorded {
					t.Fatalf("--change-rate with the recorded limits: %+v, %v; want nothing written", check, err)
				}
				if _, err := checkClusterConfig(ctx, j, 2, nil, true); err != nil {
					t.Fatalf("changing to no limits: %v", err)
				}
				_, err = checkClusterConfig(ctx, j, 2, mustLimits(t, "square=20/s"), false)
				wantMismatch(t, err, nil, []string{`--rate "square=20/s"`, none})
			})
			t.Run("JournalFromBefore", func(t *testing.T) {
				// An unsharded journal its master wrote: one shard.
				j := jc.open(t)
				epoch, _, err := j.AcquireEpoch(ctx, master.DefaultStream)
				if err != nil {
					t.Fatal(err)
				}
				if err := j.Append(ctx, master.DefaultStream, epoch, []persistence.Event{{Seq: 1, Msg: wrapperspb.String("x")}}); err != nil {
					t.Fatal(err)
				}
				_, err = checkClusterConfig(ctx, j, 4, nil, false)
				wantMismatch(t, err, []string{"4", "1"}, nil)
				if _, err := checkClusterConfig(ctx, j, 1, mustLimits(t, "square=5/s"), false); err != nil {
					t.Fatalf("one shard on an unsharded journal: %v", err)
				}
				_, err = checkClusterConfig(ctx, j, 1, nil, false)
				wantMismatch(t, err, nil, []string{none, `--rate "square=5/s"`})

				// A sharded one that recorded N in ShardsStream.
				j = jc.open(t)
				epoch, _, err = j.AcquireEpoch(ctx, ShardsStream)
				if err != nil {
					t.Fatal(err)
				}
				if err := j.Append(ctx, ShardsStream, epoch, []persistence.Event{{Seq: 1, Msg: wrapperspb.Int64(4)}}); err != nil {
					t.Fatal(err)
				}
				_, err = checkClusterConfig(ctx, j, 1, nil, false)
				wantMismatch(t, err, []string{"1", "4"}, nil)
				if _, err := checkClusterConfig(ctx, j, 4, nil, false); err != nil {
					t.Fatalf("four shards on a journal recording four: %v", err)
				}
				_, err = checkClusterConfig(ctx, j, 4, mustLimits(t, "square=5/s"), false)
				wantMismatch(t, err, nil, []string{`--rate "square=5/s"`, none})
			})
			t.Run("ConcurrentFirstStarts", func(t *testing.T) {
				// Backends starting at the same moment on a fresh journal,
				// each with other settings: one records, every other one
				// refuses, naming the winner's values.
				settings := []struct {
					shards int
					rate   string
				}{{1, ""}, {4, "square=10/s"}, {2, "square=1/m"}, {8, "factorize=3/s"}}
				for round := range 5 {
					j := jc.open(t)
					var (
						wg   sync.WaitGroup
						errs = make([]error, len(settings))
					)
					start := make(chan struct{})
					for i, s := range settings {
						limits := mustLimits(t, s.rate)
						wg.Go(func() {
							<-start
							_, errs[i] = checkClusterConfig(ctx, j, s.shards, limits, false)
						})
					}
					close(start)
					wg.Wait()
					winner := -1
					for i, err := range errs {
						if err == nil {
							if winner >= 0 {
								t.Fatalf("round %d: backends %d and %d both started", round, winner, i)
							}
							winner = i
						}
					}
					if winner < 0 {
						t.Fatalf("round %d: no backend started: %v", round, errs)
					}
					w := settings[winner]
					for i, err := range errs {
						if i == winner {
							continue
						}
						s := settings[i]
						wantMismatch(t, err, []string{fmt.Sprint(s.shards), fmt.Sprint(w.shards)},
							[]string{rateFlag(s.rate), rateFlag(w.rate)})
					}
					if n := configEvents(t, j); n != 1 {
						t.Fatalf("round %d: %s holds %d events, want 1", round, ConfigStream, n)
					}
				}
			})
		})
	}
}
