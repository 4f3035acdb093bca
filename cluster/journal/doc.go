/*
Package journal is the event journal of Foreman's persistent actors: an
append-only log of protobuf events per stream (persistence id), fenced so
that two activations of one actor can never both write, plus snapshots.

The embedded default is SQLite on disk (OpenSQLite); PostgreSQL serves
several hosts (OpenPostgres). Every backend passes the conformance suite in
journaltest.

# Backends

  - NewMemory: in memory, for tests and throwaway runs. Messages are stored
    marshalled, so it fails where a disk backend would.
  - OpenSQLite: the embedded default, one file in the node's data directory
    (pure Go, no cgo). WAL mode, synchronous=FULL: an acknowledged append is
    on disk. Several processes on one host may share the file.
  - OpenPostgres: PostgreSQL through pgx, for backends on several hosts.

All three pass the conformance suite in package journaltest.

# Writing

A writer first takes the stream with AcquireEpoch, which fences every earlier
writer, and then appends persistence.Event values numbered from the returned
last sequence number plus one; an append under an epoch that is no longer
current fails with persistence.ErrFenced (another activation took over: the
writer stops). The package's Example (example_test.go, compiled and run by
go test) shows the whole cycle: open, acquire, append, replay, fenced.

# Leases

Lease and ReleaseLease arbitrate which activation of a stream serves: a
holder takes the lease for a ttl, renews it, and releases it when it stops;
another holder is refused (persistence.ErrLeaseHeld, with who holds it and
for how long) until it lapses or is released. The lease is advisory; the
epoch still fences writes. Memory and SQLite measure leases on the clock
given with WithClock (the real clock by default; a SQLite file is shared
only by the processes of one host, which read one clock); PostgreSQL on
the database server's clock, so that hosts' clock skew does not matter.
The disk backends write leases through the group-commit writer, like any
other write.

# Group commit

The disk backends run one writer goroutine. It takes every write queued
while the previous transaction was committing (up to WithMaxBatch events)
and commits them in one transaction, so one fsync acknowledges them all;
there is no collection delay. Each request is checked on its own inside the
transaction: a fenced, conflicting or invalid request fails alone while the
others of its batch commit. If the store itself fails a transaction, its
requests are retried one per transaction, so only the culprit fails.

An actor should use AppendAsync: the call returns at once, requests are
written in call order, and the callbacks run in call order on the journal's
delivery goroutine (never on the caller's stack). A callback must not block
for long and must not call Close; sending a message to an actor is the
intended use.

# Cancellation

When Append's context ends before the commit, Append returns the context's
error and the events may or may not be stored: reload the stream, or
re-acquire, to know. A request whose context has ended before its
transaction starts is not written.
*/
package journal
