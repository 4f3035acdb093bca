// Package master is the Master of Foreman's distributed workers (seed 001, the
// classic Akka 2.5 "distributed workers" sample): it accepts Work from
// frontends, acknowledges it once it is durable in the journal, hands it to
// workers that pull it, retries work whose worker failed or went silent, and
// publishes results.
//
// The package has two layers. [WorkState] is pure and event-sourced: it
// changes only by applying the journal events of messages/master.proto, so
// replaying the journal (from a snapshot) rebuilds it exactly. The actor
// made by [Props] is a thin shell around it: it decides, emits events,
// appends them to the journal and performs the effects (acks, results) once
// they are durable.
//
// # Messages
//
// Frontend -> master: Work, answered by Ack after WorkAccepted is durable
// (also for an id already accepted or done), or by WorkRejected (INVALID,
// TOO_LARGE, UNKNOWN_TYPE, UNAVAILABLE while recovering); GetWorkStatus and
// GetMasterStatus, answered from the state.
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
// Persist before effect: Acks and published results wait for their events.
// Events are appended with journal.AppendAsync, batched naturally (everything
// the messages in the mailbox produce goes into one append), and the
// outcome comes back to the actor as a message; the actor never waits for
// an fsync. The Acks of a batch, prepared by the actor when it flushed the
// batch and never changed after, are sent by the append's completion
// callback itself, so they do not queue behind the master's mailbox (this
// cut the ack latency by about a quarter); results are published by the
// actor. Work is handed out without waiting for WorkStarted to be durable
// (WithAwaitStarted changes that): recovery returns in-progress work to
// pending, so a lost WorkStarted only means the work runs again. An append
// fenced by a newer activation stops the master; any other append error
// drops the unconfirmed acks and re-reads the journal, as a restart would.
//
// Recovery runs in Started (AcquireEpoch, LoadSnapshot, Load, then a
// MasterRecovered event that returns in-progress work to pending), blocking
// the actor so that messages wait in its mailbox; the same Props therefore
// serve as a plain actor and as a cluster grain.
//
// # Example
//
//	j, _ := journal.OpenSQLite("foreman-data/journal.db")
//	pid := system.Root.Spawn(master.Props(j, master.WithWorkTimeout(10*time.Second)))
//	ack, _ := system.Root.RequestFuture(pid, &messages.Work{WorkId: "1", JobType: "square", Payload: []byte("7")}, 5*time.Second).Result()
package master
