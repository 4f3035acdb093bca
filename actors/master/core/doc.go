// Package core is the master's protocol as a pure value: what the master
// decides about every submission, hand-out, report and query, without
// protoactor, goroutines, clock reads or randomness. The actor in package
// master is an adapter that runs it on protoactor and the persistence
// runtime; the simulator (actors/sim) runs the same core on virtual time.
//
// # What it decides
//
// Submissions (Submit, SubmitBatch): validation (Config.Check), admission
// as WorkAccepted / WorksAccepted, duplicates (acknowledged again; a new
// waiter of an unfinished work joins with WaiterAdded; the waiter of a
// finished one is told its outcome), the Ack or WorkBatchAck. Hand-out
// (RequestWork): the dispatch plan (ready work in order, expired work made
// dead, per-job-type DispatchLimiters, WorkStarted / WorksStarted records,
// held for Config.StartedHold so a later write carries them), WorkIsReady to
// idle workers and a wake timer for backed-off work. Reports (Done,
// DoneBatch, Failed): completion, cancellation, permanent failure, retry
// with backoff or death (Policy). The cleanup timer: overdue works, stale
// workers, forgetting finished works after the retention or beyond the
// limit. Deregister, Detach, Resubmit, the queries (GetStatus,
// GetMasterStatus, List), outcomes to every waiter and the results to
// publish (Publish). While it does not serve it holds submissions (up to
// Config.RecoveryStash) and takes them once Recovered, or turns them away
// (RecoveryFailing, Stopping). WorkState is its event-sourced state.
//
// # How a runner drives it
//
// Build it with New(cfg). Recover: Reset(NewWorkState() or a state from
// RestoreSnapshot), then State().Apply each journal event in order (the
// runner's journal also writes a MasterRecovered event, applied the same
// way), then Step Serving and Recovered. From then on Step(now, input)
// with each input below, and carry out the returned effects in order (the
// slice is valid until the next Step):
//
//   - effect.Append{Events, Token}: append the events to the master's
//     journal stream, in order after every earlier Append. Once they are
//     durable, Step effect.Durable{Token} (Token 0: nothing waits for it);
//     after the Durable steps of one group commit, Step Committed. Durable
//     returns what waited for durability: outcomes to waiters (Send),
//     results (Publish), and accepted work becomes ready for hand-out.
//   - effect.Reply{AfterDurable: true}: send once every Append returned so
//     far is durable (acks, status answers); otherwise send at once.
//   - effect.Send: to a worker (Work, WorkBundle, WorkIsReady) or a waiter
//     (WorkResult). A PID stays the same pointer for a worker as long as it
//     does not change, so a runner may cache what it converts it to.
//   - effect.Timer / effect.StopTimer: arm or disarm; Step effect.Fired
//     with the name when it fires (a late fire of a replaced timer is
//     ignored). StartsTimer only groups writes: wall-clock time is fine.
//   - effect.Log: a line for the log. Publish: the completed result.
//
// # Serving
//
// The core hands out, records and answers only while it serves: from a
// Serving{Until} input until now reaches Until (the persistence runtime's
// Recovered: recovered and inside the lease). Every decision that hands
// out or answers checks now against it, so a runner that knows the lease's
// deadline passes it and the core stops deciding on time even between
// inputs; the actor, whose runtime checks the lease itself, steps Serving
// whenever Recovered changes, with a far Until while it is true.
//
// Config.Planted reintroduces known bugs for the simulator's tests (Bug).
package core
