package master

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// streamS returns an in-memory journal and the epoch of its stream "s".
func streamS(t *testing.T) (*journal.Memory, int64) {
	t.Helper()
	mem := journal.NewMemory()
	t.Cleanup(func() { _ = mem.Close() })
	epoch, _, err := mem.AcquireEpoch(context.Background(), "s")
	require.NoError(t, err)
	return mem, epoch
}

// TestFeedTail: a read the tail answers is answered exactly as the journal
// answers it (entries and next cursor), for every cursor and limit; reads
// it cannot answer (older than the tail, or old enough that the journal may
// have deleted what follows) are left to the journal.
func TestFeedTail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mem, epoch := streamS(t)

	// 40 works: accepted, started, then completed or (every 7th) dead; a
	// few commits without finishing events in between.
	var events []proto.Message
	for i := range 40 {
		id := fmt.Sprint("w", i)
		events = append(events, &messages.WorkAccepted{Work: &messages.Work{WorkId: id, JobType: "square"}},
			&messages.WorkStarted{WorkId: id, WorkerId: "x"})
		if i%7 == 0 {
			events = append(events, &messages.WorkerFailed{WorkId: id, WorkerId: "x", Error: "boom", Dead: true})
		} else {
			events = append(events, &messages.WorkCompleted{WorkId: id, Result: []byte(id)})
		}
	}
	const base = 10 // the stream's events before the tail starts (a recovery at seq 10)
	hub := newFeedHub(1_000_000)
	hub.resetTail(base)
	var stored []persistence.Event
	for i := range base {
		stored = append(stored, persistence.Event{Seq: int64(i + 1), Msg: &messages.WorkAccepted{Work: &messages.Work{WorkId: fmt.Sprint("old", i), JobType: "square"}}})
	}
	for i, ev := range events {
		seq := int64(base + i + 1)
		stored = append(stored, persistence.Event{Seq: seq, Msg: ev})
		if e := feedEntry(seq, ev); e != nil {
			hub.addTail([]*messages.FeedEntry{e})
		}
	}
	require.NoError(t, mem.Append(ctx, "s", epoch, stored))
	durable := int64(len(stored))

	for after := int64(base); after <= durable; after++ {
		for _, limit := range []int{1, 3, 1000} {
			got, ok := hub.fromTail(after, durable, limit)
			require.True(t, ok, "after %d", after)
			want, err := ReadFeed(ctx, mem, "s", after, durable, limit)
			require.NoError(t, err)
			require.Len(t, got.GetEntries(), len(want.GetEntries()), "after %d limit %d", after, limit)
			for i := range want.GetEntries() {
				require.True(t, proto.Equal(want.GetEntries()[i], got.GetEntries()[i]), "after %d limit %d entry %d", after, limit, i)
			}
			require.Equal(t, want.GetNextSeq(), got.GetNextSeq(), "after %d limit %d", after, limit)
		}
	}
	// Entries not yet durable are not shown.
	got, ok := hub.fromTail(base, base+3, 1000)
	require.True(t, ok)
	require.Len(t, got.GetEntries(), 1)
	require.Equal(t, int64(base+3), got.GetNextSeq())

	_, ok = hub.fromTail(base-1, durable, 10)
	require.False(t, ok, "a cursor before the tail reads the journal")
	strict := newFeedHub(5)
	strict.resetTail(0)
	_, ok = strict.fromTail(durable-6, durable, 10)
	require.False(t, ok, "a cursor the journal may have deleted past reads the journal (which may answer gone)")
	_, ok = strict.fromTail(durable-5, durable, 10)
	require.True(t, ok)
}

// TestFeedTailTrims: the tail keeps at most twice feedTailSize entries and,
// once trimmed, leaves older cursors to the journal.
func TestFeedTailTrims(t *testing.T) {
	t.Parallel()
	hub := newFeedHub(1 << 40)
	hub.resetTail(0)
	seq := int64(0)
	for range 2*feedTailSize + 1 {
		seq += 3
		hub.addTail([]*messages.FeedEntry{{Seq: seq, WorkId: fmt.Sprint(seq)}})
	}
	require.Len(t, hub.tail, feedTailSize)
	first := hub.tail[0].GetSeq()
	require.Equal(t, first-3, hub.tailFrom, "covers everything after the last entry dropped")
	_, ok := hub.fromTail(hub.tailFrom-1, seq, 10)
	require.False(t, ok)
	p, ok := hub.fromTail(hub.tailFrom, seq, 2)
	require.True(t, ok)
	require.Equal(t, first, p.GetEntries()[0].GetSeq())
	require.Equal(t, first+3, p.GetNextSeq())
}

// plainJournal hides the journal's persistence.TypedLoader: a read decodes
// every event.
type plainJournal struct{ persistence.Journal }

// TestReadFeedSkipsOrCountsGroupedWorks: a read from a journal that leaves
// other events undecoded passes a stretch of WorksAccepted records cheaply
// and finds the result after them; from one that decodes everything, the
// records count as their works toward the scan bound, so the read stops
// after about as many works as it would scan one record each, with an
// advanced cursor.
func TestReadFeedSkipsOrCountsGroupedWorks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mem, epoch := streamS(t)
	var stored []persistence.Event
	for g := range 5 {
		ws := &messages.WorksAccepted{}
		for i := range 1024 {
			ws.Works = append(ws.Works, &messages.Work{WorkId: fmt.Sprint("g", g, "-", i), JobType: "square"})
		}
		stored = append(stored, persistence.Event{Seq: int64(g + 1), Msg: ws})
	}
	stored = append(stored, persistence.Event{Seq: 6, Msg: &messages.WorkCompleted{WorkId: "g0-0", Result: []byte("1")}})
	require.NoError(t, mem.Append(ctx, "s", epoch, stored))

	page, err := ReadFeed(ctx, mem, "s", 0, 6, 1)
	require.NoError(t, err)
	require.Len(t, page.GetEntries(), 1, "the records are not decoded: the result is found at once")
	require.Equal(t, int64(6), page.GetNextSeq())

	plain := plainJournal{mem}
	page, err = ReadFeed(ctx, plain, "s", 0, 6, 1)
	require.NoError(t, err)
	require.Empty(t, page.GetEntries(), "4 x 1024 works decoded reach the bound (feedMinScan) before the result")
	require.Equal(t, int64(4), page.GetNextSeq())
	page, err = ReadFeed(ctx, plain, "s", page.GetNextSeq(), 6, 1)
	require.NoError(t, err)
	require.Len(t, page.GetEntries(), 1, "the next read goes on from there")
	require.Equal(t, int64(6), page.GetNextSeq())
}
