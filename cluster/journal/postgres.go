package journal

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/foreman-actors/foreman/actors/persistence"
)

// pgSchema creates the tables; pgSchemaLock serialises it between processes
// (concurrent CREATE TABLE IF NOT EXISTS can otherwise collide).
const (
	pgSchemaLock = 0x666f72656d616e // "foreman"
	pgSchema     = `
CREATE TABLE IF NOT EXISTS foreman_epochs (
	stream   TEXT   NOT NULL PRIMARY KEY,
	epoch    BIGINT NOT NULL,
	last_seq BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS foreman_events (
	stream TEXT   NOT NULL,
	seq    BIGINT NOT NULL,
	type   TEXT   NOT NULL,
	data   BYTEA  NOT NULL,
	PRIMARY KEY (stream, seq)
);
CREATE TABLE IF NOT EXISTS foreman_snapshots (
	stream TEXT   NOT NULL PRIMARY KEY,
	seq    BIGINT NOT NULL,
	type   TEXT   NOT NULL,
	data   BYTEA  NOT NULL
);
CREATE TABLE IF NOT EXISTS foreman_snapshot_parts (
	stream TEXT   NOT NULL,
	part   BIGINT NOT NULL, -- 1, 2, ...: part 0 is foreman_snapshots.data
	seq    BIGINT NOT NULL, -- the snapshot's seq, as in foreman_snapshots
	data   BYTEA  NOT NULL,
	PRIMARY KEY (stream, part)
);
CREATE TABLE IF NOT EXISTS foreman_leases (
	stream     TEXT        NOT NULL PRIMARY KEY,
	holder     TEXT        NOT NULL,
	expires_at TIMESTAMPTZ NOT NULL -- on the server's clock
);`
)

const (
	// pgStates locks the streams' rows (creating them) and returns their
	// positions: ON CONFLICT DO UPDATE takes each row lock, so a writer in
	// another process waits for this transaction. Rows are locked in
	// sorted order, the same in every process, to avoid deadlocks.
	pgStates = `INSERT INTO foreman_epochs (stream, epoch, last_seq)
SELECT s, 0, 0 FROM unnest($1::text[]) AS u(s) ORDER BY s
ON CONFLICT (stream) DO UPDATE SET stream = excluded.stream RETURNING stream, epoch, last_seq`
	pgPutStates = `UPDATE foreman_epochs AS e SET epoch = u.epoch, last_seq = u.last
FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS u(stream, epoch, last) WHERE e.stream = u.stream`
	pgInsert = `INSERT INTO foreman_events (stream, seq, type, data)
SELECT $1, s, t, d FROM unnest($2::bigint[], $3::text[], $4::bytea[]) AS u(s, t, d)`
	pgSnapshot = `INSERT INTO foreman_snapshots (stream, seq, type, data) VALUES ($1, $2, $3, $4)
ON CONFLICT (stream) DO UPDATE SET seq = excluded.seq, type = excluded.type, data = excluded.data
WHERE excluded.seq >= foreman_snapshots.seq`
	pgDelete = `DELETE FROM foreman_events WHERE stream = $1 AND seq <= $2`
	// pgLease takes or renews the lease when it is free, lapsed or the
	// holder's, on the server's clock (clock_timestamp, not now(): the
	// batch's transaction may have begun a while ago). It returns a row only
	// when it wrote one; ON CONFLICT locks the existing row either way.
	pgLease = `INSERT INTO foreman_leases AS l (stream, holder, expires_at)
VALUES ($1, $2, clock_timestamp() + $3::bigint * interval '1 microsecond')
ON CONFLICT (stream) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
WHERE l.holder = excluded.holder OR l.expires_at <= clock_timestamp()
RETURNING holder`
	// pgLeaseHeld reads the live lease pgLease left alone, with its time
	// left in microseconds computed on the server.
	pgLeaseHeld = `SELECT holder, GREATEST(0, (extract(epoch FROM expires_at - clock_timestamp()) * 1000000)::bigint)
FROM foreman_leases WHERE stream = $1`
	pgLeaseDel = `DELETE FROM foreman_leases WHERE stream = $1 AND holder = $2`
	pgLoad     = `SELECT seq, type, data FROM foreman_events WHERE stream = $1 AND seq >= $2 ORDER BY seq LIMIT $3`
	pgLoadSnap = `SELECT seq, type, data FROM foreman_snapshots WHERE stream = $1`
	pgSnapSeq  = `SELECT seq FROM foreman_snapshots WHERE stream = $1`
	pgPartsDel = `DELETE FROM foreman_snapshot_parts WHERE stream = $1`
	pgPartPut  = `INSERT INTO foreman_snapshot_parts (stream, part, seq, data) VALUES ($1, $2, $3, $4)`
	pgParts    = `SELECT part, data FROM foreman_snapshot_parts WHERE stream = $1 AND seq = $2 ORDER BY part`
	pgPartsLen = `SELECT count(*), coalesce(sum(length(data)), 0) FROM foreman_snapshot_parts WHERE stream = $1 AND seq = $2`
)

// Postgres is the persistence.Journal on PostgreSQL, for backends on several hosts. It
// has the semantics of SQLite: a single writer connection group-commits
// every queued write in one transaction; fencing holds across processes
// because each transaction locks the stream's epoch row before checking it.
// Durability is PostgreSQL's (synchronous_commit on by default).
//
// Leases run on the database server's clock: the expiry and the time left
// are computed in SQL (clock_timestamp()), so the clocks of the hosts that
// share the database need not agree; only their rates must (a holder times
// its ttl on its own clock from before its call, which ends no later than
// the server's). WithClock is ignored.
//
// Use OpenPostgres; the zero value is not usable.
type Postgres struct {
	*engine
}

var _ persistence.Journal = (*Postgres)(nil)

// OpenPostgres connects to the database at dsn (a PostgreSQL URL or
// key=value string, as pgx accepts) and creates the journal's tables
// (foreman_epochs, foreman_events, foreman_snapshots, foreman_leases) if
// they are missing, so a database written by an older Foreman gains the
// leases table on its first open by this one.
func OpenPostgres(ctx context.Context, dsn string, opts ...Option) (*Postgres, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	pcfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: PostgreSQL DSN: %w (want postgres://user@host:port/db or key=value pairs)", persistence.ErrInvalid, err)
	}
	name := fmt.Sprintf("postgres://%s@%s:%d/%s", pcfg.User, pcfg.Host, pcfg.Port, pcfg.Database)
	be := &pgBackend{name: name, cfg: pcfg, readers: make(chan *pgx.Conn, cfg.readConns)}
	be.writer, err = pgx.ConnectConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("journal: cannot open %s: %w (is the server running and the DSN right?)", name, err)
	}
	if err := be.initSchema(ctx); err != nil {
		_ = be.close()
		return nil, fmt.Errorf("journal: cannot open %s: create tables: %w (the user needs CREATE on the database)", name, err)
	}
	for range cfg.readConns {
		be.readers <- nil // connected lazily
	}
	cfg.logger.Info("journal opened", "store", name, "backend", "postgres")
	return &Postgres{engine: newEngine(name, cfg, be)}, nil
}

type pgBackend struct {
	name    string
	cfg     *pgx.ConnConfig
	writer  *pgx.Conn
	readers chan *pgx.Conn // a pool; nil entries are not yet connected

	mu     sync.Mutex
	closed bool
}

func (b *pgBackend) initSchema(ctx context.Context) error {
	tx, err := b.writer.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(pgSchemaLock)); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, pgSchema); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func (b *pgBackend) close() error {
	ctx := context.Background()
	var errs []error
	if b.writer != nil {
		errs = append(errs, b.writer.Close(ctx))
	}
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	for {
		select {
		case c := <-b.readers:
			if c != nil {
				errs = append(errs, c.Close(ctx))
			}
		default:
			return errors.Join(errs...)
		}
	}
}

func (b *pgBackend) begin(ctx context.Context) (txn, error) {
	if b.writer.IsClosed() {
		// The connection broke (server restart, network): the failed batch
		// was reported; reconnect for this one.
		c, err := pgx.ConnectConfig(ctx, b.cfg)
		if err != nil {
			return nil, fmt.Errorf("reconnect: %w", err)
		}
		b.writer = c
	}
	tx, err := b.writer.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &pgTxn{tx: tx}, nil
}

// pgTxn buffers inserted events per stream and sends them in one statement
// per stream, so a batch costs a few round trips whatever its size.
type pgTxn struct {
	tx      pgx.Tx
	pending []pendingRows
}

type pendingRows struct {
	stream string
	seqs   []int64
	types  []string
	data   [][]byte
}

func (t *pgTxn) states(streams []string) (map[string]streamPos, error) {
	rows, err := t.tx.Query(bg, pgStates, streams)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	pos := make(map[string]streamPos, len(streams))
	for rows.Next() {
		var p streamPos
		if err := rows.Scan(&p.stream, &p.epoch, &p.last); err != nil {
			return nil, err
		}
		pos[p.stream] = p
	}
	return pos, rows.Err()
}

func (t *pgTxn) putStates(pos []streamPos) error {
	if err := t.flush(); err != nil {
		return err
	}
	names := make([]string, len(pos))
	epochs := make([]int64, len(pos))
	lasts := make([]int64, len(pos))
	for i, p := range pos {
		names[i], epochs[i], lasts[i] = p.stream, p.epoch, p.last
	}
	_, err := t.tx.Exec(bg, pgPutStates, names, epochs, lasts)
	return err
}

func (t *pgTxn) insertEvents(stream string, recs []record) error {
	var p *pendingRows
	for i := range t.pending {
		if t.pending[i].stream == stream {
			p = &t.pending[i]
		}
	}
	if p == nil {
		t.pending = append(t.pending, pendingRows{stream: stream})
		p = &t.pending[len(t.pending)-1]
	}
	for _, r := range recs {
		p.seqs = append(p.seqs, r.seq)
		p.types = append(p.types, r.name)
		p.data = append(p.data, r.data)
	}
	return nil
}

func (t *pgTxn) flush() error {
	for _, p := range t.pending {
		if _, err := t.tx.Exec(bg, pgInsert, p.stream, p.seqs, p.types, p.data); err != nil {
			return err
		}
	}
	t.pending = t.pending[:0]
	return nil
}

// saveSnapshot stores r in parts of at most snapshotPart bytes, as SQLite
// does, replacing the stream's snapshot unless it is newer. In one row,
// pgx kept a buffer the size of the snapshot on the writer's connection
// and another on each connection that read it, for the connection's life
// (160 MB of Go heap after writing and reading an 80 MB snapshot); and a
// PostgreSQL value cannot exceed 1 GB. A Foreman from before parts reads
// only the first part of such a snapshot, which fails to decode: its
// recovery fails with that error rather than misread the snapshot.
func (t *pgTxn) saveSnapshot(stream string, r record) error {
	var cur int64
	switch err := t.tx.QueryRow(bg, pgSnapSeq, stream).Scan(&cur); {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return err
	case cur > r.seq:
		return nil // a newer snapshot is stored: keep it
	}
	first := r.data[:min(len(r.data), snapshotPart)]
	if _, err := t.tx.Exec(bg, pgSnapshot, stream, r.seq, r.name, first); err != nil {
		return err
	}
	if _, err := t.tx.Exec(bg, pgPartsDel, stream); err != nil {
		return err
	}
	rest := r.data[len(first):]
	for part := 1; len(rest) > 0; part++ {
		n := min(len(rest), snapshotPart)
		if _, err := t.tx.Exec(bg, pgPartPut, stream, part, r.seq, rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

func (t *pgTxn) deleteEvents(stream string, toSeq int64) error {
	// Events appended earlier in this batch must exist before the delete.
	if err := t.flush(); err != nil {
		return err
	}
	_, err := t.tx.Exec(bg, pgDelete, stream, toSeq)
	return err
}

func (t *pgTxn) lease(stream, holder string, ttl time.Duration) (persistence.LeaseState, bool, error) {
	micros := int64((ttl + time.Microsecond - 1) / time.Microsecond)
	// The live lease read after a refusal may have been released or have
	// lapsed in between (another process committed): try again a few
	// times rather than report a lease that is gone.
	for range 3 {
		var got string
		err := t.tx.QueryRow(bg, pgLease, stream, holder, micros).Scan(&got)
		if err == nil {
			return persistence.LeaseState{Holder: holder, Remaining: ttl}, true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return persistence.LeaseState{}, false, err
		}
		var left int64
		err = t.tx.QueryRow(bg, pgLeaseHeld, stream).Scan(&got, &left)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // released meanwhile
		}
		if err != nil {
			return persistence.LeaseState{}, false, err
		}
		return persistence.LeaseState{Holder: got, Remaining: time.Duration(left) * time.Microsecond}, false, nil
	}
	return persistence.LeaseState{}, false, fmt.Errorf("lease of %q changed hands three times while being taken", stream)
}

func (t *pgTxn) releaseLease(stream, holder string) error {
	_, err := t.tx.Exec(bg, pgLeaseDel, stream, holder)
	return err
}

func (t *pgTxn) commit() error {
	if err := t.flush(); err != nil {
		return err
	}
	return t.tx.Commit(bg)
}

func (t *pgTxn) rollback() error { return t.tx.Rollback(bg) }

// reader borrows a read connection; put it back with release. A pooled
// connection is pinged first: a server restart breaks every idle one, and
// each would otherwise fail one recovery attempt, which the runtime retries
// only after its backoff (up to seconds), so service would return that much
// later per broken connection.
func (b *pgBackend) reader(ctx context.Context) (*pgx.Conn, error) {
	var c *pgx.Conn
	select {
	case c = <-b.readers:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if c != nil && !c.IsClosed() {
		if err := c.Ping(ctx); err == nil {
			return c, nil
		}
		_ = c.Close(ctx) // broken: a new connection replaces it
	}
	c, err := pgx.ConnectConfig(ctx, b.cfg)
	if err != nil {
		b.readers <- nil
		return nil, fmt.Errorf("journal: connect to %s: %w", b.name, err)
	}
	return c, nil
}

// release puts c back in the pool. After err, unless the server reported
// it (the connection is then fine), c is closed and its slot reconnects on
// its next use.
func (b *pgBackend) release(c *pgx.Conn, err error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	var pgErr *pgconn.PgError
	if closed || (err != nil && !errors.As(err, &pgErr) && !errors.Is(err, pgx.ErrNoRows)) {
		_ = c.Close(context.Background())
		if !closed {
			b.readers <- nil
		}
		return
	}
	b.readers <- c
}

func (b *pgBackend) loadPage(ctx context.Context, stream string, from int64) (_ []record, err error) {
	c, err := b.reader(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { b.release(c, err) }()
	rows, err := c.Query(ctx, pgLoad, stream, from, loadPage)
	if err != nil {
		return nil, fmt.Errorf("journal: load %q from %s: %w", stream, b.name, err)
	}
	defer rows.Close()
	var page []record
	for rows.Next() {
		var r record
		if err := rows.Scan(&r.seq, &r.name, &r.data); err != nil {
			return nil, fmt.Errorf("journal: load %q from %s: %w", stream, b.name, err)
		}
		page = append(page, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("journal: load %q from %s: %w", stream, b.name, err)
	}
	return page, nil
}

func (b *pgBackend) loadSnapshot(ctx context.Context, stream string) (_ record, _ bool, err error) {
	c, err := b.reader(ctx)
	if err != nil {
		return record{}, false, err
	}
	defer func() { b.release(c, err) }()
	r, ok, err := readPgSnapshot(ctx, c, stream)
	if err != nil {
		return record{}, false, fmt.Errorf("journal: load snapshot of %q from %s: %w", stream, b.name, err)
	}
	return r, ok, nil
}

// readPgSnapshot reads the snapshot row and its parts in one read-only
// REPEATABLE READ transaction: a writer replacing the snapshot meanwhile
// cannot leave the reader with the row of one and the parts of another.
func readPgSnapshot(ctx context.Context, c *pgx.Conn, stream string) (r record, ok bool, err error) {
	tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return record{}, false, err
	}
	defer func() {
		if rerr := tx.Rollback(context.WithoutCancel(ctx)); rerr != nil && !errors.Is(rerr, pgx.ErrTxClosed) {
			err = errors.Join(err, rerr)
		}
	}()
	err = tx.QueryRow(ctx, pgLoadSnap, stream).Scan(&r.seq, &r.name, &r.data)
	if errors.Is(err, pgx.ErrNoRows) {
		return record{}, false, nil
	}
	if err != nil {
		return record{}, false, err
	}
	var parts, size int64
	if err := tx.QueryRow(ctx, pgPartsLen, stream, r.seq).Scan(&parts, &size); err != nil {
		return record{}, false, err
	}
	if parts == 0 {
		return r, true, nil
	}
	data := make([]byte, 0, int64(len(r.data))+size)
	data = append(data, r.data...)
	rows, err := tx.Query(ctx, pgParts, stream, r.seq)
	if err != nil {
		return record{}, false, err
	}
	defer rows.Close()
	want := int64(1)
	for rows.Next() {
		var part int64
		var chunk []byte
		if err := rows.Scan(&part, &chunk); err != nil {
			return record{}, false, err
		}
		if part != want {
			return record{}, false, fmt.Errorf("snapshot at seq %d: part %d missing (found part %d): the database is damaged; restore it from a backup", r.seq, want, part)
		}
		data = append(data, chunk...)
		want++
	}
	if err := rows.Err(); err != nil {
		return record{}, false, err
	}
	if want-1 != parts {
		return record{}, false, fmt.Errorf("snapshot at seq %d: read %d of its %d parts: the database is damaged; restore it from a backup", r.seq, want-1, parts)
	}
	r.data = data
	return r, true, nil
}
