package persistence_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/persistence/core"
	"github.com/foreman-actors/foreman/cluster/journal"
)

// TestCoreStreamIsTheBackends drives the journal model the simulator uses
// (core.Stream) and the real backends that decide leases in Go (Memory,
// SQLite) through the same seeded sequences of leases, releases, epochs
// and appends on one manual clock, and requires the same answers: the
// model's lease and fencing are the backends'.
func TestCoreStreamIsTheBackends(t *testing.T) {
	t.Parallel()
	for _, backend := range []struct {
		name string
		open func(t *testing.T, clk clock.Clock) persistence.Journal
	}{
		{"Memory", func(_ *testing.T, clk clock.Clock) persistence.Journal {
			return journal.NewMemory(journal.WithClock(clk))
		}},
		{"SQLite", func(t *testing.T, clk clock.Clock) persistence.Journal {
			j, err := journal.OpenSQLite(filepath.Join(t.TempDir(), "j.db"), journal.WithClock(clk))
			require.NoError(t, err)
			return j
		}},
	} {
		t.Run(backend.name, func(t *testing.T) {
			t.Parallel()
			for seed := range uint64(10) {
				clk := clock.NewManual(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
				j := backend.open(t, clk)
				compareStream(t, seed, clk, j)
				require.NoError(t, j.Close())
			}
		})
	}
}

func compareStream(t *testing.T, seed uint64, clk *clock.Manual, j persistence.Journal) {
	t.Helper()
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(seed, 35))
	var model core.Stream
	var epochs []int64 // every epoch handed out, to write with old ones too
	holders := []string{"a", "b", "c"}
	for i := range 300 {
		op := fmt.Sprintf("seed %d op %d", seed, i)
		switch rng.IntN(6) {
		case 0, 1:
			h, d := holders[rng.IntN(len(holders))], time.Duration(1+rng.IntN(300))*time.Millisecond
			if rng.IntN(2) == 0 {
				d = time.Duration(1+rng.IntN(6)) * 50 * time.Millisecond // so that expiries fall on the instants asked at
			}
			want, wantOK := model.Lease(clk.Now(), h, d)
			got, err := j.Lease(ctx, stream, h, d)
			if wantOK {
				require.NoError(t, err, op)
			} else {
				require.ErrorIs(t, err, persistence.ErrLeaseHeld, op)
			}
			require.Equal(t, want, core.LeaseState(got), op)
		case 2:
			h := holders[rng.IntN(len(holders))]
			model.ReleaseLease(h)
			require.NoError(t, j.ReleaseLease(ctx, stream, h), op)
		case 3:
			if rng.IntN(2) == 0 {
				clk.Advance(time.Duration(rng.IntN(200)) * time.Millisecond)
			} else {
				clk.Advance(time.Duration(rng.IntN(4)) * 50 * time.Millisecond)
			}
		case 4:
			wantEpoch, wantLast := model.AcquireEpoch()
			epoch, last, err := j.AcquireEpoch(ctx, stream)
			require.NoError(t, err, op)
			require.Equal(t, [2]int64{wantEpoch, wantLast}, [2]int64{epoch, last}, op)
			epochs = append(epochs, epoch)
		case 5:
			if len(epochs) == 0 {
				continue
			}
			epoch := epochs[len(epochs)-1-min(rng.IntN(3), len(epochs)-1)]
			first, n := model.LastSeq()+1-int64(rng.IntN(2)), 1+rng.IntN(3) // sometimes a conflict
			events := make([]persistence.Event, n)
			for k := range events {
				events[k] = persistence.Event{Seq: first + int64(k), Msg: wrapperspb.Int64(first + int64(k))}
			}
			want := model.Append(epoch, first, n)
			err := j.Append(ctx, stream, epoch, events)
			switch want {
			case core.WriteOK:
				require.NoError(t, err, op)
			case core.WriteFenced:
				require.ErrorIs(t, err, persistence.ErrFenced, op)
			case core.WriteConflict:
				require.True(t, errors.Is(err, persistence.ErrConflict), "%s: %v", op, err)
			}
		}
	}
}
