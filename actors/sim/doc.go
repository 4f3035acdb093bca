// Package sim is Foreman's deterministic simulator: a whole cluster in one
// goroutine on virtual time, running the protocol's real pure cores under
// injected faults, with invariants checked after every step.
//
// # What runs and what is modelled
//
// Run: the master (actors/master/core) inside the persistence session
// (actors/persistence/core: lease, epochs, recovery, group commit), the
// worker (actors/worker/core), the frontend's submissions and result
// consumer (actors/frontend/core) and the callers' interests
// (actors/waiter/core). Each runs behind a thin adapter that turns its
// effects into model events and what reaches it into its inputs; the
// adapters decide nothing.
//
// Modelled: the network (protoactor's delivery and gRPC: per-link delay,
// loss, duplication, reordering, symmetric and one-way partitions), the
// journal (SQLite and PostgreSQL: group commit, fsync latency, write
// errors, a crash losing the unsynced tail, epochs and leases by
// persistence/core.Stream, the backends' rules, on the journal's clock),
// membership (detection delay, false suspicion, re-admission; each node
// places a shard's master with route/core's Owner over its own view),
// crashes, restarts,
// pauses and clocks that drift within a bound. The jobs and the callers
// (who submit, batch, wait, give up, cancel and re-submit) are the
// simulator's workload. The chaos and partition tests keep covering the
// real network and journals. An activation snapshots its state every 25
// events (persistence/core's SnapshotDue) and a recovery restores the
// newest snapshot and replays what follows, as the runtime does; the
// master's result feed is read from the journal model as the shell's
// ReadFeed does (it is not part of the master's core). Not modelled yet:
// the deletion of events a snapshot covers (and so the feed's 410), and
// the throttler (the rate invariant's hook is in inv_rate.go).
//
// # Determinism
//
// Every random choice is drawn from one PCG source seeded by Config.Seed,
// in the order the events ask; events fire in (virtual time, insertion)
// order; no map's iteration order matters. The same seed gives the same
// trace, byte for byte, and tracing draws nothing, so a failing seed
// replays with Config.Trace set (Run does that itself to cut the trace of
// a failure to the lines that touch its job or stream).
//
// # Adding an invariant
//
// One file: a small type with a doc comment saying what it checks, a
// Name, and the checker methods for the moments it judges (outcome,
// handOut, serve, ack, start, told, end; see invariant.go), then a line
// in Invariants.
package sim
