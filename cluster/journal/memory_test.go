package journal_test

import (
	"testing"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/journal/journaltest"
)

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	journaltest.Run(t, func(t *testing.T) persistence.Journal { return journal.NewMemory() })
}
