package sim

import (
	"github.com/foreman-actors/foreman/messages"
)

// AttemptsBounded checks that attempts never exceed the maximum. A work is
// never handed out again once it has failed (or timed out) as many times as
// the retry policy allows since it was last accepted. A hand-out that a
// failover took back (MasterRecovered requeues the work that was running) is
// not a failed attempt: the job gets it again, and the Work's attempt number
// then counts past the maximum (seed 44 of the default mix shows attempt 4
// of 3); that is the master's documented behaviour, reported to the lead,
// not what this invariant judges.
type AttemptsBounded struct{}

// Name identifies the invariant.
func (AttemptsBounded) Name() string { return "attempts_bounded" }

func (i AttemptsBounded) handOut(h *history, j *jobRec, w *messages.Work) {
	if maxA := h.w.maxAttempts; maxA > 0 && j.failures >= maxA {
		h.violate(i, j.id, "", "handed out (attempt %d) after %d failed attempts; the maximum is %d", w.GetAttempt(), j.failures, maxA)
	}
}
