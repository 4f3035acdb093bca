package sim

// FeedExactlyOnce checks that every durable outcome appears in the result
// feed once, and a consumer resuming from any cursor misses none. The run's
// feed consumer resumes from its saved cursor each time its node restarts;
// by the end it must have handed every finishing event of every stream to
// the application, and no incarnation of it may hand one over twice (its
// deduplication's job; across a crash, what came after the last saved cursor
// comes again, as documented: at least once). Once the faults stop, a second
// consumer resumes from a cursor the first saved (drawn from the seed, or
// the start): it must hand over, once each, every outcome after that cursor.
type FeedExactlyOnce struct{}

// Name identifies the invariant.
func (FeedExactlyOnce) Name() string { return "feed_exactly_once" }

type feedKey struct {
	id  string
	seq int64
}

func (i FeedExactlyOnce) end(h *history) {
	i.resumedEnd(h)
	if len(h.feeds) == 0 {
		return
	}
	seen := map[feedKey]bool{}
	for c, feed := range h.feeds {
		once := map[feedKey]bool{}
		for _, e := range feed {
			k := feedKey{e.GetWorkId(), e.GetSeq()}
			if once[k] {
				h.violate(i, k.id, "", "incarnation %d of the consumer handed the outcome at #%d over twice", c, k.seq)
				return
			}
			once[k], seen[k] = true, true
		}
	}
	for _, id := range h.ids {
		for _, o := range h.jobs[id].outcomes {
			if !seen[feedKey{id, o.seq}] {
				h.violate(i, id, o.stream.name, "the consumer never handed over the outcome %v at #%d", o.status, o.seq)
				return
			}
		}
	}
}

func (i FeedExactlyOnce) resumedEnd(h *history) {
	if h.resumeFrom == nil {
		return
	}
	from := *h.resumeFrom
	got := map[feedKey]int{}
	for _, e := range h.resumed {
		got[feedKey{e.GetWorkId(), e.GetSeq()}]++
	}
	for _, id := range h.ids {
		for _, o := range h.jobs[id].outcomes {
			s, _ := shardOfID(o.stream.name)
			if o.seq <= from.Seq(s) {
				continue
			}
			switch n := got[feedKey{id, o.seq}]; n {
			case 1:
			case 0:
				h.violate(i, id, o.stream.name, "a consumer resumed from cursor %s never handed over the outcome %v at #%d", from, o.status, o.seq)
				return
			default:
				h.violate(i, id, o.stream.name, "a consumer resumed from cursor %s handed over the outcome at #%d %d times", from, o.seq, n)
				return
			}
		}
	}
}
