package sim

import "github.com/foreman-actors/foreman/messages"

// Invariant is a property of every run. It checks at the moments it names
// by implementing the checker interfaces below (each called as the thing
// happens, so a violation stops the run at the step that broke it) and,
// with endChecker, once at the end, after the faults stopped and the
// cluster healed. Adding an invariant is one file: a small type with a doc
// comment, its checks, and a line in Invariants.
type Invariant interface {
	// Name identifies the invariant in reports and tests.
	Name() string
}

// Invariants returns the invariants every run checks.
func Invariants() []Invariant {
	return []Invariant{
		AckedEndsFinal{},
		FinalResultStable{},
		OneServerAtATime{},
		AbandonedNeverStarts{},
		CancelledOnlyWhenAbandoned{},
		FeedExactlyOnce{},
		AttemptsBounded{},
		DurableBeforeHandOut{},
		UniqueNeverTwice{},
		ConcurrencyLimitHeld{},
		NeverEarly{},
		FairnessBounded{},
		TickAtMostOnce{},
		TickNeverEarly{},
		TickFired{},
		&KeyRateHeld{},
	}
}

// The checker interfaces: the moments an invariant can check at.
type (
	// outcomeChecker sees each durable finishing event of a job, before
	// the history records it.
	outcomeChecker interface {
		outcome(h *history, j *jobRec, o outcome)
	}
	// handOutChecker sees each work reaching a worker, with the failures
	// known when it was sent.
	handOutChecker interface {
		handOut(h *history, j *jobRec, sw sentWork)
	}
	// serveChecker sees each hand-out or status answer of a master
	// activation (holder of the stream's lease or not, recovered under
	// epoch).
	serveChecker interface {
		serve(h *history, s *stream, holder string, epoch int64, what string)
	}
	// epochChecker sees each AcquireEpoch of a stream as the journal
	// takes it, with the activation that asked.
	epochChecker interface {
		epoch(h *history, s *stream, holder string)
	}
	// ackChecker sees each acknowledgement a master sends a submitter.
	ackChecker interface{ ack(h *history, j *jobRec) }
	// startChecker sees each worker beginning a job, with when it last
	// asked the job's waiter whether its caller still waits (-1: it did
	// not ask).
	startChecker interface{ start(h *history, j *jobRec) }
	// toldChecker sees each final outcome told to a caller.
	toldChecker interface {
		told(h *history, j *jobRec, st messages.WorkStatus, result []byte)
	}
	// endChecker checks once at the end of the run.
	endChecker interface{ end(h *history) }
)
