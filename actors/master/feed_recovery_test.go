package master_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/messages"
)

// TestResultFeedIsTheJournalsAcrossARecovery: what the master answers a
// ReadResults (from its in-memory tail when the cursor is recent, from the
// journal otherwise) is exactly what the journal holds, in order, for every
// cursor and limit: cursors from before a recovery (older than the tail,
// which a recovery empties) and after it alike, and following the cursor
// from 0 yields every finishing event once.
func TestResultFeedIsTheJournalsAcrossARecovery(t *testing.T) {
	t.Parallel()
	b := setup(t, master.WithMaxAttempts(1))
	// finish runs n new works to an end: done, dead (every 5th) or
	// cancelled (every 7th).
	next := 0
	finish := func(n int) {
		b.register(t, b.worker, "w1")
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprint("w", next+i)
			b.submit(t, ids[i])
		}
		require.Len(t, b.take(t, n), n)
		for i, id := range ids {
			switch k := next + i; {
			case k%7 == 0:
				b.worker.Send(b.master, &messages.WorkFailed{WorkerId: "w1", WorkId: id, Error: "gone", Cancelled: true})
			case k%5 == 0:
				b.worker.Send(b.master, &messages.WorkFailed{WorkerId: "w1", WorkId: id, Error: "boom"})
			default:
				b.worker.Send(b.master, &messages.WorkIsDone{WorkerId: "w1", WorkId: id, Result: []byte(id)})
			}
		}
		next += n
		b.status(t)
	}
	// all waits until the feed holds want entries and returns them with the
	// last cursor.
	all := func(want int) ([]*messages.FeedEntry, int64) {
		var got []*messages.FeedEntry
		var cur int64
		require.Eventually(t, func() bool {
			got, cur = nil, 0
			for {
				p := b.readResults(t, cur, 0, 0)
				require.Empty(t, p.GetError())
				if len(p.GetEntries()) == 0 {
					return len(got) == want
				}
				got, cur = append(got, p.GetEntries()...), p.GetNextSeq()
			}
		}, testkit.Timeout(), 5*time.Millisecond)
		return got, cur
	}

	finish(12)
	before, _ := all(12)
	b.restart(t) // a recovery: the tail starts empty at the recovered seq
	finish(12)
	entries, last := all(24)
	require.True(t, proto.Equal(&messages.ResultsPage{Entries: before}, &messages.ResultsPage{Entries: entries[:12]}),
		"the entries before the recovery are read back unchanged")

	journal, err := master.ReadFeed(context.Background(), b.mem, master.DefaultStream, 0, math.MaxInt64, master.MaxFeedLimit)
	require.NoError(t, err)
	require.Len(t, journal.GetEntries(), 24)
	for i, e := range journal.GetEntries() {
		require.True(t, proto.Equal(e, entries[i]), "entry %d: journal %v, master %v", i, e, entries[i])
	}
	for after := int64(0); after <= last; after++ {
		// The journal's entries after the cursor.
		var want []*messages.FeedEntry
		for _, e := range journal.GetEntries() {
			if e.GetSeq() > after {
				want = append(want, e)
			}
		}
		for _, limit := range []int32{1, 3, 0} {
			p := b.readResults(t, after, limit, 0)
			require.Empty(t, p.GetError(), "after %d limit %d", after, limit)
			n := len(want)
			if limit > 0 {
				n = min(n, int(limit))
			}
			require.Len(t, p.GetEntries(), n, "after %d limit %d", after, limit)
			for i, e := range p.GetEntries() {
				require.True(t, proto.Equal(want[i], e), "after %d limit %d entry %d", after, limit, i)
			}
			if n > 0 {
				require.Equal(t, p.GetEntries()[n-1].GetSeq(), p.GetNextSeq(), "after %d limit %d: the cursor resumes after the last entry", after, limit)
			} else {
				require.GreaterOrEqual(t, p.GetNextSeq(), after, "after %d limit %d", after, limit)
			}
		}
	}
}
