package journal_test

import (
	"bytes"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/journal/journaltest"
)

// sqliteFacts reads the file's schema version and the snapshot parts stored
// for stream, from a connection of its own.
func sqliteFacts(t *testing.T, path, stream string) (version, parts int) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	require.NoError(t, db.QueryRow(`PRAGMA user_version`).Scan(&version))
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM snapshot_parts WHERE stream = ?`, stream).Scan(&parts))
	return version, parts
}

func loadBytes(t *testing.T, j persistence.Journal, stream string) (int64, []byte) {
	t.Helper()
	snap, ok, err := j.LoadSnapshot(t.Context(), stream)
	require.NoError(t, err)
	require.True(t, ok)
	return snap.Seq, snap.Msg.(*wrapperspb.BytesValue).GetValue()
}

// appendN journals events 1..n of stream, so snapshots up to seq n may be
// saved.
func appendN(t *testing.T, j persistence.Journal, stream string, n int64) int64 {
	t.Helper()
	ctx := t.Context()
	epoch, _, err := j.AcquireEpoch(ctx, stream)
	require.NoError(t, err)
	evs := make([]persistence.Event, n)
	for i := range evs {
		evs[i] = persistence.Event{Seq: int64(i) + 1, Msg: wrapperspb.Int64(int64(i))}
	}
	require.NoError(t, j.Append(ctx, stream, epoch, evs))
	return epoch
}

// TestSQLiteSnapshotInParts: a snapshot over a MiB is stored in parts, reads
// back whole (after a reopen too), and raises the file's schema version so
// that an older Foreman refuses the file rather than misread it; a smaller
// snapshot replaces it and its parts; an older one is ignored.
func TestSQLiteSnapshotInParts(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := journal.OpenSQLite(path)
	require.NoError(t, err)
	ctx := t.Context()
	epoch := appendN(t, j, "s", 10)

	require.NoError(t, j.SaveSnapshot(ctx, "s", epoch, persistence.Snapshot{Seq: 2, Msg: wrapperspb.Bytes([]byte("small"))}))
	version, parts := sqliteFacts(t, path, "s")
	require.Equal(t, 1, version, "no snapshot in parts yet: an older Foreman can still use the file")
	require.Zero(t, parts)

	big := journaltest.Pattern(5, 3<<20+12345) // 3 MiB and more: the first part and 3 others
	require.NoError(t, j.SaveSnapshot(ctx, "s", epoch, persistence.Snapshot{Seq: 5, Msg: wrapperspb.Bytes(big)}))
	version, parts = sqliteFacts(t, path, "s")
	require.Equal(t, 2, version)
	require.Equal(t, 3, parts)
	seq, got := loadBytes(t, j, "s")
	require.Equal(t, int64(5), seq)
	require.True(t, bytes.Equal(big, got), "read back whole")

	require.NoError(t, j.SaveSnapshot(ctx, "s", epoch, persistence.Snapshot{Seq: 4, Msg: wrapperspb.Bytes([]byte("older"))}))
	seq, got = loadBytes(t, j, "s")
	require.Equal(t, int64(5), seq, "an older snapshot does not replace a newer one")
	require.True(t, bytes.Equal(big, got))
	_, parts = sqliteFacts(t, path, "s")
	require.Equal(t, 3, parts)

	require.NoError(t, j.Close())
	j, err = journal.OpenSQLite(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	seq, got = loadBytes(t, j, "s")
	require.Equal(t, int64(5), seq)
	require.True(t, bytes.Equal(big, got), "whole after a reopen")
	version, _ = sqliteFacts(t, path, "s")
	require.Equal(t, 2, version, "a reopen keeps the version")

	epoch, _, err = j.AcquireEpoch(ctx, "s")
	require.NoError(t, err)
	require.NoError(t, j.SaveSnapshot(ctx, "s", epoch, persistence.Snapshot{Seq: 9, Msg: wrapperspb.Bytes([]byte("newer"))}))
	seq, got = loadBytes(t, j, "s")
	require.Equal(t, int64(9), seq)
	require.Equal(t, "newer", string(got))
	_, parts = sqliteFacts(t, path, "s")
	require.Zero(t, parts, "a smaller snapshot leaves no parts of the one it replaced")
}

// TestSQLiteRefusesANewerSchema: a file of a schema newer than this
// Foreman knows is refused with what to do.
func TestSQLiteRefusesANewerSchema(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := journal.OpenSQLite(path)
	require.NoError(t, err)
	require.NoError(t, j.Close())
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = db.Exec(`PRAGMA user_version = 3`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	_, err = journal.OpenSQLite(path)
	require.ErrorContains(t, err, "schema version 3 was written by a newer Foreman (this one knows 2): upgrade Foreman")
}
