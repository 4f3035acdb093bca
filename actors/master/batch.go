package master

import (
	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

// onWorkBatch takes many submissions at once: each is checked and
// de-duplicated as a single Work would be (an id accepted before, or
// earlier in the same batch, is acknowledged without a second event), the
// new WorkAccepted events join the journal in one Persist, and one
// WorkBatchAck answers the whole batch once they are durable. The journal
// writes them in one commit unless the batch is larger than the persistence
// runtime's batch limits (then in a few).
func (a *masterActor) onWorkBatch(c actor.Context, b *messages.WorkBatch) {
	sender := c.Sender()
	if a.holdWhileRecovering(b, sender) {
		return
	}
	works := b.GetWorks()
	out := make([]*messages.BatchOutcome, len(works))
	var (
		events []proto.Message
		ids    []string
	)
	for i, w := range works {
		if r := a.cfg.check(w); r != nil {
			out[i] = &messages.BatchOutcome{WorkId: w.GetWorkId(), Code: r.GetCode(), Reason: r.GetReason()}
			continue
		}
		out[i] = &messages.BatchOutcome{WorkId: w.GetWorkId(), Accepted: true}
		if ev := a.admit(w); ev != nil {
			events = append(events, ev)
			ids = append(ids, w.GetWorkId())
		}
	}
	if len(events) > 0 {
		a.journal(events, func() {
			for _, id := range ids {
				a.state.Release(id)
			}
			a.releasedWork = true
		})
	}
	a.rt.Reply(sender, &messages.WorkBatchAck{Outcomes: out})
}
