package sim

import "github.com/foreman-actors/foreman/messages"

// CancelledOnlyWhenAbandoned checks that a retried submission never loses
// its caller. A job ends cancelled (its callers left) only when no caller
// that was told the job is accepted still waits for it: a duplicate
// submission by a second caller who waits must join the job's waiters, or
// the first caller's leaving cancels a job the second still waits for.
// Judged when the cancellation follows a waiter's explicit "no longer
// interested", and not for callers cut off: a worker that does not hear from
// a waiter in time (a partition, a lost question) takes its caller for gone
// by design (worker.ErrCallerGone), which either cancels the job or drops
// that caller's waiter from it (WaiterLeft, seed 1716).
type CancelledOnlyWhenAbandoned struct{}

// Name identifies the invariant.
func (CancelledOnlyWhenAbandoned) Name() string { return "cancelled_only_when_abandoned" }

func (i CancelledOnlyWhenAbandoned) outcome(h *history, j *jobRec, o outcome) {
	if o.status == messages.WorkStatus_WORK_STATUS_CANCELLED && j.waitingAcked > 0 && j.saidNo {
		h.violate(i, j.id, o.stream.name, "cancelled at #%d while %d acknowledged caller(s) still wait", o.seq, j.waitingAcked)
	}
}
