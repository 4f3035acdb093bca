package main

import (
	"context"
	"database/sql"
	"fmt"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Recipient is one row of the recipients table: the seed's recipient
// context, the unit of work.
type Recipient struct {
	ID    int64
	Name  string
	Email string
	City  string
}

var cities = []string{"Lisbon", "Oslo", "Nairobi", "Lima", "Osaka", "Tartu", "Quebec"}

// openStore opens (creating it if needed) the SQLite database at path and
// fills the recipients table with n rows when it holds a different number.
func openStore(ctx context.Context, path string, n int) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("emailcampaign: open %s: %w", path, err)
	}
	if err := fill(ctx, db, n); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("emailcampaign: fill %s: %w", path, err)
	}
	return db, nil
}

func fill(ctx context.Context, db *sql.DB, n int) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS recipients (
		id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL, city TEXT NOT NULL)`); err != nil {
		return err
	}
	var have int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM recipients`).Scan(&have); err != nil {
		return err
	}
	if have == n {
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `DELETE FROM recipients`); err != nil {
		return err
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO recipients (id, name, email, city) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	// Commit or Rollback closes the transaction's statement too; this close
	// only frees it early and cannot change the outcome.
	defer func() { _ = stmt.Close() }()
	for i := 1; i <= n; i++ {
		if _, err := stmt.ExecContext(ctx, i, fmt.Sprintf("Reader %d", i),
			fmt.Sprintf("reader%d@example.com", i), cities[i%len(cities)]); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// recipientEpic pages through the recipients table by primary key (keyset
// pagination): each Next is one indexed query, whatever the table's size.
// It implements pulling.Epic[Recipient] and pulling.Sized.
type recipientEpic struct {
	db     *sql.DB
	lastID int64 // owned by the master's fetch goroutine, never concurrent
	total  int
}

func newRecipientEpic(ctx context.Context, db *sql.DB) (*recipientEpic, error) {
	e := &recipientEpic{db: db}
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM recipients`).Scan(&e.total); err != nil {
		return nil, fmt.Errorf("emailcampaign: count recipients: %w", err)
	}
	return e, nil
}

func (e *recipientEpic) Remaining() int { return e.total }

func (e *recipientEpic) Next(ctx context.Context, limit int) ([]Recipient, error) {
	rows, err := e.db.QueryContext(ctx,
		`SELECT id, name, email, city FROM recipients WHERE id > ? ORDER BY id LIMIT ?`, e.lastID, limit)
	if err != nil {
		return nil, fmt.Errorf("emailcampaign: page after id %d: %w", e.lastID, err)
	}
	// rows.Err below reports what went wrong while reading; Close only frees
	// the connection.
	defer func() { _ = rows.Close() }()
	batch := make([]Recipient, 0, limit)
	for rows.Next() {
		var r Recipient
		if err := rows.Scan(&r.ID, &r.Name, &r.Email, &r.City); err != nil {
			return nil, err
		}
		batch = append(batch, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(batch) > 0 {
		e.lastID = batch[len(batch)-1].ID
	}
	return batch, nil
}
