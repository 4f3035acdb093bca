/*
Package core is the persistence runtime's protocol as pure code: the lease
(both sides), and the recovery and serving state machine with group commit.
It reads no clock, starts no goroutine, imports neither protoactor nor
cluster/, and draws no random number; time comes from the caller. The
runtime (actors/persistence) makes its decisions through it; a simulator
(actors/sim) runs the same decisions on virtual time against a journal
model.

# The lease

Holder is the holder's side of one grant. Its serving deadline is the
start of the last renewal granted in time + its ttl - Margin(ttl); a
renewal answered after the deadline does not count (Granted reports false)
and the holder recovers under a new epoch. Serving(now) is the lease's half
of the runtime's Recovered; OnDeadline says what to do when the deadline
timer fires (rearm, recover, a last-chance renewal, stop). Stream is the
journal's side as cluster/journal's backends implement it: Lease grants on
the journal's clock for ttl from when the call reaches it (Grantable), a
waiting activation only once that has passed, and epochs fence older
writers. Whenever the journal's clock runs less than MaxDrift ppm faster
than a holder's, a holder's last instant of Serving comes before the
journal grants the lease to another.

# Driving a Session

A runner keeps one Session per persistent actor and steps it with the time
of its own clock and one input at a time; it carries out the returned
effects in order:

  - Start once; then, for each effect:
  - LeaseCall{Call, TTL}: call the journal's Lease; when its answer
    arrives, step LeaseAnswer{Call, Failure, State} (FailLeaseHeld with the
    other holder's state when refused).
  - Load{Call}: reset the upper core to the newest snapshot, take an epoch,
    replay; step Loaded{Call, Failure, Epoch, LastSeq}.
  - Probe{Call}: a cheap read; step Probed{Call, Failure}.
  - JournalAppend{Batch, Epoch, First, Events}: append in call order (group
    commit is the journal's business); step Appended{Batch, Failure} for
    every one, exactly once, also after a Stop.
  - FlushSoon: step Flush once the inputs already queued have been stepped.
  - Confirm{Token}: step the upper core with effect.Durable{Token} and send
    the replies that waited for it (only those with RepliesOnly).
  - Serve: the actor may decide from now on while Serving(now) holds.
  - Release: call the journal's ReleaseLease. Halt: stop the actor.
  - effect.Timer / effect.StopTimer: arm or disarm the named timer; when it
    fires, step effect.Fired{Name}. A stale firing is harmless.

The upper core persists by handing its effect.Append to Step (only while
Serving: it panics otherwise, as Runtime.Persist does). A runner classifies
journal errors into Failure: no answer is FailAway, ErrFenced FailFenced,
ErrLeaseHeld FailLeaseHeld, any other refusal FailRefused. Answers to calls
made before a recovery or a stop are recognised by their Call or Batch and
ignored.

# Planted bugs

Config.Planted and HolderConfig.Planted take a Bug (test-only):
LastChanceOverlap lets a holder serve through its last chance, past its
deadline, which the tests show lets two holders serve at one instant.
*/
package core
