package sim

// AckedEndsFinal checks that every acknowledged submission ends done, dead
// or cancelled and is never forgotten. A master's Ack must never be ahead of
// the journal (an ack before the fsync is a promise a crash can break), and
// at the end every id a caller was told is accepted has a final outcome in
// its stream.
type AckedEndsFinal struct{}

// Name identifies the invariant.
func (AckedEndsFinal) Name() string { return "acked_ends_final" }

func (i AckedEndsFinal) ack(h *history, j *jobRec) {
	if !j.accepted {
		h.violate(i, j.id, "", "the master acknowledged %s before any WorkAccepted of it was durable", j.id)
	}
}

func (i AckedEndsFinal) end(h *history) {
	for _, id := range h.ids {
		j := h.jobs[id]
		switch {
		case !j.acked:
		case !j.accepted:
			h.violate(i, id, "", "acknowledged but its acceptance is not in the journal: forgotten")
		case !isFinal(j.status):
			h.violate(i, id, "", "acknowledged but still %v after the cluster healed", j.status)
		}
	}
}
