package sim

import (
	"bytes"

	"github.com/foreman-actors/foreman/messages"
)

// FinalResultStable checks that a job's final result never changes. Once a
// job is durably done, no later finishing event of it follows (it neither
// runs again nor ends otherwise), and every caller told its result is told
// the same one. (Dead and cancelled jobs may run again when re-submitted.)
type FinalResultStable struct{}

// Name identifies the invariant.
func (FinalResultStable) Name() string { return "final_result_stable" }

func (i FinalResultStable) outcome(h *history, j *jobRec, o outcome) {
	for _, p := range j.outcomes {
		if p.status == messages.WorkStatus_WORK_STATUS_DONE {
			h.violate(i, j.id, o.stream.name, "done at #%d of %s, then %v at #%d", p.seq, p.stream.name, o.status, o.seq)
			return
		}
	}
}

func (i FinalResultStable) told(h *history, j *jobRec, st messages.WorkStatus, result []byte) {
	if st != messages.WorkStatus_WORK_STATUS_DONE {
		return
	}
	if j.seenDone && !bytes.Equal(j.seen, result) {
		h.violate(i, j.id, "", "a caller was told result %q, another %q", j.seen, result)
	}
	j.seenDone, j.seen = true, result
}
