package journal_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// TestSQLiteSharedFileIsFair: two journals on one file (as two backend
// processes on one host share it; two handles of one process lock each
// other out the same way). One appends without pause, as a master under
// load does; the other renews a lease every 100 ms and must get each
// renewal through within the lease keeper's budget. SQLite's own busy
// handler sleeps up to 100 ms between tries and lost nearly every renewal
// to the busy writer here (a master then stops: its lease lapses); the
// journal's turn-taking must let the renewals through (all of them here;
// the test allows 3 of 30 late, for a loaded machine).
func TestSQLiteSharedFileIsFair(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.db")
	busy, err := journal.OpenSQLite(path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, busy.Close()) })
	renewer, err := journal.OpenSQLite(path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, renewer.Close()) })

	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg       sync.WaitGroup
		appended atomic.Int64
	)
	for w := range 4 {
		stream := "busy/" + string(rune('a'+w))
		wg.Go(func() {
			epoch, last, err := busy.AcquireEpoch(ctx, stream)
			if err != nil {
				t.Errorf("acquire %s: %v", stream, err)
				return
			}
			for ctx.Err() == nil {
				last++
				err := busy.Append(ctx, stream, epoch, []persistence.Event{{Seq: last, Msg: &messages.WorkStarted{WorkId: "w", WorkerId: "x"}}})
				if err != nil && ctx.Err() == nil {
					t.Errorf("append to %s: %v", stream, err)
					return
				}
				appended.Add(1)
			}
		})
	}
	defer func() {
		cancel()
		wg.Wait()
	}()
	// The budget of one renewal is the keeper's: a third of a 300 ms lease.
	const renewals, budget = 30, 100 * time.Millisecond
	var late []time.Duration
	for range renewals {
		rctx, rcancel := context.WithTimeout(context.Background(), budget)
		start := time.Now()
		_, err := renewer.Lease(rctx, "master", "holder", 300*time.Millisecond)
		took := time.Since(start)
		rcancel()
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded, "renewal")
			late = append(late, took)
		}
		time.Sleep(budget) // the keeper's pace: nothing to synchronise with
	}
	t.Logf("%d renewals against a writer that appended %d times; %d missed the %v budget", renewals, appended.Load(), len(late), budget)
	require.Positive(t, appended.Load(), "the busy writer must have written for the test to mean anything")
	// 25 of 30 missed before the writers took turns; a loaded machine may
	// still starve the renewer's goroutine now and then.
	require.LessOrEqual(t, len(late), 3, "renewals that missed their budget: %v", late)
}

// TestSQLiteOpenTogether: backends started at once open a new journal file
// together; each must wait for the other's set-up, not fail on a locked
// database (the writer's busy timeout is off only once the file is set up).
func TestSQLiteOpenTogether(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for round := range 20 {
		path := filepath.Join(dir, "journal-"+string(rune('a'+round))+".db")
		const openers = 3
		var wg sync.WaitGroup
		errs := make([]error, openers)
		js := make([]*journal.SQLite, openers)
		for i := range openers {
			wg.Go(func() { js[i], errs[i] = journal.OpenSQLite(path) })
		}
		wg.Wait()
		for i := range openers {
			require.NoError(t, errs[i], "round %d, opener %d", round, i)
			require.NoError(t, js[i].Close())
		}
	}
}
