package master

import (
	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

// onWorkBatch takes many submissions at once: each is checked and
// de-duplicated as a single Work would be (an id accepted before, or
// earlier in the same batch, is acknowledged without a second event), the
// new works are recorded as WorksAccepted events (one per groupMaxWorks
// works or groupMaxBytes of them) in one Persist, and one WorkBatchAck
// answers the whole batch once they are durable. The journal writes them
// in one commit unless the batch is larger than the persistence runtime's
// batch limits (then in a few).
func (a *masterActor) onWorkBatch(c actor.Context, b *messages.WorkBatch) {
	sender := c.Sender()
	if a.holdWhileRecovering(b, sender) {
		return
	}
	works := b.GetWorks()
	out := make([]*messages.BatchOutcome, len(works))
	at := a.clock.Now().UnixNano()
	var (
		events []proto.Message
		group  *messages.WorksAccepted
		size   int
		ids    []string
		// joins are the waiters duplicates added (WaiterAdded), written
		// after the acceptances: one may be of a work accepted earlier in
		// this batch.
		joins []proto.Message
	)
	for i, w := range works {
		if r := a.cfg.check(w); r != nil {
			out[i] = &messages.BatchOutcome{WorkId: w.GetWorkId(), Code: r.GetCode(), Reason: r.GetReason()}
			continue
		}
		out[i] = &messages.BatchOutcome{WorkId: w.GetWorkId(), Accepted: true}
		stored, joined := a.admit(w, at)
		if joined != nil {
			joins = append(joins, joined)
		}
		if stored == nil {
			continue
		}
		n := storedSize(stored)
		if group == nil || len(group.Works) == groupMaxWorks || size+n > groupMaxBytes {
			group, size = &messages.WorksAccepted{AtUnixNano: at}, 0
			events = append(events, group)
		}
		group.Works = append(group.Works, stored)
		size += n
		ids = append(ids, stored.GetWorkId())
	}
	events = append(events, joins...)
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

// Bounds of one WorksAccepted: far below the persistence runtime's group
// commit (persistence.DefaultMaxBatchBytes) and a journal row's size, and
// small enough that a feed read from a journal that decodes every event (no
// persistence.TypedLoader) decodes little it does not need past one.
const (
	groupMaxWorks = 1024
	groupMaxBytes = 256 << 10
)

// storedSize is about the encoded size of a stored work: its strings and
// payload, and a little for the tags and numbers.
func storedSize(w *messages.Work) int {
	return len(w.GetWorkId()) + len(w.GetJobType()) + len(w.GetPayload()) + 32
}
