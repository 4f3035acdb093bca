package sim

import "github.com/foreman-actors/foreman/messages"

// AttemptsBounded: a job is never handed out for more attempts than the
// retry policy's maximum.
type AttemptsBounded struct{}

// Name identifies the invariant.
func (AttemptsBounded) Name() string { return "attempts_bounded" }

func (i AttemptsBounded) handOut(h *history, j *jobRec, w *messages.Work) {
	if maxA := h.w.maxAttempts; maxA > 0 && int(w.GetAttempt()) > maxA {
		h.violate(i, j.id, "", "handed out for attempt %d; the maximum is %d", w.GetAttempt(), maxA)
	}
}
