package sim

// AttemptsBounded checks that attempts never exceed the maximum: no work is
// handed out again once it has failed (or timed out) as many times as the
// retry policy allows since it was last accepted, and the attempt a Work
// carries never passes the maximum. A hand-out that comes back without a
// failure (a failover requeues the work that was running) is not an
// attempt (seed 44 found attempt 4 of 3 before the master took such
// hand-outs back). A hand-out is judged by the failures known when the
// master sent it: one that reaches a paused worker after the job died is
// that attempt arriving late, not another (seed 1019575).
type AttemptsBounded struct{}

// Name identifies the invariant.
func (AttemptsBounded) Name() string { return "attempts_bounded" }

func (i AttemptsBounded) handOut(h *history, j *jobRec, sw sentWork) {
	w, maxA := sw.work, h.w.maxAttempts
	switch {
	case maxA <= 0:
	case sw.failures >= maxA:
		h.violate(i, j.id, "", "handed out (attempt %d) after %d failed attempts; the maximum is %d", w.GetAttempt(), sw.failures, maxA)
	case int(w.GetAttempt()) > maxA:
		h.violate(i, j.id, "", "handed out as attempt %d; the maximum is %d", w.GetAttempt(), maxA)
	}
}
