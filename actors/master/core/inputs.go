package core

import (
	"time"

	"github.com/foreman-actors/foreman/messages"
)

// Inputs of Master.Step besides effect.Fired and effect.Durable. From is
// the sender of a request: where its Reply goes. The core reads From only
// during the Step and copies what it keeps, so a runner may pass one PID
// that it overwrites for every input (the actor does: no allocation per
// message); the messages themselves it may keep.
type (
	// Submit is a Work from a frontend.
	Submit struct {
		From *messages.PID
		Work *messages.Work
	}
	// SubmitBatch is a WorkBatch from a frontend.
	SubmitBatch struct {
		From  *messages.PID
		Batch *messages.WorkBatch
	}
	// Register is a RegisterWorker.
	Register struct {
		From *messages.PID
		Msg  *messages.RegisterWorker
	}
	// RequestWork is a WorkerRequestsWork.
	RequestWork struct {
		From *messages.PID
		Msg  *messages.WorkerRequestsWork
	}
	// Done is a WorkIsDone.
	Done struct {
		From *messages.PID
		Msg  *messages.WorkIsDone
	}
	// DoneBatch is a WorkIsDoneBatch.
	DoneBatch struct {
		From *messages.PID
		Msg  *messages.WorkIsDoneBatch
	}
	// Failed is a WorkFailed.
	Failed struct{ Msg *messages.WorkFailed }
	// Heartbeat is a WorkHeartbeat: jobs of a worker say they are alive,
	// with their progress.
	Heartbeat struct {
		From *messages.PID
		Msg  *messages.WorkHeartbeat
	}
	// Deregister is a DeregisterWorker.
	Deregister struct{ Msg *messages.DeregisterWorker }
	// GetStatus is a GetWorkStatus.
	GetStatus struct {
		From *messages.PID
		Msg  *messages.GetWorkStatus
	}
	// GetMasterStatus is a GetMasterStatus; Address and Epoch are the
	// runner's, reported as they are.
	GetMasterStatus struct {
		From    *messages.PID
		Address string
		Epoch   int64
	}
	// List is a ListWork.
	List struct {
		From *messages.PID
		Msg  *messages.ListWork
	}
	// Resubmit is a ResubmitWork.
	Resubmit struct {
		From *messages.PID
		Msg  *messages.ResubmitWork
	}
	// Detach is a DetachWaiter.
	Detach struct {
		From *messages.PID
		Msg  *messages.DetachWaiter
	}
	// Serving tells the core until when it may hand out and answer: the
	// journal is recovered and the lease is this activation's until Until
	// (zero: it is not). RecoveryFailing says a recovery attempt failed
	// and the runner waits to try again: submissions are turned away then
	// rather than held.
	Serving struct {
		Until           time.Time
		RecoveryFailing bool
	}
	// Recovered says the state (Reset, then State().Apply of each journal
	// event) is read back and the core serves; it arms its timers, tells
	// waiting workers of ready work and takes the submissions it held.
	Recovered struct{}
	// Committed says the Durable steps of one group commit are done. Work
	// released by them is announced to idle workers once per commit. A
	// runner without group commit steps it after each Durable.
	Committed struct{}
	// Stopping says the activation stops; held submissions are turned away.
	Stopping struct{}
	// Flush says something the runner answers itself shows the state (the
	// result feed): held hand-out records are journaled first.
	Flush struct{}
)

// Publish is the core's own effect: a completed work's result, to publish
// (the result hint of master.Publisher) once it is durable.
type Publish struct{ Result *messages.WorkResult }

// IsEffect marks Publish as an effect.Effect.
func (Publish) IsEffect() {}

// StartsTimer names the timer that writes held hand-out records
// (Config.StartedHold). The hold only groups journal writes and no
// decision depends on it: a runner may arm it on wall-clock time.
const StartsTimer = "starts"

// Names of the timers tied to one activation: the name carries the
// generation, so that a fire from before a recovery is recognised.
const (
	cleanupTimer = "cleanup/"
	beatTimer    = "beat/"
	wakeTimer    = "wake/"
)
