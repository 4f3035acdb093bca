package journal_test

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/journal"
)

// pattern returns n bytes that differ by seq and by position, so that a
// snapshot put together from the parts of two others shows.
func pattern(seq int64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(int64(i)*31 + seq*7 + int64(i>>12))
	}
	return b
}

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

	big := pattern(5, 3<<20+12345) // 3 MiB and more: the first part and 3 others
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

// TestSQLiteSnapshotReadWhileReplaced: a reader loading while a writer
// replaces snapshots in parts always gets one snapshot whole, never the
// first part of one with the other parts of another.
func TestSQLiteSnapshotReadWhileReplaced(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := journal.OpenSQLite(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	const saves = 24
	epoch := appendN(t, j, "s", saves)
	size := func(seq int64) int { return 2<<20 + int(seq)*1000 } // 3 parts, a length of each seq's own
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	require.NoError(t, j.SaveSnapshot(ctx, "s", epoch, persistence.Snapshot{Seq: 1, Msg: wrapperspb.Bytes(pattern(1, size(1)))}))

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cancel()
		for seq := int64(2); seq <= saves; seq++ {
			if err := j.SaveSnapshot(ctx, "s", epoch, persistence.Snapshot{Seq: seq, Msg: wrapperspb.Bytes(pattern(seq, size(seq)))}); err != nil {
				t.Errorf("save %d: %v", seq, err)
				return
			}
		}
	}()
	reads := 0
	for ctx.Err() == nil {
		snap, ok, err := j.LoadSnapshot(t.Context(), "s")
		require.NoError(t, err)
		require.True(t, ok)
		got := snap.Msg.(*wrapperspb.BytesValue).GetValue()
		require.Len(t, got, size(snap.Seq), "snapshot %d", snap.Seq)
		require.True(t, bytes.Equal(pattern(snap.Seq, size(snap.Seq)), got), "snapshot %d is whole and its own", snap.Seq)
		reads++
	}
	wg.Wait()
	t.Logf("%d reads during %d saves", reads, saves-1)
	require.Positive(t, reads)
}
