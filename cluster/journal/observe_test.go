package journal_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// TestCommitObserver: the SQLite journal reports each transaction's events,
// and an append refused by the fence writes none.
func TestCommitObserver(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		stats []journal.CommitStats
	)
	j, err := journal.OpenSQLite(filepath.Join(t.TempDir(), "j.db"), journal.WithCommitObserver(func(s journal.CommitStats) {
		mu.Lock()
		defer mu.Unlock()
		stats = append(stats, s)
	}))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, j.Close()) })
	ctx := context.Background()
	old, _, err := j.AcquireEpoch(ctx, "s")
	require.NoError(t, err)
	epoch, _, err := j.AcquireEpoch(ctx, "s")
	require.NoError(t, err)
	ev := func(seq int64) persistence.Event {
		return persistence.Event{Seq: seq, Msg: &messages.MasterRecovered{AtUnixNano: seq}}
	}
	require.NoError(t, j.Append(ctx, "s", epoch, []persistence.Event{ev(1), ev(2), ev(3)}))
	require.Error(t, j.Append(ctx, "s", old, []persistence.Event{ev(4)}), "the old epoch is fenced")

	mu.Lock()
	defer mu.Unlock()
	var events, requests int
	for _, s := range stats {
		require.NoError(t, s.Err)
		require.Positive(t, s.Duration)
		events += s.Events
		requests += s.Requests
	}
	require.Equal(t, 3, events, "only the accepted append's events count: %+v", stats)
	require.GreaterOrEqual(t, requests, 2)
}
