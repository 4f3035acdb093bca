/*
Package persistence is the event-sourcing layer of Foreman's durable actors:
the journal port (Journal, Event, Snapshot and their errors) and Runtime,
which gives one protoactor actor Akka-style persistence over it.

The journal backends (in-memory, SQLite, PostgreSQL) live in cluster/journal
and implement Journal; actors depend only on this package, so imports point
down.

# The contract

An actor keeps its decisions in a pure state type. For each command it
decides, applies the resulting events to that state, and calls
Runtime.Persist with a then callback for what others may see. The runtime:

  - recovers at Start: a new epoch (every older activation is fenced), the
    newest snapshot (Handler.Reset), the events after it (Handler.Replay),
    and a recovery marker for singletons (RecoveryMarker);
  - puts the events of every message handled while the previous append was
    being written into one group commit (one fsync);
  - runs then, Reply and Defer only once everything persisted before them is
    durable, in sequence order: no reply, hand-out or publish precedes its
    record;
  - never acts on a failed write: it drops its unconfirmed state and
    recovers from the journal; a fenced write stops the actor;
  - retries a recovery that fails (journal briefly down) with backoff on an
    injected clock; snapshots every N events (Handler.Snapshot may decline).

# Example

The package example is a counter that survives a restart: it applies an
increment to its state, persists the event and replies with Reply, so the
answer leaves only once the event is durable; a new activation replays the
journal from the latest snapshot.

actors/master is the full example: its WorkState is the pure state, and the
master's shell only maps the distributed-workers protocol onto Persist,
Reply and Defer.
*/
package persistence
