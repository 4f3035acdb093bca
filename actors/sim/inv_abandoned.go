package sim

// AbandonedNeverStarts checks that a job whose every caller left before it
// started never starts. "Started" is the moment the worker asks the job's
// waiter whether its caller still waits, for the passage that then runs (the
// waiter then knows the caller left; a caller that leaves later has the
// running job cancelled), or the moment it runs when it asked nothing; a job
// with a caller that does not wait (submitted without a waiter, or detached)
// runs whatever the others do.
type AbandonedNeverStarts struct{}

// Name identifies the invariant.
func (AbandonedNeverStarts) Name() string { return "abandoned_never_starts" }

func (i AbandonedNeverStarts) start(h *history, j *jobRec) {
	if j.detached || j.callers == 0 || j.leftAt < 0 {
		return
	}
	if j.leftAt < j.askedAt {
		h.violate(i, j.id, "", "started though its %d caller(s) had all left at %v, before the worker asked at %v",
			j.callers, j.leftAt, j.askedAt)
	}
}
