package journal_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/persistence"
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
	journaltest.Run(t, func(t *testing.T) persistence.Journal {
		j, err := journal.OpenPostgres(context.Background(), dsn, journal.WithReadConns(2))
		require.NoError(t, err)
		return j
	})
}

// TestPostgresLeases runs on real time: PostgreSQL's leases run on the
// server's clock, which no test can move.
func TestPostgresLeases(t *testing.T) {
	t.Parallel()
	dsn := postgresDSN(t)
	journaltest.RunLeases(t, func(t *testing.T, _ *clock.Manual) (persistence.Journal, bool) {
		j, err := journal.OpenPostgres(context.Background(), dsn, journal.WithReadConns(2))
		require.NoError(t, err)
		return j, false
	})
}

func TestPostgresReopen(t *testing.T) {
	t.Parallel()
	dsn := postgresDSN(t)
	journaltest.RunReopen(t, func(t *testing.T) func() (persistence.Journal, error) {
		return func() (persistence.Journal, error) {
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

// TestPostgresReconnects: when the server drops the journal's connections,
// the write in flight fails and later writes reconnect.
func TestPostgresReconnects(t *testing.T) {
	t.Parallel()
	dsn := postgresDSN(t)
	ctx := context.Background()
	app := strings.ReplaceAll(journaltest.Stream(t, "app"), "/", "-")
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	j, err := journal.OpenPostgres(ctx, dsn+sep+"application_name="+app)
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	stream := journaltest.Stream(t, "s")
	epoch, _, err := j.AcquireEpoch(ctx, stream)
	require.NoError(t, err)
	require.NoError(t, j.Append(ctx, stream, epoch, journaltest.Evs(1, 1)))

	admin, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(ctx) })
	var killed int
	require.NoError(t, admin.QueryRow(ctx,
		`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&killed))
	require.Positive(t, killed)

	// The first write may fail on the dead connection; one of the next
	// few must succeed on a new one.
	var errs []error
	for seq := int64(2); ; {
		err := j.Append(ctx, stream, epoch, journaltest.Evs(seq, seq))
		if err == nil {
			break
		}
		errs = append(errs, err)
		require.Less(t, len(errs), 3, "writes keep failing after the connection was dropped: %v", errs)
	}
	var got int
	require.NoError(t, j.Load(ctx, stream, 0, func(persistence.Event) error { got++; return nil }))
	require.Equal(t, 2, got)
}

// TestPostgresSnapshotInParts: a snapshot over a MiB is stored in parts
// (the conformance suite checks it reads back whole), and a smaller one
// that replaces it leaves none of its parts behind.
func TestPostgresSnapshotInParts(t *testing.T) {
	t.Parallel()
	dsn := postgresDSN(t)
	ctx := t.Context()
	j, err := journal.OpenPostgres(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	stream := journaltest.Stream(t, "parts")
	epoch, _, err := j.AcquireEpoch(ctx, stream)
	require.NoError(t, err)
	require.NoError(t, j.Append(ctx, stream, epoch, journaltest.Evs(1, 3)))
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	parts := func() (n int) {
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM foreman_snapshot_parts WHERE stream = $1`, stream).Scan(&n))
		return n
	}
	require.NoError(t, j.SaveSnapshot(ctx, stream, epoch, persistence.Snapshot{Seq: 2, Msg: wrapperspb.Bytes(journaltest.Pattern(2, 3<<20+1))}))
	require.Equal(t, 3, parts(), "the first MiB in the snapshot row, three more parts")
	require.NoError(t, j.SaveSnapshot(ctx, stream, epoch, persistence.Snapshot{Seq: 3, Msg: wrapperspb.Bytes([]byte("small"))}))
	require.Zero(t, parts())
}
