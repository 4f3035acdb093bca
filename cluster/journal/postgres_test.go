package journal_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/journal/journaltest"
)

// postgresDSN returns the test database or skips loudly.
func postgresDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("FOREMAN_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("SKIPPING PostgreSQL journal tests: FOREMAN_TEST_POSTGRES_DSN is not set. " +
			`Run: eval "$(bash cluster/journal/ci-postgres.sh)"`)
	}
	return dsn
}

func TestPostgresConformance(t *testing.T) {
	t.Parallel()
	dsn := postgresDSN(t)
	journaltest.Run(t, func(t *testing.T) journal.Journal {
		j, err := journal.OpenPostgres(context.Background(), dsn, journal.WithReadConns(2))
		require.NoError(t, err)
		return j
	})
}

func TestPostgresReopen(t *testing.T) {
	t.Parallel()
	dsn := postgresDSN(t)
	journaltest.RunReopen(t, func(t *testing.T) func() (journal.Journal, error) {
		return func() (journal.Journal, error) {
			return journal.OpenPostgres(context.Background(), dsn, journal.WithReadConns(2))
		}
	})
}

func TestOpenPostgresErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		dsn  string
		want string
	}{
		{name: "malformed", dsn: "postgres://%zz", want: "PostgreSQL DSN"},
		{name: "nobody listening", dsn: "postgres://u@127.0.0.1:1/db?connect_timeout=5", want: "is the server running"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j, err := journal.OpenPostgres(context.Background(), tc.dsn)
			if err == nil {
				_ = j.Close()
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}
