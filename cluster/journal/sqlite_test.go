package journal_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/journal/journaltest"
)

func TestSQLiteConformance(t *testing.T) {
	t.Parallel()
	journaltest.Run(t, func(t *testing.T) persistence.Journal {
		j, err := journal.OpenSQLite(filepath.Join(t.TempDir(), "journal.db"))
		require.NoError(t, err)
		return j
	})
}

func TestSQLiteLeases(t *testing.T) {
	t.Parallel()
	journaltest.RunLeases(t, func(t *testing.T, clk *clock.Manual) (persistence.Journal, bool) {
		j, err := journal.OpenSQLite(filepath.Join(t.TempDir(), "journal.db"), journal.WithClock(clk))
		require.NoError(t, err)
		return j, true
	})
}

func TestSQLiteReopen(t *testing.T) {
	t.Parallel()
	journaltest.RunReopen(t, func(t *testing.T) func() (persistence.Journal, error) {
		path := filepath.Join(t.TempDir(), "journal.db")
		return func() (persistence.Journal, error) { return journal.OpenSQLite(path) }
	})
}
