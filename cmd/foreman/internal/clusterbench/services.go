package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/node"
)

// The journal and membership of a run (-journal, -membership).

// checkServices checks -journal and -membership.
func (c *common) checkServices() error {
	if c.journal != "" && c.journal != "sqlite" {
		loc, err := journal.ParseURL(c.journal)
		if err != nil {
			return fmt.Errorf("-journal: %w", err)
		}
		if !strings.HasPrefix(c.journal, "postgres") {
			return fmt.Errorf("-journal %s: give sqlite (the default: a file in the run's directory) or a postgres:// URL", loc)
		}
	}
	if _, err := node.ParseMembership(c.membership); err != nil {
		return fmt.Errorf("-membership: %w", err)
	}
	return nil
}

// isPostgres reports whether the run's journal is PostgreSQL.
func (c *common) isPostgres() bool { return strings.HasPrefix(c.journal, "postgres") }

// journalName describes the run's journal for the report.
func (c *common) journalName() string {
	if c.isPostgres() {
		return "PostgreSQL journal"
	}
	return "SQLite journal (fsync on)"
}

// membershipName describes the run's membership for the report.
func (c *common) membershipName() string {
	m, _ := node.ParseMembership(c.membership)
	return m.String()
}

// memberFlag and memberValue are the membership flag of every node:
// --seeds with the two backends, or --membership etcd://...
func (c *common) memberFlag() string {
	if m, _ := node.ParseMembership(c.membership); m.IsEtcd() {
		return "--membership"
	}
	return "--seeds"
}

func (c *common) memberValue() string {
	if m, _ := node.ParseMembership(c.membership); m.IsEtcd() {
		return m.String()
	}
	return c.seeds()
}

// prepareJournal returns the --journal argument of the backends: a SQLite
// file in dir, or a fresh PostgreSQL database made for this run on the
// -journal server (so that no run recovers another's jobs), dropped by the
// returned func.
func (c *common) prepareJournal(ctx context.Context, dir string) (string, func(), error) {
	if !c.isPostgres() {
		return "--journal=sqlite:" + filepath.Join(dir, "data", node.JournalFile), func() {}, nil
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "clusterbench_" + hex.EncodeToString(b[:])
	if err := adminExec(ctx, c.journal, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("-journal: creating the run's database %s: %w", name, err)
	}
	u, err := url.Parse(c.journal)
	if err != nil {
		return "", nil, fmt.Errorf("-journal: %w", err)
	}
	u.Path = "/" + name
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := adminExec(ctx, c.journal, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			fmt.Printf("clusterbench: dropping the run's database %s: %v\n", name, err)
		}
	}
	return "--journal=" + u.String(), drop, nil
}

// adminExec runs one statement on the -journal server's database.
func adminExec(ctx context.Context, dsn, sql string) (err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, conn.Close(context.Background())) }()
	_, err = conn.Exec(ctx, sql)
	return err
}
