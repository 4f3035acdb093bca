package journal_test

import (
	"testing"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/journal/journaltest"
)

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	journaltest.Run(t, func(t *testing.T) persistence.Journal { return journal.NewMemory() })
}

func TestMemoryLeases(t *testing.T) {
	t.Parallel()
	journaltest.RunLeases(t, func(t *testing.T, clk *clock.Manual) (persistence.Journal, bool) {
		return journal.NewMemory(journal.WithClock(clk)), true
	})
}
