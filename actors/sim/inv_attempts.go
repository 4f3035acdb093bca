package sim

import (
	"github.com/foreman-actors/foreman/messages"
)

// AttemptsBounded checks that attempts never exceed the maximum: no work is
// handed out again once it has failed (or timed out) as many times as the
// retry policy allows since it was last accepted, and the attempt a Work
// carries never passes the maximum. A hand-out that comes back without a
// failure (a failover requeues the work that was running) is not an
// attempt (seed 44 found attempt 4 of 3 before the master took such
// hand-outs back).
type AttemptsBounded struct{}

// Name identifies the invariant.
func (AttemptsBounded) Name() string { return "attempts_bounded" }

func (i AttemptsBounded) handOut(h *history, j *jobRec, w *messages.Work) {
	maxA := h.w.maxAttempts
	switch {
	case maxA <= 0:
	case j.failures >= maxA:
		h.violate(i, j.id, "", "handed out (attempt %d) after %d failed attempts; the maximum is %d", w.GetAttempt(), j.failures, maxA)
	case int(w.GetAttempt()) > maxA:
		h.violate(i, j.id, "", "handed out as attempt %d; the maximum is %d", w.GetAttempt(), maxA)
	}
}
