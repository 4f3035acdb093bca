// Package journaltest is the conformance suite every persistence.Journal backend
// must pass: fencing, sequence contiguity, loading, snapshots, deletion,
// concurrency, AppendAsync ordering, Close, persistence across reopen, and
// leases.
//
// A backend's test calls Run with a factory that opens a fresh journal,
// RunLeases with one that may hand the journal a manual clock, and
// RunReopen with one that can open the same store several times:
//
//	func TestConformance(t *testing.T) {
//		journaltest.Run(t, func(t *testing.T) persistence.Journal {
//			return journal.NewMemory()
//		})
//		journaltest.RunLeases(t, func(t *testing.T, clk *clock.Manual) (persistence.Journal, bool) {
//			return journal.NewMemory(journal.WithClock(clk)), true
//		})
//	}
//
// Every subtest writes to streams with a random suffix, so a backend whose
// store outlives the test (a shared PostgreSQL database) can be reused.
//
// Faulty wraps any journal to make its writes fail on demand, for testing
// the actors that use a journal.
package journaltest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/persistence"
)

// Factory opens a new, independent journal for one subtest. The suite closes
// it when the subtest ends.
type Factory func(t *testing.T) persistence.Journal

// Store returns an opener for one store (a file, a database); every call of
// the opener opens that same store again, and several may be open at once.
type Store func(t *testing.T) (open func() (persistence.Journal, error))

// Timeout bounds every wait of the suite; it is generous because CI machines
// are loaded.
const Timeout = 30 * time.Second

// Run runs every clause of the persistence.Journal contract against journals
// made by open.
func Run(t *testing.T, open Factory) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(*testing.T, persistence.Journal)
	}{
		{"AcquireEpochEmptyStream", testAcquireEmpty},
		{"AcquireEpochReturnsLastSeq", testAcquireLastSeq},
		{"AppendAndLoad", testAppendLoad},
		{"LoadFromSeq", testLoadFrom},
		{"LoadStopsOnCallbackError", testLoadStops},
		{"LoadTypesLeavesOthersUndecoded", testLoadTypes},
		{"StreamsAreIndependent", testStreamsIndependent},
		{"ContiguityFirstAppend", testContiguityFirst},
		{"ContiguityDuplicateAndGap", testContiguityDupGap},
		{"ContiguityWithinAppend", testContiguityWithin},
		{"EmptyAppend", testEmptyAppend},
		{"InvalidArguments", testInvalid},
		{"NewEpochFencesOld", testFencing},
		{"NeverAcquiredEpochFenced", testNeverAcquired},
		{"SnapshotNone", testSnapshotNone},
		{"SnapshotNewestWins", testSnapshotNewest},
		{"SnapshotBeyondLastSeq", testSnapshotBeyond},
		{"SnapshotMarshaledLoadsAsItsType", testSnapshotMarshaled},
		{"SnapshotLarge", testSnapshotLarge},
		{"SnapshotReadWhileReplaced", testSnapshotReadWhileReplaced},
		{"DeleteEventsKeepsLastSeq", testDeleteEvents},
		{"DeleteEventsBeyondLast", testDeleteBeyond},
		{"ConcurrentAppends", testConcurrentAppends},
		{"AppendAsyncCallOrder", testAsyncOrder},
		{"AppendAsyncFailuresAreIsolated", testAsyncIsolated},
		{"AppendCanceledContext", testCanceled},
		{"CloseWaitsForQueuedAppends", testCloseWaits},
		{"CallsAfterCloseFail", testAfterClose},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := open(t)
			t.Cleanup(func() { _ = j.Close() })
			tc.fn(t, j)
		})
	}
}

// RunReopen runs the clauses that need a store opened more than once:
// persistence across Close and reopen, and fencing and leases between two
// handles.
func RunReopen(t *testing.T, store Store) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(*testing.T, func() persistence.Journal)
	}{
		{"PersistsAcrossReopen", testPersist},
		{"TwoHandlesFenceEachOther", testTwoHandles},
		{"TwoHandlesConcurrentWriters", testTwoHandlesConcurrent},
		{"LeaseIsTheStores", testLeaseTwoHandles},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opener := store(t)
			open := func() persistence.Journal {
				t.Helper()
				j, err := opener()
				require.NoError(t, err)
				t.Cleanup(func() { _ = j.Close() })
				return j
			}
			tc.fn(t, open)
		})
	}
}

// Stream returns a stream name unique to this test run.
func Stream(t *testing.T, label string) string {
	t.Helper()
	var b [6]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	return fmt.Sprintf("%s/%s-%s", t.Name(), label, hex.EncodeToString(b[:]))
}

// Ev returns the test event with sequence number seq.
func Ev(seq int64) persistence.Event {
	return persistence.Event{Seq: seq, Msg: wrapperspb.String(fmt.Sprintf("event-%d", seq))}
}

// Evs returns the test events from..to inclusive.
func Evs(from, to int64) []persistence.Event {
	evs := make([]persistence.Event, 0, max(0, to-from+1))
	for s := from; s <= to; s++ {
		evs = append(evs, Ev(s))
	}
	return evs
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), Timeout)
	t.Cleanup(cancel)
	return c
}

// loadAll returns the events of stream from fromSeq.
func loadAll(t *testing.T, j persistence.Journal, stream string, fromSeq int64) []persistence.Event {
	t.Helper()
	var got []persistence.Event
	require.NoError(t, j.Load(ctx(t), stream, fromSeq, func(e persistence.Event) error {
		got = append(got, e)
		return nil
	}))
	return got
}

// requireEvents checks that got are exactly the test events from..to.
func requireEvents(t *testing.T, got []persistence.Event, from, to int64) {
	t.Helper()
	want := Evs(from, to)
	require.Len(t, got, len(want), "events loaded")
	for i := range want {
		require.Equal(t, want[i].Seq, got[i].Seq, "seq of event %d", i)
		require.True(t, proto.Equal(want[i].Msg, got[i].Msg), "event %d: want %v, got %v", i, want[i].Msg, got[i].Msg)
	}
}

func acquire(t *testing.T, j persistence.Journal, stream string) (epoch, last int64) {
	t.Helper()
	epoch, last, err := j.AcquireEpoch(ctx(t), stream)
	require.NoError(t, err)
	require.Positive(t, epoch)
	return epoch, last
}

func testAcquireEmpty(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	e1, last := acquire(t, j, s)
	require.Zero(t, last)
	e2, last := acquire(t, j, s)
	require.Zero(t, last)
	require.Greater(t, e2, e1)
}

func testAcquireLastSeq(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	require.NoError(t, j.Append(ctx(t), s, e, Evs(1, 3)))
	require.NoError(t, j.Append(ctx(t), s, e, Evs(4, 4)))
	e2, last := acquire(t, j, s)
	require.Greater(t, e2, e)
	require.Equal(t, int64(4), last)
}

func testAppendLoad(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	require.NoError(t, j.Append(ctx(t), s, e, Evs(1, 3)))
	require.NoError(t, j.Append(ctx(t), s, e, Evs(4, 5)))
	requireEvents(t, loadAll(t, j, s, 1), 1, 5)
	require.Empty(t, loadAll(t, j, Stream(t, "other"), 1), "unknown stream loads nothing")
}

func testLoadTypes(t *testing.T, j persistence.Journal) {
	tl, ok := j.(persistence.TypedLoader)
	if !ok {
		t.Skipf("%T does not implement persistence.TypedLoader", j)
	}
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	evs := []persistence.Event{
		{Seq: 1, Msg: wrapperspb.String("a")}, {Seq: 2, Msg: wrapperspb.Int64(2)},
		{Seq: 3, Msg: wrapperspb.String("c")}, {Seq: 4, Msg: wrapperspb.Int64(4)},
	}
	require.NoError(t, j.Append(ctx(t), s, e, evs))
	wanted := []protoreflect.FullName{(&wrapperspb.Int64Value{}).ProtoReflect().Descriptor().FullName()}
	var got []persistence.Event
	require.NoError(t, tl.LoadTypes(ctx(t), s, 2, wanted, func(ev persistence.Event) error {
		got = append(got, ev)
		return nil
	}))
	require.Len(t, got, 3, "every event from seq 2 is passed, decoded or not")
	for i, ev := range got {
		require.Equal(t, int64(i+2), ev.Seq)
		if ev.Seq%2 == 0 {
			require.True(t, proto.Equal(evs[ev.Seq-1].Msg, ev.Msg), "seq %d decoded", ev.Seq)
		} else {
			require.Nil(t, ev.Msg, "seq %d is of another type: not decoded", ev.Seq)
		}
	}
	all := loadAll(t, j, s, 1)
	require.Len(t, all, 4)
	require.True(t, proto.Equal(evs[2].Msg, all[2].Msg), "Load still decodes every event")
}

func testLoadFrom(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	require.NoError(t, j.Append(ctx(t), s, e, Evs(1, 10)))
	tests := []struct {
		name     string
		from     int64
		wantFrom int64
		wantTo   int64
	}{
		{name: "zero means all", from: 0, wantFrom: 1, wantTo: 10},
		{name: "negative means all", from: -5, wantFrom: 1, wantTo: 10},
		{name: "first", from: 1, wantFrom: 1, wantTo: 10},
		{name: "middle", from: 7, wantFrom: 7, wantTo: 10},
		{name: "last", from: 10, wantFrom: 10, wantTo: 10},
		{name: "past the end", from: 11, wantFrom: 11, wantTo: 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireEvents(t, loadAll(t, j, s, tc.from), tc.wantFrom, tc.wantTo)
		})
	}
}

func testLoadStops(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	require.NoError(t, j.Append(ctx(t), s, e, Evs(1, 5)))
	stop := errors.New("stop here")
	var seen []int64
	err := j.Load(ctx(t), s, 1, func(ev persistence.Event) error {
		seen = append(seen, ev.Seq)
		if ev.Seq == 2 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, []int64{1, 2}, seen)
}

func testStreamsIndependent(t *testing.T, j persistence.Journal) {
	a, b := Stream(t, "a"), Stream(t, "b")
	ea, _ := acquire(t, j, a)
	eb, _ := acquire(t, j, b)
	require.NoError(t, j.Append(ctx(t), a, ea, Evs(1, 3)))
	require.NoError(t, j.Append(ctx(t), b, eb, Evs(1, 1)))
	// A new epoch on a does not fence b.
	acquire(t, j, a)
	require.NoError(t, j.Append(ctx(t), b, eb, Evs(2, 2)))
	requireEvents(t, loadAll(t, j, a, 1), 1, 3)
	requireEvents(t, loadAll(t, j, b, 1), 1, 2)
}

func testContiguityFirst(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	require.ErrorIs(t, j.Append(ctx(t), s, e, Evs(2, 3)), persistence.ErrConflict, "an empty stream starts at 1")
	require.ErrorIs(t, j.Append(ctx(t), s, e, Evs(0, 1)), persistence.ErrConflict, "seq 0 does not exist")
	require.Empty(t, loadAll(t, j, s, 0))
	require.NoError(t, j.Append(ctx(t), s, e, Evs(1, 2)))
	requireEvents(t, loadAll(t, j, s, 0), 1, 2)
}

func testContiguityDupGap(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	require.NoError(t, j.Append(ctx(t), s, e, Evs(1, 3)))
	tests := []struct {
		name string
		evs  []persistence.Event
	}{
		{name: "duplicate of last", evs: Evs(3, 3)},
		{name: "overlap", evs: Evs(2, 4)},
		{name: "rewrite from start", evs: Evs(1, 1)},
		{name: "gap", evs: Evs(5, 6)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, j.Append(ctx(t), s, e, tc.evs), persistence.ErrConflict)
		})
	}
	requireEvents(t, loadAll(t, j, s, 1), 1, 3)
	_, last := acquire(t, j, s)
	require.Equal(t, int64(3), last)
}

func testContiguityWithin(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	bad := []persistence.Event{Ev(1), Ev(3)}
	require.ErrorIs(t, j.Append(ctx(t), s, e, bad), persistence.ErrConflict)
	bad = []persistence.Event{Ev(1), Ev(1)}
	require.ErrorIs(t, j.Append(ctx(t), s, e, bad), persistence.ErrConflict)
	require.Empty(t, loadAll(t, j, s, 0), "a rejected append stores nothing")
}

func testEmptyAppend(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	require.NoError(t, j.Append(ctx(t), s, e, nil))
	acquire(t, j, s)
	require.ErrorIs(t, j.Append(ctx(t), s, e, nil), persistence.ErrFenced, "an empty append still checks the epoch")
}

func testInvalid(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	_, _, err := j.AcquireEpoch(ctx(t), "")
	require.ErrorIs(t, err, persistence.ErrInvalid)
	require.ErrorIs(t, j.Append(ctx(t), "", e, Evs(1, 1)), persistence.ErrInvalid)
	require.ErrorIs(t, j.Append(ctx(t), s, e, []persistence.Event{{Seq: 1}}), persistence.ErrInvalid)
	require.ErrorIs(t, j.SaveSnapshot(ctx(t), s, e, persistence.Snapshot{}), persistence.ErrInvalid)
	require.Empty(t, loadAll(t, j, s, 0))
}

func testFencing(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	old, _ := acquire(t, j, s)
	require.NoError(t, j.Append(ctx(t), s, old, Evs(1, 2)))
	require.NoError(t, j.SaveSnapshot(ctx(t), s, old, persistence.Snapshot{Seq: 1, Msg: wrapperspb.Int64(1)}))

	cur, last := acquire(t, j, s)
	require.Greater(t, cur, old)
	require.Equal(t, int64(2), last)

	require.ErrorIs(t, j.Append(ctx(t), s, old, Evs(3, 3)), persistence.ErrFenced)
	require.ErrorIs(t, j.SaveSnapshot(ctx(t), s, old, persistence.Snapshot{Seq: 2, Msg: wrapperspb.Int64(2)}), persistence.ErrFenced)
	require.ErrorIs(t, j.DeleteEvents(ctx(t), s, old, 2), persistence.ErrFenced)
	errc := make(chan error, 1)
	j.AppendAsync(s, old, Evs(3, 3), func(err error) { errc <- err })
	require.ErrorIs(t, waitErr(t, errc), persistence.ErrFenced)

	// Nothing the fenced writer tried is visible.
	requireEvents(t, loadAll(t, j, s, 1), 1, 2)
	snap, ok, err := j.LoadSnapshot(ctx(t), s)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(1), snap.Seq)

	// The new writer carries on.
	require.NoError(t, j.Append(ctx(t), s, cur, Evs(3, 3)))
	requireEvents(t, loadAll(t, j, s, 1), 1, 3)
}

func testNeverAcquired(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	require.ErrorIs(t, j.Append(ctx(t), s, 1, Evs(1, 1)), persistence.ErrFenced, "no epoch acquired yet")
	e, _ := acquire(t, j, s)
	require.ErrorIs(t, j.Append(ctx(t), s, e+1, Evs(1, 1)), persistence.ErrFenced, "an epoch from the future")
	require.Empty(t, loadAll(t, j, s, 0))
}

func testSnapshotNone(t *testing.T, j persistence.Journal) {
	_, ok, err := j.LoadSnapshot(ctx(t), Stream(t, "s"))
	require.NoError(t, err)
	require.False(t, ok)
}

// testSnapshotMarshaled: a snapshot handed over in its wire form
// (persistence.Marshaled) is stored as the message it encodes.
func testSnapshotMarshaled(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	require.NoError(t, j.Append(ctx(t), s, e, Evs(1, 2)))
	data, err := proto.Marshal(wrapperspb.String("state"))
	require.NoError(t, err)
	msg := &persistence.Marshaled{Type: (*wrapperspb.StringValue)(nil).ProtoReflect().Type(), Data: data}
	require.NoError(t, j.SaveSnapshot(ctx(t), s, e, persistence.Snapshot{Seq: 2, Msg: msg}))
	snap, ok, err := j.LoadSnapshot(ctx(t), s)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, proto.Equal(wrapperspb.String("state"), snap.Msg), "got %T %v", snap.Msg, snap.Msg)
	require.ErrorIs(t, j.SaveSnapshot(ctx(t), s, e, persistence.Snapshot{Seq: 2, Msg: &persistence.Marshaled{Data: data}}), persistence.ErrInvalid)
}

func testSnapshotNewest(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	require.NoError(t, j.Append(ctx(t), s, e, Evs(1, 5)))
	require.NoError(t, j.SaveSnapshot(ctx(t), s, e, persistence.Snapshot{Seq: 2, Msg: wrapperspb.Int64(2)}))
	require.NoError(t, j.SaveSnapshot(ctx(t), s, e, persistence.Snapshot{Seq: 4, Msg: wrapperspb.Int64(4)}))
	// An older snapshot saved later does not replace a newer one.
	require.NoError(t, j.SaveSnapshot(ctx(t), s, e, persistence.Snapshot{Seq: 3, Msg: wrapperspb.Int64(3)}))
	snap, ok, err := j.LoadSnapshot(ctx(t), s)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(4), snap.Seq)
	require.True(t, proto.Equal(wrapperspb.Int64(4), snap.Msg), "got %v", snap.Msg)
	// Saving at the same seq again replaces it.
	require.NoError(t, j.SaveSnapshot(ctx(t), s, e, persistence.Snapshot{Seq: 4, Msg: wrapperspb.Int64(44)}))
	snap, _, err = j.LoadSnapshot(ctx(t), s)
	require.NoError(t, err)
	require.True(t, proto.Equal(wrapperspb.Int64(44), snap.Msg), "got %v", snap.Msg)
	// A snapshot of the empty state (seq 0) is allowed.
	s2 := Stream(t, "empty")
	e2, _ := acquire(t, j, s2)
	require.NoError(t, j.SaveSnapshot(ctx(t), s2, e2, persistence.Snapshot{Seq: 0, Msg: wrapperspb.Int64(0)}))
	snap, ok, err = j.LoadSnapshot(ctx(t), s2)
	require.NoError(t, err)
	require.True(t, ok)
	require.Zero(t, snap.Seq)
}

// Pattern returns n bytes that differ by seq and by position, so that a
// snapshot put together from pieces of two others shows.
func Pattern(seq int64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(int64(i)*31 + seq*7 + int64(i>>12))
	}
	return b
}

func loadBytes(t *testing.T, j persistence.Journal, stream string) (int64, []byte) {
	t.Helper()
	snap, ok, err := j.LoadSnapshot(ctx(t), stream)
	require.NoError(t, err)
	require.True(t, ok)
	v, isBytes := snap.Msg.(*wrapperspb.BytesValue)
	require.True(t, isBytes, "got %T", snap.Msg)
	return snap.Seq, v.GetValue()
}

// testSnapshotLarge: a snapshot of several MiB (stored in parts where the
// store splits them) reads back whole; an older one saved later is ignored
// and a smaller newer one replaces it entirely.
func testSnapshotLarge(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	require.NoError(t, j.Append(ctx(t), s, e, Evs(1, 9)))
	big := Pattern(5, 3<<20+12345)
	require.NoError(t, j.SaveSnapshot(ctx(t), s, e, persistence.Snapshot{Seq: 5, Msg: wrapperspb.Bytes(big)}))
	seq, got := loadBytes(t, j, s)
	require.Equal(t, int64(5), seq)
	require.True(t, bytes.Equal(big, got), "read back whole (%d bytes of %d)", len(got), len(big))
	require.NoError(t, j.SaveSnapshot(ctx(t), s, e, persistence.Snapshot{Seq: 4, Msg: wrapperspb.Bytes(Pattern(4, 2<<20))}))
	seq, got = loadBytes(t, j, s)
	require.Equal(t, int64(5), seq, "an older snapshot does not replace a newer one")
	require.True(t, bytes.Equal(big, got))
	require.NoError(t, j.SaveSnapshot(ctx(t), s, e, persistence.Snapshot{Seq: 9, Msg: wrapperspb.Bytes([]byte("newer"))}))
	seq, got = loadBytes(t, j, s)
	require.Equal(t, int64(9), seq)
	require.Equal(t, "newer", string(got), "nothing of the larger one it replaced")
}

// testSnapshotReadWhileReplaced: a reader loading while a writer replaces
// large snapshots always gets one snapshot whole, never pieces of two.
func testSnapshotReadWhileReplaced(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	const saves = 16
	require.NoError(t, j.Append(ctx(t), s, e, Evs(1, saves)))
	size := func(seq int64) int { return 2<<20 + int(seq)*1000 } // a length of each seq's own
	require.NoError(t, j.SaveSnapshot(ctx(t), s, e, persistence.Snapshot{Seq: 1, Msg: wrapperspb.Bytes(Pattern(1, size(1)))}))
	writing, stop := context.WithCancel(ctx(t))
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() {
		defer stop()
		for seq := int64(2); seq <= saves; seq++ {
			if err := j.SaveSnapshot(writing, s, e, persistence.Snapshot{Seq: seq, Msg: wrapperspb.Bytes(Pattern(seq, size(seq)))}); err != nil {
				t.Errorf("save %d: %v", seq, err)
				return
			}
		}
	})
	reads := 0
	for writing.Err() == nil {
		seq, got := loadBytes(t, j, s)
		require.Len(t, got, size(seq), "snapshot %d", seq)
		require.True(t, bytes.Equal(Pattern(seq, size(seq)), got), "snapshot %d is whole and its own", seq)
		reads++
	}
	wg.Wait()
	require.Positive(t, reads)
}

func testSnapshotBeyond(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	require.NoError(t, j.Append(ctx(t), s, e, Evs(1, 2)))
	require.ErrorIs(t, j.SaveSnapshot(ctx(t), s, e, persistence.Snapshot{Seq: 3, Msg: wrapperspb.Int64(3)}), persistence.ErrConflict)
	require.ErrorIs(t, j.SaveSnapshot(ctx(t), s, e, persistence.Snapshot{Seq: -1, Msg: wrapperspb.Int64(3)}), persistence.ErrInvalid)
	_, ok, err := j.LoadSnapshot(ctx(t), s)
	require.NoError(t, err)
	require.False(t, ok)
}

func testDeleteEvents(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	require.NoError(t, j.Append(ctx(t), s, e, Evs(1, 5)))
	require.NoError(t, j.SaveSnapshot(ctx(t), s, e, persistence.Snapshot{Seq: 3, Msg: wrapperspb.Int64(3)}))
	require.NoError(t, j.DeleteEvents(ctx(t), s, e, 3))
	requireEvents(t, loadAll(t, j, s, 1), 4, 5)
	require.NoError(t, j.DeleteEvents(ctx(t), s, e, 3), "deleting again is harmless")

	// The stream's position survives deletion.
	require.ErrorIs(t, j.Append(ctx(t), s, e, Evs(1, 1)), persistence.ErrConflict)
	require.NoError(t, j.Append(ctx(t), s, e, Evs(6, 6)))
	e2, last := acquire(t, j, s)
	require.Equal(t, int64(6), last)
	require.NoError(t, j.Append(ctx(t), s, e2, Evs(7, 7)))
	requireEvents(t, loadAll(t, j, s, 0), 4, 7)
	snap, ok, err := j.LoadSnapshot(ctx(t), s)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(3), snap.Seq, "deleting events keeps snapshots")
}

func testDeleteBeyond(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	require.NoError(t, j.Append(ctx(t), s, e, Evs(1, 3)))
	require.NoError(t, j.DeleteEvents(ctx(t), s, e, 100))
	require.Empty(t, loadAll(t, j, s, 0))
	_, last := acquire(t, j, s)
	require.Equal(t, int64(3), last, "deleting every event keeps the last seq")
	e, _ = acquire(t, j, s)
	require.NoError(t, j.Append(ctx(t), s, e, Evs(4, 4)))
	requireEvents(t, loadAll(t, j, s, 0), 4, 4)
}

func testConcurrentAppends(t *testing.T, j persistence.Journal) {
	const writers, perWriter = 16, 25
	streams := make([]string, writers)
	epochs := make([]int64, writers)
	for i := range streams {
		streams[i] = Stream(t, fmt.Sprintf("w%d", i))
		epochs[i], _ = acquire(t, j, streams[i])
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, cancel := context.WithTimeout(context.Background(), Timeout)
			defer cancel()
			for k := int64(1); k <= perWriter; k++ {
				if err := j.Append(c, streams[i], epochs[i], Evs(k, k)); err != nil {
					errs <- fmt.Errorf("writer %d seq %d: %w", i, k, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for i := range streams {
		requireEvents(t, loadAll(t, j, streams[i], 1), 1, perWriter)
	}
}

func testAsyncOrder(t *testing.T, j persistence.Journal) {
	const n = 300
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	var mu sync.Mutex
	var order []int64
	var errs []error
	all := make(chan struct{})
	for k := int64(1); k <= n; k++ {
		j.AppendAsync(s, e, Evs(k, k), func(err error) {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, k)
			if err != nil {
				errs = append(errs, fmt.Errorf("seq %d: %w", k, err))
			}
			if len(order) == n {
				close(all)
			}
		})
	}
	select {
	case <-all:
	case <-time.After(Timeout):
		t.Fatalf("only %d of %d AppendAsync callbacks ran within %v", len(order), n, Timeout)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, errs)
	for i, k := range order {
		require.Equal(t, int64(i+1), k, "callbacks run in call order")
	}
	requireEvents(t, loadAll(t, j, s, 1), 1, n)
}

func testAsyncIsolated(t *testing.T, j persistence.Journal) {
	a, b := Stream(t, "a"), Stream(t, "b")
	ea, _ := acquire(t, j, a)
	eb, _ := acquire(t, j, b)
	stale := ea
	ea, _ = acquire(t, j, a)
	type call struct {
		stream string
		epoch  int64
		evs    []persistence.Event
		want   error
	}
	calls := []call{
		{a, ea, Evs(1, 1), nil},
		{a, ea, Evs(1, 1), persistence.ErrConflict}, // duplicate
		{b, eb, Evs(1, 2), nil},
		{a, stale, Evs(2, 2), persistence.ErrFenced},
		{a, ea, Evs(2, 3), nil},
		{a, ea, []persistence.Event{{Seq: 4}}, persistence.ErrInvalid},
		{b, eb, Evs(4, 4), persistence.ErrConflict}, // gap
		{b, eb, Evs(3, 3), nil},
	}
	results := make([]chan error, len(calls))
	for i, c := range calls {
		results[i] = make(chan error, 1)
		j.AppendAsync(c.stream, c.epoch, c.evs, func(err error) { results[i] <- err })
	}
	for i, c := range calls {
		err := waitErr(t, results[i])
		if c.want == nil {
			require.NoError(t, err, "call %d", i)
		} else {
			require.ErrorIs(t, err, c.want, "call %d", i)
		}
	}
	requireEvents(t, loadAll(t, j, a, 1), 1, 3)
	requireEvents(t, loadAll(t, j, b, 1), 1, 3)
}

func testCanceled(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, j.Append(c, s, e, Evs(1, 1)), context.Canceled)
	_, _, err := j.AcquireEpoch(c, s)
	require.ErrorIs(t, err, context.Canceled)
}

func testCloseWaits(t *testing.T, j persistence.Journal) {
	const n = 200
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	var mu sync.Mutex
	calls, fails := 0, 0
	for k := int64(1); k <= n; k++ {
		j.AppendAsync(s, e, Evs(k, k), func(err error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if err != nil {
				fails++
			}
		})
	}
	require.NoError(t, j.Close())
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, n, calls, "Close returns after every queued callback ran")
	require.Zero(t, fails, "appends queued before Close are committed")
}

func testAfterClose(t *testing.T, j persistence.Journal) {
	s := Stream(t, "s")
	e, _ := acquire(t, j, s)
	require.NoError(t, j.Append(ctx(t), s, e, Evs(1, 1)))
	require.NoError(t, j.Close())

	_, _, err := j.AcquireEpoch(ctx(t), s)
	require.ErrorIs(t, err, persistence.ErrClosed)
	require.ErrorIs(t, j.Append(ctx(t), s, e, Evs(2, 2)), persistence.ErrClosed)
	require.ErrorIs(t, j.Load(ctx(t), s, 0, func(persistence.Event) error { return nil }), persistence.ErrClosed)
	require.ErrorIs(t, j.SaveSnapshot(ctx(t), s, e, persistence.Snapshot{Seq: 1, Msg: wrapperspb.Int64(1)}), persistence.ErrClosed)
	_, _, err = j.LoadSnapshot(ctx(t), s)
	require.ErrorIs(t, err, persistence.ErrClosed)
	require.ErrorIs(t, j.DeleteEvents(ctx(t), s, e, 1), persistence.ErrClosed)
	errc := make(chan error, 1)
	j.AppendAsync(s, e, Evs(2, 2), func(err error) { errc <- err })
	require.ErrorIs(t, waitErr(t, errc), persistence.ErrClosed)
	require.ErrorIs(t, j.Close(), persistence.ErrClosed, "a second Close")
}

func testPersist(t *testing.T, open func() persistence.Journal) {
	s := Stream(t, "s")
	j := open()
	e, _ := acquire(t, j, s)
	require.NoError(t, j.Append(ctx(t), s, e, Evs(1, 3)))
	require.NoError(t, j.SaveSnapshot(ctx(t), s, e, persistence.Snapshot{Seq: 2, Msg: wrapperspb.Int64(2)}))
	require.NoError(t, j.DeleteEvents(ctx(t), s, e, 1))
	done := make(chan error, 1)
	j.AppendAsync(s, e, Evs(4, 4), func(err error) { done <- err })
	require.NoError(t, j.Close())
	require.NoError(t, waitErr(t, done))

	j = open()
	e2, last := acquire(t, j, s)
	require.Greater(t, e2, e, "epochs survive reopen")
	require.Equal(t, int64(4), last)
	requireEvents(t, loadAll(t, j, s, 0), 2, 4)
	snap, ok, err := j.LoadSnapshot(ctx(t), s)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(2), snap.Seq)
	require.True(t, proto.Equal(wrapperspb.Int64(2), snap.Msg))
	require.ErrorIs(t, j.Append(ctx(t), s, e, Evs(5, 5)), persistence.ErrFenced, "the old epoch stays fenced")
	require.NoError(t, j.Append(ctx(t), s, e2, Evs(5, 5)))
}

func testTwoHandles(t *testing.T, open func() persistence.Journal) {
	s := Stream(t, "s")
	a, b := open(), open()
	ea, _ := acquire(t, a, s)
	require.NoError(t, a.Append(ctx(t), s, ea, Evs(1, 2)))
	eb, last := acquire(t, b, s)
	require.Greater(t, eb, ea)
	require.Equal(t, int64(2), last, "b sees what a wrote")
	require.ErrorIs(t, a.Append(ctx(t), s, ea, Evs(3, 3)), persistence.ErrFenced, "b's epoch fences a")
	require.ErrorIs(t, a.SaveSnapshot(ctx(t), s, ea, persistence.Snapshot{Seq: 2, Msg: wrapperspb.Int64(2)}), persistence.ErrFenced)
	require.ErrorIs(t, a.DeleteEvents(ctx(t), s, ea, 1), persistence.ErrFenced)
	require.NoError(t, b.Append(ctx(t), s, eb, Evs(3, 3)))
	requireEvents(t, loadAll(t, a, s, 1), 1, 3)
}

// testTwoHandlesConcurrent races two handles' writers on one stream, each
// re-acquiring when fenced: every stored event must be contiguous and every
// acknowledged append present exactly once.
func testTwoHandlesConcurrent(t *testing.T, open func() persistence.Journal) {
	s := Stream(t, "s")
	hs := []persistence.Journal{open(), open()}
	const rounds = 20
	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, len(hs))
	for hi, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, cancel := context.WithTimeout(context.Background(), Timeout)
			defer cancel()
			for r := range rounds {
				epoch, last, err := h.AcquireEpoch(c, s)
				if err != nil {
					errs <- err
					return
				}
				for k := range 3 {
					val := fmt.Sprintf("h%d-r%d-k%d", hi, r, k)
					err := h.Append(c, s, epoch, []persistence.Event{{Seq: last + 1, Msg: wrapperspb.String(val)}})
					if errors.Is(err, persistence.ErrFenced) {
						break
					}
					if err != nil {
						errs <- fmt.Errorf("handle %d: %w", hi, err)
						return
					}
					last++
					mu.Lock()
					acked[val] = true
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	got := loadAll(t, hs[0], s, 1)
	seen := map[string]bool{}
	for i, ev := range got {
		require.Equal(t, int64(i+1), ev.Seq)
		v := ev.Msg.(*wrapperspb.StringValue).GetValue()
		require.False(t, seen[v], "event %q stored twice", v)
		seen[v] = true
	}
	require.Equal(t, acked, seen, "exactly the acknowledged appends are stored")
}

func waitErr(t *testing.T, c <-chan error) error {
	t.Helper()
	select {
	case err := <-c:
		return err
	case <-time.After(Timeout):
		t.Fatalf("AppendAsync callback not called within %v", Timeout)
		return nil
	}
}
