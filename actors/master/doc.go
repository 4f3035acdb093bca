// Package master is the Master of Foreman's distributed workers (seed 001, the
// classic Akka 2.5 "distributed workers" sample): it accepts Work from
// frontends, acknowledges it once it is durable in the journal, hands it to
// workers that pull it, retries work whose worker failed or went silent, and
// publishes results.
//
// The package has two layers. Package core holds the master's protocol as
// a pure value: its event-sourced state ([WorkState], changed only by
// applying the journal events of messages/master.proto, so replaying the
// journal from a snapshot rebuilds it exactly) and every decision, taken
// by core.Master.Step from the time and one input and answered as effects
// (journal appends, sends, replies, timers). The actor made by [Props] is
// a thin adapter on the persistence.Runtime of actors/persistence: it turns
// protoactor's messages into the core's inputs and carries out its effects,
// persisting the events and performing the acks, hand-outs and results
// once they are durable.
//
// # Messages
//
// Frontend -> master: Work, answered by Ack after WorkAccepted is durable
// (also for an id already accepted or done), or by WorkRejected (INVALID,
// TOO_LARGE, UNKNOWN_TYPE, UNAVAILABLE while recovering); GetWorkStatus and
// GetMasterStatus, answered from the state. A Work whose id is accepted and
// unfinished and whose waiter is new (a retried wait) adds that waiter
// (WaiterAdded, durable before the Ack): the work is skipped as CANCELLED
// only once every waiting caller has gone (WaiterLeft hands it out again
// with the next caller's waiter), and every waiter is told the outcome.
//
// Worker -> master: RegisterWorker (every register interval), then
// WorkerRequestsWork with a capacity: the master hands out up to that many
// Work messages at once. WorkIsDone is answered by Ack once WorkCompleted is
// durable (again for a done id); WorkFailed re-queues the work after a
// backoff; DeregisterWorker returns the worker's work to the queue. Idle
// workers that asked for more than they got are told WorkIsReady once. A
// worker that requests work without having registered with this activation
// (the master restarted) is registered on the spot, for any job type until
// its next RegisterWorker.
//
// # States
//
// A work is ACCEPTED (pending), RUNNING, FAILED (pending again, not before
// its backoff), DONE or DEAD (out of attempts, or its submitter's deadline
// passed before it started). Done and dead works are kept for the done
// retention, then forgotten: a Work re-submitted with a forgotten id runs
// again. A dead work re-submitted with the same id is pending again.
//
// # Durability
//
// Persist before effect, as Akka's persist: nothing a frontend, a worker or
// a subscriber can observe precedes its record. Acks and status replies wait
// for everything persisted before them (persistence.Runtime.Reply), results
// are published once their WorkCompleted is durable, and new work is handed
// out only once its WorkAccepted is durable: the master knows it at once (a
// duplicate is recognised, WorkState.AcceptHeld) but releases it to the
// queue in the append's callback. The events of all messages handled while
// an append is being written share one group commit; the actor never waits
// for an fsync. A Work is sent without waiting for its WorkStarted to be
// durable (WithAwaitStarted changes that): recovery returns in-progress work
// to pending, so a lost WorkStarted only means the work runs again. The
// hand-outs of one request are one record (WorksStarted), and the master
// holds such records for up to a millisecond (WithStartedHold) so that the
// next write carries them: a short job's start and completion then share one
// commit instead of waiting for two fsyncs in turn. Answers that show the
// state write what is held first. Results that a worker reports together
// (WorkIsDoneBatch) are one write and one AckBatch. The new works of a
// WorkBatch are one record too (WorksAccepted, at most groupMaxWorks works or
// groupMaxBytes of them), which counts as its works toward the snapshot
// interval (persistence.Weigher). An append
// fenced by a newer activation stops the master; any other append error
// drops the unconfirmed state and re-reads the journal, as a restart would,
// so nothing unconfirmed is ever acknowledged.
//
// Recovery runs in Started (a new epoch, the snapshot, the events after it,
// then a MasterRecovered event that returns in-progress work to pending and
// lets an older activation see that it was replaced), blocking the actor so
// that messages wait in its mailbox; the same Props therefore serve as a
// plain actor and as a cluster grain. Snapshots are packed (core/snapshot.go:
// entries written straight into byte chunks and read back into shared
// arrays) and taken once the events since the previous one reach the works
// the state holds, or a sixteenth once the master is idle, so a
// restart after a burst replays little (persist.go).
//
// Before its epoch the master takes a lease on its stream in the journal
// (WithLeaseTTL, on by default) and renews it while it serves. A second
// activation that finds the lease held, as on the far side of a network
// partition, takes no epoch and answers Work with UNAVAILABLE until the
// lease is released (a stop or handoff) or lapses (its holder died or lost
// the journal); so two masters never take turns fencing each other.
//
// # Example
//
//	j, _ := journal.OpenSQLite("foreman-data/journal.db")
//	props, err := master.Props(j, master.WithWorkTimeout(10*time.Second))
//	if err != nil {
//		return err // an option out of range, named in the error
//	}
//	pid := system.Root.Spawn(props)
//	ack, _ := system.Root.RequestFuture(pid, &messages.Work{WorkId: "1", JobType: "square", Payload: []byte("7")}, 5*time.Second).Result()
package master
