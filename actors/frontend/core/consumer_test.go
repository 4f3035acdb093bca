package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/messages"
)

const (
	done      = messages.WorkStatus_WORK_STATUS_DONE
	dead      = messages.WorkStatus_WORK_STATUS_DEAD
	cancelled = messages.WorkStatus_WORK_STATUS_CANCELLED
)

// end is one finished work in the feed.
type end struct {
	id     string
	status messages.WorkStatus
	seq    int64
}

// consumedBy feeds ends to a consumer and returns those it consumed.
func consumedBy(c *Consumer, ends []end) []end {
	var out []end
	for _, e := range ends {
		if c.Consume(&messages.WorkResult{WorkId: e.id, Status: e.status}, e.seq) {
			out = append(out, e)
		}
	}
	return out
}

// TestPlantedDedupeByIDOnly: the planted bug (issue 34 item 2) drops a
// re-run's outcome as a duplicate of the first end of its id; without it
// every distinct outcome is consumed once and only redeliveries are
// duplicates.
func TestPlantedDedupeByIDOnly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		ends    []end
		correct []end // consumed without the bug
		planted []end // consumed with DedupeByIDOnly
	}{
		{
			name:    "a dead work re-submitted and done",
			ends:    []end{{"x", dead, 5}, {"x", done, 9}},
			correct: []end{{"x", dead, 5}, {"x", done, 9}},
			planted: []end{{"x", dead, 5}},
		},
		{
			name:    "a cancelled work re-submitted and cancelled again: same status, another sequence",
			ends:    []end{{"y", cancelled, 6}, {"y", cancelled, 12}},
			correct: []end{{"y", cancelled, 6}, {"y", cancelled, 12}},
			planted: []end{{"y", cancelled, 6}},
		},
		{
			name:    "the feed read again from an older cursor: both drop the redelivery",
			ends:    []end{{"z", done, 3}, {"z", done, 3}},
			correct: []end{{"z", done, 3}},
			planted: []end{{"z", done, 3}},
		},
		{
			name:    "distinct ids: the bug does not show",
			ends:    []end{{"a", done, 1}, {"b", dead, 2}},
			correct: []end{{"a", done, 1}, {"b", dead, 2}},
			planted: []end{{"a", done, 1}, {"b", dead, 2}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.correct, consumedBy(NewConsumer(ConsumerConfig{Window: 16}), tt.ends))
			require.Equal(t, tt.planted, consumedBy(NewConsumer(ConsumerConfig{Window: 16, Planted: DedupeByIDOnly}), tt.ends))
		})
	}
	require.Equal(t, "dedupe_by_id_only", DedupeByIDOnly.String())
	require.Equal(t, "none", NoBug.String())
}

// TestConsumerDedupeOff: a window of 0 consumes everything.
func TestConsumerDedupeOff(t *testing.T) {
	t.Parallel()
	c := NewConsumer(ConsumerConfig{})
	ends := []end{{"z", done, 3}, {"z", done, 3}}
	require.Equal(t, ends, consumedBy(c, ends))
	require.Equal(t, Stats{Consumed: 2}, c.Stats())
}

func page(next Cursor, ends ...end) *FeedPage {
	p := &FeedPage{Next: next}
	for _, e := range ends {
		p.Entries = append(p.Entries, FeedEntry{Cursor: Cursor{}.With(0, e.seq),
			FeedEntry: &messages.FeedEntry{WorkId: e.id, Status: e.status, Seq: e.seq}})
	}
	return p
}

// TestConsumerFeedSteps: resume from the saved cursor, consume a page,
// save its cursor, read on; 410 jumps to the oldest retained; ahead starts
// over; failures back off, doubling to the cap; redelivered outcomes are
// duplicates.
func TestConsumerFeedSteps(t *testing.T) {
	t.Parallel()
	c := NewConsumer(ConsumerConfig{Window: 8, FeedLimit: 10, FeedWait: time.Second, BackoffFirst: 100 * time.Millisecond, BackoffCap: 250 * time.Millisecond})
	at5 := Cursor{}.With(0, 5)
	read := func(after Cursor) ReadFeed { return ReadFeed{After: after, Limit: 10, Wait: time.Second} }

	require.Equal(t, []effect.Effect{read(at5)}, c.Step(t0, CursorLoaded{Cursor: at5, OK: true}))
	require.Nil(t, c.Step(t0, effect.Fired{Name: TimerFeedBackoff}), "a read is out: no second one")

	at9 := Cursor{}.With(0, 9)
	effs := c.Step(t0, FeedRead{Page: page(at9, end{"x", dead, 7}, end{"y", done, 8})})
	require.Len(t, effs, 4)
	require.Equal(t, "x", effs[0].(Consumed).Result.GetWorkId())
	require.Equal(t, int64(8), effs[1].(Consumed).Seq)
	require.Equal(t, SaveCursor{Cursor: at9}, effs[2])
	require.Equal(t, read(at9), effs[3])

	// An empty page moves the cursor but saves nothing.
	at11 := Cursor{}.With(0, 11)
	require.Equal(t, []effect.Effect{read(at11)}, c.Step(t0, FeedRead{Page: page(at11)}))

	// Failures back off: 100 ms, 200 ms, then the 250 ms cap.
	for _, d := range []time.Duration{100, 200, 250, 250} {
		require.Equal(t, []effect.Effect{effect.Timer{Name: TimerFeedBackoff, At: t0.Add(d * time.Millisecond)}}, c.Step(t0, FeedFailed{}))
		require.Equal(t, []effect.Effect{read(at11)}, c.Step(t0, effect.Fired{Name: TimerFeedBackoff}))
	}
	// A good read resets the backoff.
	c.Step(t0, FeedRead{Page: page(at11)})
	require.Equal(t, []effect.Effect{effect.Timer{Name: TimerFeedBackoff, At: t0.Add(100 * time.Millisecond)}}, c.Step(t0, FeedFailed{}))
	c.Step(t0, effect.Fired{Name: TimerFeedBackoff})

	// 410: on to the oldest retained, at once.
	at20 := Cursor{}.With(0, 20)
	effs = c.Step(t0, FeedGone{Oldest: at20})
	require.IsType(t, effect.Log{}, effs[0])
	require.Equal(t, read(at20), effs[1])
	// Ahead of the journal: from the start.
	effs = c.Step(t0, FeedAhead{})
	require.Equal(t, read(Cursor{}), effs[1])

	// From the start again: the outcomes consumed before are duplicates.
	effs = c.Step(t0, FeedRead{Page: page(at9, end{"x", dead, 7}, end{"y", done, 8}, end{"x", done, 9})})
	require.IsType(t, Duplicate{}, effs[0])
	require.IsType(t, Duplicate{}, effs[1])
	require.IsType(t, Consumed{}, effs[2], "x's re-run")
	require.Equal(t, Stats{Consumed: 3, Duplicates: 2}, c.Stats())

	// A store that failed to load: from the start; pub-sub results too.
	c2 := NewConsumer(ConsumerConfig{Window: 8})
	effs = c2.Step(t0, CursorLoaded{Cursor: at9, OK: false})
	require.Equal(t, Cursor{}, effs[1].(ReadFeed).After)
	require.IsType(t, Consumed{}, c2.Step(t0, Pushed{Result: &messages.WorkResult{WorkId: "p"}})[0])
	require.IsType(t, Duplicate{}, c2.Step(t0, Pushed{Result: &messages.WorkResult{WorkId: "p"}})[0])
}

// TestMergePages: each entry's cursor resumes just after it; a shard
// that did not answer stays where it was.
func TestMergePages(t *testing.T) {
	t.Parallel()
	from := Cursor{}.With(2, 4)
	p := MergePages(from,
		ShardPage{Shard: 0, Page: &messages.ResultsPage{Entries: []*messages.FeedEntry{{WorkId: "a", Seq: 3}}, NextSeq: 6}},
		ShardPage{Shard: 1},
		ShardPage{Shard: 2, Page: &messages.ResultsPage{Entries: []*messages.FeedEntry{{WorkId: "b", Seq: 7}}, NextSeq: 8}})
	require.Len(t, p.Entries, 2)
	require.Equal(t, "s0:3,s1:0,s2:4", p.Entries[0].Cursor.String())
	require.Equal(t, "s0:6,s1:0,s2:7", p.Entries[1].Cursor.String())
	require.Equal(t, "s0:6,s1:0,s2:8", p.Next.String())
	c, err := ParseCursor(p.Next.String())
	require.NoError(t, err)
	require.Equal(t, p.Next, c)
	_, err = ParseCursor("s1:4")
	require.ErrorIs(t, err, ErrInvalidCursor)
}
