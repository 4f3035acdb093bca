package sim

// DurableBeforeHandOut checks that nothing reaches a worker before its
// acceptance is durable: a crash of the master could otherwise erase work a
// worker runs (persist before effect).
type DurableBeforeHandOut struct{}

// Name identifies the invariant.
func (DurableBeforeHandOut) Name() string { return "durable_before_hand_out" }

func (i DurableBeforeHandOut) handOut(h *history, j *jobRec, sw sentWork) {
	w := sw.work
	if !j.accepted {
		h.violate(i, j.id, "", "reached a worker (attempt %d) before any WorkAccepted of it was durable", w.GetAttempt())
	}
}
