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
    injected clock; snapshots every N events (Handler.Snapshot may decline),
    and once quiet for a fence-check interval (IdleSnapshotter). A handler
    with a large state may return its snapshot already in its wire form
    (Marshaled), so that no marshalled copy of it is made.

# Leases

The epoch fences: a new activation takes the stream and every older one
stops at its next write. That is right for a handoff, but when two
activations both believe they should serve (the two sides of a network
partition, each reaching the journal) they take turns fencing each other.
WithLease adds a lease in the journal (Journal.Lease): an activation takes
it before its epoch, renews it every ttl/3 while serving and releases it
when it stops; another activation that finds it held takes no epoch and
waits (PhaseWaitingForLease) until it lapses or is released. A holder that
cannot renew for a ttl stops, so a successor never waits longer than that.
WithLeaseGuard lets the node make a cut-off activation step down and never
take the lease. Each backend says which clock it measures leases on.

# The core

The protocol's decisions are pure code in actors/persistence/core: the
lease's holder side (core.Holder: the deadline, late renewals, the last
chance) and the journal's (core.Stream), the recovery backoff and probes,
and the batch and snapshot triggers; the runtime carries them out with
protoactor, goroutines and the injected clock. core.Session composes them
into the whole state machine (recover, serve, group commit) for the
simulator, which runs it on virtual time against core.Stream.

# Example

The package example is a counter that survives a restart: it applies an
increment to its state, persists the event and replies with Reply, so the
answer leaves only once the event is durable; a new activation replays the
journal from the latest snapshot. It holds a lease: a second activation
started while the first serves waits instead of fencing it, and the first's
stop releases the lease for the next one at once.

actors/master is the full example: its WorkState is the pure state, and the
master's shell only maps the distributed-workers protocol onto Persist,
Reply and Defer.
*/
package persistence
