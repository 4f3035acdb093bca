package journal_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/journal/journaltest"
)

func TestOpenSQLiteErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		setup    func(t *testing.T) string // returns the path to open
		opts     []journal.Option
		wantText []string
		rootless bool // needs permissions that root bypasses
	}{
		{
			name:     "empty path",
			setup:    func(*testing.T) string { return "" },
			wantText: []string{"empty SQLite journal path"},
		},
		{
			name: "missing directory",
			setup: func(t *testing.T) string {
				return filepath.Join(t.TempDir(), "nope", "journal.db")
			},
			wantText: []string{"does not exist", "nope"},
		},
		{
			name: "parent is a file",
			setup: func(t *testing.T) string {
				f := filepath.Join(t.TempDir(), "file")
				require.NoError(t, os.WriteFile(f, []byte("x"), 0o600))
				return filepath.Join(f, "journal.db")
			},
			wantText: []string{"not a directory"},
		},
		{
			name: "path is a directory",
			setup: func(t *testing.T) string {
				return t.TempDir()
			},
			wantText: []string{"it is a directory"},
		},
		{
			name: "garbage file",
			setup: func(t *testing.T) string {
				p := filepath.Join(t.TempDir(), "journal.db")
				require.NoError(t, os.WriteFile(p, []byte(strings.Repeat("not a database, just garbage\n", 200)), 0o600))
				return p
			},
			wantText: []string{"not a SQLite journal or it is corrupt", "journal.db", "move it aside"},
		},
		{
			name: "another program's database",
			setup: func(t *testing.T) string {
				p := filepath.Join(t.TempDir(), "journal.db")
				db, err := sql.Open("sqlite", p)
				require.NoError(t, err)
				_, err = db.Exec(`CREATE TABLE accounts (id INTEGER PRIMARY KEY)`)
				require.NoError(t, err)
				require.NoError(t, db.Close())
				return p
			},
			wantText: []string{"another program", "journal.db"},
		},
		{
			name: "locked by another connection",
			setup: func(t *testing.T) string {
				p := filepath.Join(t.TempDir(), "journal.db")
				db, err := sql.Open("sqlite", p)
				require.NoError(t, err)
				db.SetMaxOpenConns(1)
				t.Cleanup(func() { _ = db.Close() })
				_, err = db.Exec(`CREATE TABLE x (id INTEGER)`)
				require.NoError(t, err)
				tx, err := db.Begin()
				require.NoError(t, err)
				_, err = tx.Exec(`INSERT INTO x VALUES (1)`) // takes the write lock
				require.NoError(t, err)
				_, err = tx.Exec(`PRAGMA locking_mode = EXCLUSIVE`)
				require.NoError(t, err)
				t.Cleanup(func() { _ = tx.Rollback() })
				return p
			},
			opts:     []journal.Option{journal.WithBusyTimeout(50 * time.Millisecond)},
			wantText: []string{"locked by another process", "journal.db", "WithBusyTimeout"},
		},
		{
			name: "read-only directory",
			setup: func(t *testing.T) string {
				d := t.TempDir()
				require.NoError(t, os.Chmod(d, 0o500))
				t.Cleanup(func() { _ = os.Chmod(d, 0o700) })
				return filepath.Join(d, "journal.db")
			},
			wantText: []string{"not writable", "journal.db"},
			rootless: true,
		},
		{
			name: "read-only file",
			setup: func(t *testing.T) string {
				p := filepath.Join(t.TempDir(), "journal.db")
				j, err := journal.OpenSQLite(p)
				require.NoError(t, err)
				require.NoError(t, j.Close())
				require.NoError(t, os.Chmod(p, 0o400))
				return p
			},
			wantText: []string{"journal.db", "permission"},
			rootless: true,
		},
		{
			name:     "bad option",
			setup:    func(t *testing.T) string { return filepath.Join(t.TempDir(), "j.db") },
			opts:     []journal.Option{journal.WithMaxBatch(0)},
			wantText: []string{"max batch 0"},
		},
		{
			name:     "nil clock",
			setup:    func(t *testing.T) string { return filepath.Join(t.TempDir(), "j.db") },
			opts:     []journal.Option{journal.WithClock(nil)},
			wantText: []string{"WithClock(nil)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.rootless && os.Geteuid() == 0 {
				t.Skip("running as root: file permissions do not stop root, so this case cannot fail here")
			}
			j, err := journal.OpenSQLite(tc.setup(t), tc.opts...)
			if err == nil {
				_ = j.Close()
			}
			require.Error(t, err)
			for _, s := range tc.wantText {
				require.Contains(t, err.Error(), s)
			}
		})
	}
}

// TestSQLiteReopenAfterOpenFailure checks that a failed open leaves the file
// usable.
func TestSQLiteCreatesSchemaOnce(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "journal.db")
	for range 3 {
		j, err := journal.OpenSQLite(p)
		require.NoError(t, err)
		require.Equal(t, p, j.Path())
		require.NoError(t, j.Close())
	}
}

// TestSQLiteOpensAJournalWrittenBeforeLeases: a file of the first schema
// (no leases table, as an older Foreman left it) opens, keeps its events
// and its epoch, and gains leases.
func TestSQLiteOpensAJournalWrittenBeforeLeases(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "journal.db")
	db, err := sql.Open("sqlite", p)
	require.NoError(t, err)
	ev, err := proto.Marshal(wrapperspb.String("event-1"))
	require.NoError(t, err)
	for _, q := range []string{
		`PRAGMA journal_mode = WAL`,
		`CREATE TABLE epochs (stream TEXT NOT NULL PRIMARY KEY, epoch INTEGER NOT NULL, last_seq INTEGER NOT NULL) WITHOUT ROWID`,
		`CREATE TABLE events (stream TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (stream, seq)) WITHOUT ROWID`,
		`CREATE TABLE snapshots (stream TEXT NOT NULL PRIMARY KEY, seq INTEGER NOT NULL, type TEXT NOT NULL, data BLOB NOT NULL) WITHOUT ROWID`,
		`PRAGMA user_version = 1`,
		`INSERT INTO epochs VALUES ('s', 3, 1)`,
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	_, err = db.Exec(`INSERT INTO events VALUES ('s', 1, 'google.protobuf.StringValue', ?)`, ev)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	j, err := journal.OpenSQLite(p)
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	ctx := t.Context()
	epoch, last, err := j.AcquireEpoch(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, int64(4), epoch)
	require.Equal(t, int64(1), last)
	var got []persistence.Event
	require.NoError(t, j.Load(ctx, "s", 1, func(e persistence.Event) error { got = append(got, e); return nil }))
	require.Len(t, got, 1)
	require.True(t, proto.Equal(wrapperspb.String("event-1"), got[0].Msg))
	_, err = j.Lease(ctx, "s", "a", time.Minute)
	require.NoError(t, err)
	_, err = j.Lease(ctx, "s", "b", time.Minute)
	require.ErrorIs(t, err, persistence.ErrLeaseHeld)
}

const (
	helperEnvDB     = "FOREMAN_JOURNAL_HELPER_DB"
	helperEnvStream = "FOREMAN_JOURNAL_HELPER_STREAM"
	helperEnvCount  = "FOREMAN_JOURNAL_HELPER_COUNT"
)

// TestHelperProcess is not a test: TestSQLiteSecondProcess runs the test
// binary again with it selected, as a second process writing the same file.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(helperEnvDB)
	if path == "" {
		t.Skip("helper process for TestSQLiteSecondProcess; runs only when started by it")
	}
	stream := os.Getenv(helperEnvStream)
	n, err := strconv.Atoi(os.Getenv(helperEnvCount))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: bad count:", err)
		os.Exit(3)
	}
	if err := helperMain(path, stream, n); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func helperMain(path, stream string, n int) (err error) {
	j, err := journal.OpenSQLite(path, journal.WithBusyTimeout(30*time.Second))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, j.Close()) }()
	ctx := context.Background()
	epoch, last, err := j.AcquireEpoch(ctx, stream)
	if err != nil {
		return err
	}
	for i := range n {
		seq := last + 1 + int64(i)
		if err := j.Append(ctx, stream, epoch, []persistence.Event{{Seq: seq, Msg: wrapperspb.String(fmt.Sprintf("child-%d", seq))}}); err != nil {
			return err
		}
	}
	fmt.Printf("epoch=%d last=%d\n", epoch, last+int64(n))
	return nil // the deferred Close reports its error
}

// TestSQLiteSecondProcess opens one file from two processes: the child
// acquires a newer epoch, which fences the parent's open journal.
func TestSQLiteSecondProcess(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.db")
	stream := journaltest.Stream(t, "master")
	ctx, cancel := context.WithTimeout(context.Background(), journaltest.Timeout)
	defer cancel()

	j, err := journal.OpenSQLite(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	epoch, _, err := j.AcquireEpoch(ctx, stream)
	require.NoError(t, err)
	require.NoError(t, j.Append(ctx, stream, epoch, journaltest.Evs(1, 2)))

	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnvDB+"="+path, helperEnvStream+"="+stream, helperEnvCount+"=5")
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("helper process failed: %v\nstderr:\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	require.Contains(t, string(out), "last=7")

	// The parent's journal is still open, but its epoch is stale.
	err = j.Append(ctx, stream, epoch, journaltest.Evs(3, 3))
	require.ErrorIs(t, err, persistence.ErrFenced)
	require.ErrorIs(t, j.SaveSnapshot(ctx, stream, epoch, persistence.Snapshot{Seq: 2, Msg: wrapperspb.Int64(2)}), persistence.ErrFenced)

	var got []string
	require.NoError(t, j.Load(ctx, stream, 1, func(e persistence.Event) error {
		got = append(got, e.Msg.(*wrapperspb.StringValue).GetValue())
		return nil
	}))
	require.Equal(t, []string{"event-1", "event-2", "child-3", "child-4", "child-5", "child-6", "child-7"}, got)

	// Taking the stream back works from the parent.
	epoch2, last, err := j.AcquireEpoch(ctx, stream)
	require.NoError(t, err)
	require.Greater(t, epoch2, epoch)
	require.Equal(t, int64(7), last)
	require.NoError(t, j.Append(ctx, stream, epoch2, journaltest.Evs(8, 8)))
}

// TestSQLiteWriteWhileLocked: a write that cannot get the lock within the
// busy timeout fails with an error saying so, and the journal works again
// once the lock is released.
func TestSQLiteWriteWhileLocked(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.db")
	ctx := context.Background()
	j, err := journal.OpenSQLite(path, journal.WithBusyTimeout(50*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	epoch, _, err := j.AcquireEpoch(ctx, "s")
	require.NoError(t, err)

	other, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	conn, err := other.Conn(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = conn.ExecContext(ctx, `BEGIN IMMEDIATE`)
	require.NoError(t, err)

	err = j.Append(ctx, "s", epoch, journaltest.Evs(1, 2))
	require.Error(t, err)
	require.Contains(t, err.Error(), "journal.db")
	require.Contains(t, err.Error(), "locked")

	_, err = conn.ExecContext(ctx, `ROLLBACK`)
	require.NoError(t, err)
	require.NoError(t, j.Append(ctx, "s", epoch, journaltest.Evs(1, 2)))
	var n int
	require.NoError(t, j.Load(ctx, "s", 0, func(persistence.Event) error { n++; return nil }))
	require.Equal(t, 2, n)
}
