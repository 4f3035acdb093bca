package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/persistence"
)

// The schema version is stored in PRAGMA user_version. It changes only
// when an older Foreman could no longer use the file: the leases table was
// added without a change, since an older Foreman ignores it (and takes no
// leases, so a node on it only waits for no one; the epoch still fences
// it), and every open creates the table when it is missing.
//
// Version 2 is the version of a file holding a snapshot in parts (see
// snapshotPart), which a Foreman knowing only version 1 would misread as
// its first part: the first such snapshot written raises the version, so a
// file keeps working with an older Foreman until then.
const (
	sqliteSchemaVersion = 2 // the newest version this Foreman reads
	sqliteBaseVersion   = 1 // a new file's version
)

// snapshotPart is the most bytes of a snapshot one row holds. A larger
// snapshot is stored as its first part in snapshots and the others in
// snapshot_parts. In one row, SQLite (through modernc.org/sqlite) copied a
// snapshot whole into memory of its own to write it and again to read it,
// and that memory, outside Go's heap, stayed with the process: 80 MB for an
// 80 MB snapshot, 127 MB in a master's backend after a million works.
const snapshotPart = 1 << 20

const sqliteSchema = `
CREATE TABLE IF NOT EXISTS epochs (
	stream   TEXT    NOT NULL PRIMARY KEY,
	epoch    INTEGER NOT NULL,
	last_seq INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (
	stream TEXT    NOT NULL,
	seq    INTEGER NOT NULL,
	type   TEXT    NOT NULL,
	data   BLOB    NOT NULL,
	PRIMARY KEY (stream, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshots (
	stream TEXT    NOT NULL PRIMARY KEY,
	seq    INTEGER NOT NULL,
	type   TEXT    NOT NULL,
	data   BLOB    NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshot_parts (
	stream TEXT    NOT NULL,
	part   INTEGER NOT NULL, -- 1, 2, ...: part 0 is snapshots.data
	seq    INTEGER NOT NULL, -- the snapshot's seq, as in snapshots
	data   BLOB    NOT NULL,
	PRIMARY KEY (stream, part)
);
CREATE TABLE IF NOT EXISTS leases (
	stream     TEXT    NOT NULL PRIMARY KEY,
	holder     TEXT    NOT NULL,
	expires_at INTEGER NOT NULL -- unix nanoseconds on the writing process's clock
) WITHOUT ROWID;
`

// loadPage is how many rows one read query fetches; rows are released
// before the caller's function runs, so it may call back into the journal.
const loadPage = 512

// SQLite is the embedded, durable persistence.Journal: one SQLite file in WAL mode with
// synchronous=FULL, so an acknowledged append survives a crash or power
// loss. One writer goroutine group-commits every queued write in a single
// IMMEDIATE transaction (one fsync). Several processes on one host may open
// the same file: each write transaction holds SQLite's write lock and
// re-reads the stream's epoch inside it, so fencing holds across processes.
//
// Leases are decided inside the write transaction too, and stored with their
// expiry in unix nanoseconds on the wall clock of the process that wrote
// them (WithClock; the real clock by default). That is sound because a
// SQLite file is shared only by the processes of one host, which read one
// clock; a clock stepped by more than a lease's ttl can end a lease early
// or late.
//
// Use OpenSQLite; the zero value is not usable.
type SQLite struct {
	*engine
	path string
}

var _ persistence.Journal = (*SQLite)(nil)

// OpenSQLite opens (creating if needed) the journal file at path. The
// directory must exist and be writable (SQLite also creates path-wal and
// path-shm beside the file). An error names the file and says what to do.
func OpenSQLite(path string, opts ...Option) (*SQLite, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, fmt.Errorf("%w: empty SQLite journal path (pass a file in the node's data directory)", persistence.ErrInvalid)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("journal: cannot open %s: %w", path, err)
	}
	if err := checkFile(abs); err != nil {
		return nil, err
	}
	// Processes that open a new file at the same moment find it locked
	// while the first sets it up (turning it to WAL): SQLite says so at once
	// rather than through its busy handler, so open again until the busy
	// timeout (TestSQLiteOpenTogether).
	deadline := time.Now().Add(cfg.busyTimeout)
	be, err := openSQLiteBackend(abs, cfg)
	for err != nil && isBusy(err) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond + rand.N(4*time.Millisecond)) // real time: the other process's
		be, err = openSQLiteBackend(abs, cfg)
	}
	if err != nil {
		return nil, err
	}
	cfg.logger.Info("journal opened", "store", abs, "backend", "sqlite")
	return &SQLite{engine: newEngine(abs, cfg, be), path: abs}, nil
}

// Path returns the absolute path of the journal file.
func (s *SQLite) Path() string { return s.path }

// checkFile turns the common reasons a journal file cannot be opened into
// errors a person can act on, before SQLite reports them tersely.
func checkFile(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("journal: cannot open %s: directory %s does not exist (create it or choose another data directory)", path, dir)
	case err != nil:
		return fmt.Errorf("journal: cannot open %s: %w (check the data directory's permissions)", path, err)
	case !st.IsDir():
		return fmt.Errorf("journal: cannot open %s: %s is not a directory (choose another data directory)", path, dir)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("journal: cannot open %s: it is a directory (pass a file path inside the data directory)", path)
	}
	// SQLite writes path-wal and path-shm beside the file, so the directory
	// must be writable even when the file exists.
	probe, err := os.CreateTemp(dir, ".journal-probe-*")
	if err != nil {
		return fmt.Errorf("journal: cannot open %s: directory %s is not writable by this user: %w (fix its permissions or choose another data directory)", path, dir, err)
	}
	_ = probe.Close()
	_ = os.Remove(probe.Name())
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("journal: cannot open %s for writing: %w (fix the file's permissions or choose another data directory)", path, err)
	}
	return f.Close()
}

// sqliteBackend is the SQLite store: one connection for the writer, a pool
// for reads.
type sqliteBackend struct {
	path   string
	clock  clock.Clock // leases' expiry
	wdb    *sql.DB
	wconn  *sql.Conn
	rdb    *sql.DB
	stmts  map[string]*sql.Stmt
	rstmts map[string]*sql.Stmt

	// Writer goroutine only.
	inserts [insertChunk + 1]*sql.Stmt // multi-row INSERTs by row count
	puts    [insertChunk + 1]*sql.Stmt // multi-row epoch upserts
	pending []pendingRow
	args    []any
	busy    time.Duration // how long BEGIN retries while another writer holds the lock
	turns   turnLock      // the side file writers take turns by (turns.go)
	version int           // the file's schema version as this writer last saw it
	yield   bool          // another writer waited at the last commit
}

const (
	qState     = `SELECT epoch, last_seq FROM epochs WHERE stream = ?`
	qSnapshot  = `INSERT INTO snapshots (stream, seq, type, data) VALUES (?, ?, ?, ?) ON CONFLICT (stream) DO UPDATE SET seq = excluded.seq, type = excluded.type, data = excluded.data WHERE excluded.seq >= snapshots.seq`
	qDelete    = `DELETE FROM events WHERE stream = ? AND seq <= ?`
	qLoad      = `SELECT seq, type, data FROM events WHERE stream = ? AND seq >= ? ORDER BY seq LIMIT ?`
	qLoadSnap  = `SELECT seq, type, data FROM snapshots WHERE stream = ?`
	qSnapSeq   = `SELECT seq FROM snapshots WHERE stream = ?`
	qPartsDel  = `DELETE FROM snapshot_parts WHERE stream = ?`
	qPartPut   = `INSERT INTO snapshot_parts (stream, part, seq, data) VALUES (?, ?, ?, ?)`
	qPartsSize = `SELECT count(*), coalesce(sum(length(data)), 0) FROM snapshot_parts WHERE stream = ? AND seq = ?`
	qPartsLoad = `SELECT part, data FROM snapshot_parts WHERE stream = ? AND seq = ? ORDER BY part`
	qLeaseGet  = `SELECT holder, expires_at FROM leases WHERE stream = ?`
	qLeasePut  = `INSERT INTO leases (stream, holder, expires_at) VALUES (?, ?, ?) ON CONFLICT (stream) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at`
	qLeaseDel  = `DELETE FROM leases WHERE stream = ? AND holder = ?`
	qBegin     = `BEGIN IMMEDIATE`
	qCommit    = `COMMIT`
	qRollback  = `ROLLBACK`
	qUserVer   = `PRAGMA user_version`
	qJournalMd = `PRAGMA journal_mode`
)

func sqliteDSN(path string, busy time.Duration) string {
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busy.Milliseconds()))
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "FULL")
	q.Set("_txlock", "immediate")
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

func openSQLiteBackend(path string, cfg config) (_ *sqliteBackend, err error) {
	dsn := sqliteDSN(path, cfg.busyTimeout)
	b := &sqliteBackend{path: path, clock: cfg.clock, stmts: map[string]*sql.Stmt{}, rstmts: map[string]*sql.Stmt{}, busy: cfg.busyTimeout}
	defer func() {
		if err != nil {
			_ = b.close()
		}
	}()
	if b.turns, err = openTurns(path); err != nil {
		return nil, sqliteOpenError(path, cfg, err)
	}
	b.wdb, err = sql.Open("sqlite", dsn)
	if err != nil {
		return nil, sqliteOpenError(path, cfg, err)
	}
	b.wdb.SetMaxOpenConns(1)
	ctx := context.Background()
	b.wconn, err = b.wdb.Conn(ctx)
	if err != nil {
		return nil, sqliteOpenError(path, cfg, err)
	}
	if err := b.initSchema(ctx); err != nil {
		return nil, sqliteOpenError(path, cfg, err)
	}
	for _, q := range []string{qState, qSnapshot, qSnapSeq, qPartsDel, qPartPut, qDelete, qLeaseGet, qLeasePut, qLeaseDel} {
		if b.stmts[q], err = b.wconn.PrepareContext(ctx, q); err != nil {
			return nil, sqliteOpenError(path, cfg, err)
		}
	}
	b.rdb, err = sql.Open("sqlite", dsn)
	if err != nil {
		return nil, sqliteOpenError(path, cfg, err)
	}
	b.rdb.SetMaxOpenConns(cfg.readConns)
	b.rdb.SetMaxIdleConns(cfg.readConns)
	for _, q := range []string{qLoad, qLoadSnap} {
		if b.rstmts[q], err = b.rdb.PrepareContext(ctx, q); err != nil {
			return nil, sqliteOpenError(path, cfg, err)
		}
	}
	// From now on the writer's BEGIN is retried by beginTurn, not SQLite's
	// busy handler (see turns.go); inside a transaction begun IMMEDIATE in
	// WAL mode no statement waits for a lock. Until here the busy timeout
	// stays: while another process turns a new file to WAL, even reading
	// the schema must wait.
	if err := b.setBusy(ctx, 0); err != nil {
		return nil, sqliteOpenError(path, cfg, err)
	}
	return b, nil
}

// setBusy sets the writer connection's SQLite busy timeout.
func (b *sqliteBackend) setBusy(ctx context.Context, d time.Duration) error {
	_, err := b.wconn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", d.Milliseconds()))
	return err
}

// initSchema creates the tables and checks the schema version.
func (b *sqliteBackend) initSchema(ctx context.Context) (err error) {
	var mode string
	if err := b.wconn.QueryRowContext(ctx, qJournalMd).Scan(&mode); err != nil {
		return err
	}
	if mode != "wal" {
		return fmt.Errorf("journal mode is %q, not wal (is the file system one that supports shared memory?)", mode)
	}
	// BEGIN is retried by beginTurn alone (a turn-taking writer elsewhere
	// lets it in); the other statements keep the busy timeout (see the end
	// of openSQLiteBackend).
	if err := b.setBusy(ctx, 0); err != nil {
		return err
	}
	err = b.beginTurn(ctx)
	if rerr := b.setBusy(ctx, b.busy); err == nil {
		err = rerr
	}
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_, _ = b.wconn.ExecContext(ctx, qRollback)
		}
		b.endTurn()
	}()
	var ver int
	if err := b.wconn.QueryRowContext(ctx, qUserVer).Scan(&ver); err != nil {
		return err
	}
	if ver > sqliteSchemaVersion {
		return fmt.Errorf("schema version %d was written by a newer Foreman (this one knows %d): upgrade Foreman", ver, sqliteSchemaVersion)
	}
	if ver == 0 {
		var n int
		if err := b.wconn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name NOT IN ('epochs', 'events', 'snapshots', 'snapshot_parts', 'leases')`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("the file is a SQLite database of another program (%d foreign tables): choose another path", n)
		}
	}
	if _, err := b.wconn.ExecContext(ctx, sqliteSchema); err != nil {
		return err
	}
	b.version = max(ver, sqliteBaseVersion)
	if _, err := b.wconn.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", b.version)); err != nil {
		return err
	}
	_, err = b.wconn.ExecContext(ctx, qCommit)
	return err
}

// sqliteOpenError explains why SQLite refused the file.
func sqliteOpenError(path string, cfg config, err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
			return fmt.Errorf("journal: cannot open %s: it is not a SQLite journal or it is corrupt (%w): move it aside to start empty, or restore it from a backup", path, err)
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("journal: cannot open %s: locked by another process for longer than the busy timeout %v (%w): stop the process holding it, or raise WithBusyTimeout", path, cfg.busyTimeout, err)
		case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_AUTH:
			return fmt.Errorf("journal: cannot open %s: %w (check that the file and its directory are writable by this user)", path, err)
		case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR:
			return fmt.Errorf("journal: cannot open %s: %w (check the disk: free space, errors)", path, err)
		}
	}
	return fmt.Errorf("journal: cannot open %s: %w", path, err)
}

func (b *sqliteBackend) close() error {
	var errs []error
	for _, s := range b.stmts {
		errs = append(errs, s.Close())
	}
	for _, s := range b.rstmts {
		errs = append(errs, s.Close())
	}
	for _, s := range append(b.inserts[:], b.puts[:]...) {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	if b.wconn != nil {
		errs = append(errs, b.wconn.Close())
	}
	if b.turns != nil {
		errs = append(errs, b.turns.close())
	}
	if b.rdb != nil {
		errs = append(errs, b.rdb.Close())
	}
	if b.wdb != nil {
		errs = append(errs, b.wdb.Close())
	}
	return errors.Join(errs...)
}

func (b *sqliteBackend) begin(ctx context.Context) (txn, error) {
	if err := b.beginTurn(ctx); err != nil {
		return nil, err
	}
	b.pending = b.pending[:0]
	return sqliteTxn{b: b}, nil
}

// sqliteTxn buffers inserted events and writes them with multi-row
// INSERTs (insertChunk rows per statement): one statement per row cost
// about half of the writer's CPU.
type sqliteTxn struct{ b *sqliteBackend }

// insertChunk is the most rows one INSERT statement carries (4 parameters
// each, far below SQLite's limit of 32766).
const insertChunk = 64

type pendingRow struct {
	stream string
	rec    record
}

var bg = context.Background()

func (t sqliteTxn) states(streams []string) (map[string]streamPos, error) {
	pos := make(map[string]streamPos, len(streams))
	if len(streams) == 1 {
		var p streamPos
		err := t.b.stmts[qState].QueryRowContext(bg, streams[0]).Scan(&p.epoch, &p.last)
		if errors.Is(err, sql.ErrNoRows) {
			return pos, nil
		}
		pos[streams[0]] = p
		return pos, err
	}
	for len(streams) > 0 {
		n := min(len(streams), insertChunk)
		args := t.b.args[:0]
		for _, s := range streams[:n] {
			args = append(args, s)
		}
		t.b.args = args
		q := `SELECT stream, epoch, last_seq FROM epochs WHERE stream IN (?` + strings.Repeat(`, ?`, n-1) + `)`
		rows, err := t.b.wconn.QueryContext(bg, q, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var p streamPos
			if err := rows.Scan(&p.stream, &p.epoch, &p.last); err != nil {
				return nil, errors.Join(err, rows.Close())
			}
			pos[p.stream] = p
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		streams = streams[n:]
	}
	return pos, nil
}

func (t sqliteTxn) putStates(pos []streamPos) error {
	for len(pos) > 0 {
		n := min(len(pos), insertChunk)
		st, err := t.b.multiStmt(&t.b.puts, n, `INSERT INTO epochs (stream, epoch, last_seq) VALUES (?, ?, ?)`, `, (?, ?, ?)`,
			` ON CONFLICT (stream) DO UPDATE SET epoch = excluded.epoch, last_seq = excluded.last_seq`)
		if err != nil {
			return err
		}
		args := t.b.args[:0]
		for _, p := range pos[:n] {
			args = append(args, p.stream, p.epoch, p.last)
		}
		t.b.args = args
		if _, err := st.ExecContext(bg, args...); err != nil {
			return err
		}
		pos = pos[n:]
	}
	return nil
}

func (t sqliteTxn) insertEvents(stream string, recs []record) error {
	for _, r := range recs {
		t.b.pending = append(t.b.pending, pendingRow{stream: stream, rec: r})
	}
	return nil
}

// flush writes the buffered events.
func (t sqliteTxn) flush() error {
	rows := t.b.pending
	t.b.pending = t.b.pending[:0]
	for len(rows) > 0 {
		n := min(len(rows), insertChunk)
		st, err := t.b.multiStmt(&t.b.inserts, n, `INSERT INTO events (stream, seq, type, data) VALUES (?, ?, ?, ?)`, `, (?, ?, ?, ?)`, ``)
		if err != nil {
			return err
		}
		args := t.b.args[:0]
		for _, r := range rows[:n] {
			args = append(args, r.stream, r.rec.seq, r.rec.name, r.rec.data)
		}
		t.b.args = args
		if _, err := st.ExecContext(bg, args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// multiStmt returns the prepared statement of n rows: head, n-1 times
// more, then tail; cache holds them by n.
func (b *sqliteBackend) multiStmt(cache *[insertChunk + 1]*sql.Stmt, n int, head, more, tail string) (*sql.Stmt, error) {
	if st := cache[n]; st != nil {
		return st, nil
	}
	st, err := b.wconn.PrepareContext(bg, head+strings.Repeat(more, n-1)+tail)
	if err != nil {
		return nil, err
	}
	cache[n] = st
	return st, nil
}

// saveSnapshot stores r in parts of at most snapshotPart bytes (see
// snapshotPart), replacing the stream's snapshot unless it is newer.
func (t sqliteTxn) saveSnapshot(stream string, r record) error {
	var cur int64
	switch err := t.b.stmts[qSnapSeq].QueryRowContext(bg, stream).Scan(&cur); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	case cur > r.seq:
		return nil // a newer snapshot is stored: keep it
	}
	first := r.data[:min(len(r.data), snapshotPart)]
	if _, err := t.b.stmts[qSnapshot].ExecContext(bg, stream, r.seq, r.name, first); err != nil {
		return err
	}
	if _, err := t.b.stmts[qPartsDel].ExecContext(bg, stream); err != nil {
		return err
	}
	rest := r.data[len(first):]
	if len(rest) > 0 && t.b.version < 2 {
		if _, err := t.b.wconn.ExecContext(bg, "PRAGMA user_version = 2"); err != nil {
			return err
		}
		t.b.version = 2
	}
	for part := 1; len(rest) > 0; part++ {
		n := min(len(rest), snapshotPart)
		if _, err := t.b.stmts[qPartPut].ExecContext(bg, stream, part, r.seq, rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

func (t sqliteTxn) deleteEvents(stream string, toSeq int64) error {
	// Events appended earlier in this batch must exist before the delete.
	if err := t.flush(); err != nil {
		return err
	}
	_, err := t.b.stmts[qDelete].ExecContext(bg, stream, toSeq)
	return err
}

// lease decides with the write lock held, so no other process can change
// the lease between the read and the write.
func (t sqliteTxn) lease(stream, holder string, ttl time.Duration) (persistence.LeaseState, bool, error) {
	now := t.b.clock.Now()
	var cur string
	var expires int64
	err := t.b.stmts[qLeaseGet].QueryRowContext(bg, stream).Scan(&cur, &expires)
	exists := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return persistence.LeaseState{}, false, err
	}
	if !leaseGrantable(exists, cur, time.Unix(0, expires), now, holder) {
		return persistence.LeaseState{Holder: cur, Remaining: time.Unix(0, expires).Sub(now)}, false, nil
	}
	if _, err := t.b.stmts[qLeasePut].ExecContext(bg, stream, holder, now.Add(ttl).UnixNano()); err != nil {
		return persistence.LeaseState{}, false, err
	}
	return persistence.LeaseState{Holder: holder, Remaining: ttl}, true, nil
}

func (t sqliteTxn) releaseLease(stream, holder string) error {
	_, err := t.b.stmts[qLeaseDel].ExecContext(bg, stream, holder)
	return err
}

func (t sqliteTxn) commit() error {
	if err := t.flush(); err != nil {
		return err
	}
	_, err := t.b.wconn.ExecContext(bg, qCommit)
	t.b.endTurn()
	return err
}

func (t sqliteTxn) rollback() error {
	t.b.pending = t.b.pending[:0]
	_, err := t.b.wconn.ExecContext(bg, qRollback)
	t.b.endTurn()
	return err
}

func (b *sqliteBackend) loadPage(ctx context.Context, stream string, from int64) ([]record, error) {
	rows, err := b.rstmts[qLoad].QueryContext(ctx, stream, from, loadPage)
	if err != nil {
		return nil, fmt.Errorf("journal: load %q from %s: %w", stream, b.path, err)
	}
	var page []record
	for rows.Next() {
		var r record
		if err := rows.Scan(&r.seq, &r.name, &r.data); err != nil {
			return nil, fmt.Errorf("journal: load %q from %s: %w", stream, b.path, errors.Join(err, rows.Close()))
		}
		page = append(page, r)
	}
	// Err is the error that ended the iteration, if any; Close releases the
	// rows (a no-op once Next returned false) and may fail on its own.
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("journal: load %q from %s: %w", stream, b.path, err)
	}
	return page, nil
}

func (b *sqliteBackend) loadSnapshot(ctx context.Context, stream string) (record, bool, error) {
	r, ok, err := b.readSnapshot(ctx, stream)
	if err != nil {
		return record{}, false, fmt.Errorf("journal: load snapshot of %q from %s: %w", stream, b.path, err)
	}
	return r, ok, nil
}

// readSnapshot reads the snapshot row and its parts in one read
// transaction: a writer replacing the snapshot meanwhile cannot leave the
// reader with the row of one snapshot and the parts of another.
func (b *sqliteBackend) readSnapshot(ctx context.Context, stream string) (r record, ok bool, err error) {
	conn, err := b.rdb.Conn(ctx)
	if err != nil {
		return record{}, false, err
	}
	defer func() { err = errors.Join(err, conn.Close()) }()
	// BEGIN DEFERRED takes no lock until the first read, and then a read
	// lock only (the connection's default BEGIN would be IMMEDIATE: the
	// write lock).
	if _, err := conn.ExecContext(ctx, "BEGIN DEFERRED"); err != nil {
		return record{}, false, err
	}
	defer func() {
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), qRollback); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	err = conn.QueryRowContext(ctx, qLoadSnap, stream).Scan(&r.seq, &r.name, &r.data)
	if errors.Is(err, sql.ErrNoRows) {
		return record{}, false, nil
	}
	if err != nil {
		return record{}, false, err
	}
	var parts, size int64
	if err := conn.QueryRowContext(ctx, qPartsSize, stream, r.seq).Scan(&parts, &size); err != nil {
		return record{}, false, err
	}
	if parts == 0 {
		return r, true, nil
	}
	data := make([]byte, 0, int64(len(r.data))+size)
	data = append(data, r.data...)
	rows, err := conn.QueryContext(ctx, qPartsLoad, stream, r.seq)
	if err != nil {
		return record{}, false, err
	}
	defer func() { err = errors.Join(err, rows.Close()) }()
	var want int64 = 1
	for rows.Next() {
		var part int64
		var chunk sql.RawBytes // valid until Next: appended at once
		if err := rows.Scan(&part, &chunk); err != nil {
			return record{}, false, err
		}
		if part != want {
			return record{}, false, fmt.Errorf("snapshot at seq %d: part %d missing (found part %d): the file is damaged; restore it from a backup", r.seq, want, part)
		}
		data = append(data, chunk...)
		want++
	}
	if err := rows.Err(); err != nil {
		return record{}, false, err
	}
	if want-1 != parts {
		return record{}, false, fmt.Errorf("snapshot at seq %d: read %d of its %d parts: the file is damaged; restore it from a backup", r.seq, want-1, parts)
	}
	r.data = data
	return r, true, nil
}
