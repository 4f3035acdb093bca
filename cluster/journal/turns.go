package journal

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Writers that share a SQLite file take turns.
//
// SQLite lets one connection write at a time. A writer that finds the lock
// taken is left to the busy handler, which sleeps 1, 2, 5, ... up to 100 ms
// between tries; a writer that commits back to back (a master under load)
// takes the lock again within microseconds of releasing it, so the other
// processes' writers keep finding it taken and sleep ever longer. Measured
// here: a lease renewal against such a writer missed its 100 ms budget 25
// times out of 30, so masters on the other backends lost their leases and
// stopped, over and over (TestSQLiteSharedFileIsFair).
//
// The journal therefore tries BEGIN IMMEDIATE itself, with short jittered
// pauses, and a writer that waits says so by holding a shared lock on a
// side file (the journal's path + "-writers") until it is in. After each
// commit the writer tests that lock: while anyone waits, it hands the turn
// over: it starts no transaction until the waiters are in (their shared
// locks gone), for at most maxYield. A fixed pause is not enough: a
// waiter's process that the CPU scheduler does not run within the pause
// (a loaded machine) finds the lock taken again, and again: with a 2 ms
// pause, a lease renewal on a loaded 2-core machine waited up to 540 ms
// (264 tries of BEGIN) while the other writer committed. A writer alone
// pays two non-blocking lock calls per commit.
// The side file holds no data; the kernel drops a dead process's lock
// with it, so a killed waiter delays nobody; a stopped one (SIGSTOP)
// delays each of the other's transactions by maxYield.

const (
	// minTryPause and maxTryPause bound the pause between two tries of
	// BEGIN IMMEDIATE (doubling, jittered).
	minTryPause = 100 * time.Microsecond
	maxTryPause = time.Millisecond
	// yieldPoll is how often a writer that saw waiters tests whether they
	// are in yet.
	yieldPoll = 500 * time.Microsecond
	// maxYield bounds how long a writer waits for waiters to get in: a
	// waiter that does not run for that long (a stopped process) costs
	// each of the other writer's transactions that much, no more.
	maxYield = 100 * time.Millisecond
)

// turnLock is the side file's lock: waiting marks this writer as waiting,
// othersWaiting tells whether another writer is (turns_unix.go; where
// flock is missing, turns_other.go never reports waiters).
type turnLock interface {
	waiting(on bool)
	othersWaiting() bool
	close() error
}

// beginTurn starts a write transaction on the writer connection: once the
// waiters seen at the last commit are in, then retrying BEGIN IMMEDIATE
// while another connection holds the write lock, for at most busy.
func (b *sqliteBackend) beginTurn(ctx context.Context) error {
	if b.yield {
		b.yield = false
		b.handOver(ctx)
	}
	deadline := time.Now().Add(b.busy)
	wait := minTryPause
	waiting := false
	defer func() {
		if waiting {
			b.turns.waiting(false)
		}
	}()
	for {
		_, err := b.wconn.ExecContext(ctx, qBegin)
		if err == nil || !isBusy(err) || !time.Now().Before(deadline) || ctx.Err() != nil {
			return err
		}
		if !waiting {
			waiting = true
			b.turns.waiting(true)
		}
		pause(ctx, wait/2+rand.N(wait/2+1))
		wait = min(2*wait, maxTryPause)
	}
}

// endTurn runs after a commit or rollback: if another writer waits, the
// next transaction yields to it first.
func (b *sqliteBackend) endTurn() { b.yield = b.turns.othersWaiting() }

// handOver waits until no other writer waits (each is in, or gave up), for
// at most maxYield or until ctx ends. It holds no lock meanwhile: the
// waiters' BEGIN finds the database free.
func (b *sqliteBackend) handOver(ctx context.Context) {
	deadline := time.Now().Add(maxYield)
	for {
		pause(ctx, yieldPoll)
		if ctx.Err() != nil || !b.turns.othersWaiting() || !time.Now().Before(deadline) {
			return
		}
	}
}

// pause sleeps for d or until ctx ends. The pauses pace retries against
// other processes, which run on the real clock.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// isBusy reports whether err is SQLite's "the database is locked".
func isBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
}
