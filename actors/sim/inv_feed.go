package sim

import "fmt"

// FeedExactlyOnce: every durable outcome appears in the result feed once,
// and a consumer resuming from any cursor misses none. Each feed consumer
// of the run (which resumes from its saved cursor after its node
// restarts) must have delivered every finishing event of every stream
// exactly once by the end.
type FeedExactlyOnce struct{}

// Name identifies the invariant.
func (FeedExactlyOnce) Name() string { return "feed_exactly_once" }

func (i FeedExactlyOnce) end(h *history) {
	for c, feed := range h.feeds {
		got := map[string]int{}
		for _, e := range feed {
			got[feedKey(e.GetWorkId(), e.GetSeq())]++
		}
		for _, id := range h.ids {
			for _, o := range h.jobs[id].outcomes {
				k := feedKey(id, o.seq)
				switch got[k] {
				case 1:
				case 0:
					h.violate(i, id, o.stream.name, "consumer %d never delivered the outcome %v at #%d", c, o.status, o.seq)
					return
				default:
					h.violate(i, id, o.stream.name, "consumer %d delivered the outcome at #%d %d times", c, o.seq, got[k])
					return
				}
			}
		}
	}
}

func feedKey(id string, seq int64) string { return fmt.Sprintf("%s@%d", id, seq) }
