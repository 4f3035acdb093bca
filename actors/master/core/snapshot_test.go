package core

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/messages"
)

// legacySnapshot is s as the WorkEntry messages masters wrote before the
// packed encoding: what an upgraded master finds in the journal, and a view
// of every field that does not go through the packed codec.
func legacySnapshot(s *WorkState) *messages.MasterSnapshot {
	snap := &messages.MasterSnapshot{NextOrder: s.nextOrder, AcceptedTotal: s.acceptedTotal}
	s.eachForSnapshot(func(e *entry) { snap.Entries = append(snap.Entries, e.toProto()) })
	return snap
}

func (e *entry) toProto() *messages.WorkEntry {
	readyAt, startedAt, workerID := e.shown()
	return &messages.WorkEntry{
		Work:               e.toWork(),
		Status:             e.status,
		Attempts:           e.attempts,
		LastError:          e.lastError(),
		Result:             e.result(),
		ReadyAtUnixNano:    readyAt,
		Order:              e.order,
		WorkerId:           workerID,
		StartedAtUnixNano:  startedAt,
		FinishedAtUnixNano: e.finishedAt,
		History:            historyToProto(e.hist(new([3]histEvent))),
	}
}

// mixedState holds a work in every status, with waiters, deadlines,
// retries, results and errors.
func mixedState(t *testing.T) *WorkState {
	t.Helper()
	s := NewWorkState()
	p := Policy{MaxAttempts: 2, BackoffBase: time.Second, BackoffMax: time.Second}
	at := func(d int) int64 { return t0.Add(time.Duration(d) * time.Millisecond).UnixNano() }
	apply := func(ev proto.Message) { require.NoError(t, s.Apply(ev)) }
	waiter := &messages.PID{Address: "127.0.0.1:3001", Id: "waiter$1", RequestId: 7}
	for i, id := range []string{"done", "dead", "cancelled", "retry", "running", "pending", "expired", "late"} {
		w := &messages.Work{WorkId: id, JobType: []string{"square", "sleep"}[i%2], Payload: []byte(id), DeadlineUnixNano: int64(i) * 1000}
		if i%3 == 0 {
			w.Waiter = waiter
		}
		apply(&messages.WorkAccepted{Work: w, AtUnixNano: at(i)})
	}
	start := func(id, worker string, ms int) {
		apply(&messages.WorkStarted{WorkId: id, WorkerId: worker, AtUnixNano: at(ms)})
	}
	fail := func(id, worker string, ms int, cancelled bool) {
		ev, ok := s.FailureEvent(p, id, worker, "boom "+id, time.Unix(0, at(ms)))
		require.True(t, ok)
		if cancelled {
			ev.Cancelled, ev.Dead, ev.NotBeforeUnixNano = true, false, 0
		}
		apply(ev)
	}
	start("done", "w1", 10)
	apply(&messages.WorkCompleted{WorkId: "done", WorkerId: "w1", Result: []byte("49"), AtUnixNano: at(11)})
	start("dead", "w1", 12)
	fail("dead", "w1", 13, false)
	apply(&messages.WorkStarted{WorkId: "dead", WorkerId: "w2", AtUnixNano: at(2000)})
	fail("dead", "w2", 2001, false)
	start("cancelled", "w2", 14)
	fail("cancelled", "w2", 15, true)
	start("retry", "w1", 16)
	fail("retry", "w1", 17, false)
	start("running", "w2", 18)
	apply(&messages.WaiterDetached{WorkId: "running"})
	apply(&messages.WorkExpired{WorkId: "expired", Reason: "late", AtUnixNano: at(19)})
	c := s.Counts()
	require.Equal(t, Counts{Pending: 3, InProgress: 1, Done: 1, Dead: 2, Cancelled: 1, AcceptedTotal: 8}, c)
	return s
}

func TestPackedSnapshot(t *testing.T) {
	t.Parallel()

	ids := []string{"done", "dead", "cancelled", "retry", "running", "pending", "expired", "late", "unknown"}
	requireSame := func(t *testing.T, want, got *WorkState) {
		t.Helper()
		require.True(t, proto.Equal(legacySnapshot(want), legacySnapshot(got)), "restored state differs")
		require.Equal(t, want.Counts(), got.Counts())
		require.Equal(t, want.PendingIDs(), got.PendingIDs())
		require.Equal(t, want.InProgress(), got.InProgress())
		for _, id := range ids {
			require.True(t, proto.Equal(want.Status(id), got.Status(id)), "status of %s", id)
			require.Equal(t, want.IsAccepted(id), got.IsAccepted(id), "duplicate detection of %s", id)
			require.Equal(t, want.IsFinished(id), got.IsFinished(id), id)
			require.True(t, proto.Equal(want.Work(id), got.Work(id)), "work of %s", id)
		}
		wantAt, wantOK := want.OldestFinishedAt()
		gotAt, gotOK := got.OldestFinishedAt()
		require.Equal(t, wantOK, gotOK)
		require.Equal(t, wantAt, gotAt)
	}

	t.Run("RestoreEqualsTheOriginal", func(t *testing.T) {
		t.Parallel()
		s := mixedState(t)
		snap := roundTrip(t, s.Snapshot())
		require.Empty(t, snap.GetEntries(), "a packed snapshot has no WorkEntry")
		require.Equal(t, int64(8), snap.GetChunkEntries())
		r, err := RestoreWorkState(snap)
		require.NoError(t, err)
		requireSame(t, s, r)
		require.True(t, proto.Equal(snap, r.Snapshot()), "restore then snapshot changes the bytes")
	})

	t.Run("Format1StillRestores", func(t *testing.T) {
		t.Parallel()
		// mixedState's snapshot as masters wrote it before flagPlain
		// (format 1: plain histories in full), by commit eedceca.
		data, err := os.ReadFile(filepath.Join("testdata", "mixed-state-format1.bin"))
		require.NoError(t, err)
		var old messages.PackedMasterSnapshot
		require.NoError(t, proto.Unmarshal(data, &old))
		require.Equal(t, byte(packedFormatV1), old.GetSnapshot().GetChunks()[0][0])
		r, err := RestoreSnapshot(&old)
		require.NoError(t, err)
		s := mixedState(t)
		requireSame(t, s, r)
		require.True(t, proto.Equal(s.Snapshot(), r.Snapshot()), "a restored format 1 snapshot is written as format 2 (3 only for entries that need it), plain entries flagged")
		now := s.Snapshot()
		require.Equal(t, byte(packedFormatV2), now.GetChunks()[0][0])
		require.Less(t, proto.Size(now), proto.Size(old.GetSnapshot()), "plain histories are not written out")
	})

	t.Run("UnknownFormatsAndMisplacedPlainFlagsAreRejected", func(t *testing.T) {
		t.Parallel()
		for _, format := range []byte{0, packedFormat + 1, packedFormatV1} {
			snap := mixedState(t).Snapshot()
			snap.Chunks[0][0] = format // format 1 has no flagPlain
			_, err := RestoreWorkState(snap)
			require.ErrorIs(t, err, ErrBadSnapshot, "format %d", format)
		}
	})

	t.Run("LegacySnapshotStillRestores", func(t *testing.T) {
		t.Parallel()
		s := mixedState(t)
		r, err := RestoreWorkState(roundTrip(t, legacySnapshot(s)))
		require.NoError(t, err)
		requireSame(t, s, r)
	})

	t.Run("PolicyWaitsForEventsInProportionToWorks", func(t *testing.T) {
		t.Parallel()
		s := NewWorkState()
		const n = 100
		for i := range n {
			require.NoError(t, s.Apply(&messages.WorkAccepted{Work: &messages.Work{WorkId: "w" + strconv.Itoa(i), JobType: "square"}, AtUnixNano: t0.UnixNano()}))
		}
		require.Equal(t, n, s.Len())
		for _, tc := range []struct {
			name  string
			idle  bool
			since int
			want  bool
		}{
			{"busy, one event short of the works", false, n - 1, false},
			{"busy, as many events as works", false, n, true},
			{"busy, at half (the earlier rule)", false, n / 2, false},
			{"idle, short of a sixteenth", true, n/16 - 1, false},
			{"idle, a sixteenth", true, (n + 15) / 16, true},
		} {
			ok := s.WantsSnapshot(tc.since, tc.idle)
			require.Equal(t, tc.want, ok, "%s: %d events since the last snapshot, %d works", tc.name, tc.since, n)
		}
	})

	t.Run("TheMasterWritesItsOwnTypeAndReadsBoth", func(t *testing.T) {
		t.Parallel()
		s := mixedState(t)
		require.True(t, s.WantsSnapshot(s.Len(), false))
		// What the shell hands the journal (persist.go's snapshotMsg).
		var size SnapshotSize
		snapshotMsg := func() proto.Message {
			var data []byte
			data, size = s.PackedWire(size)
			return &persistence.Marshaled{Type: (*messages.PackedMasterSnapshot)(nil).ProtoReflect().Type(), Data: data}
		}
		msg := snapshotMsg()
		// Handed to the journal in its wire form: the bytes of the
		// PackedMasterSnapshot, stored under that type.
		wire, isWire := msg.(*persistence.Marshaled)
		require.True(t, isWire, "got %T", msg)
		require.Equal(t, protoreflect.FullName("foreman.messages.PackedMasterSnapshot"), wire.Type.Descriptor().FullName(),
			"a packed snapshot under its own type: an older binary must not read it as an empty MasterSnapshot")
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&messages.PackedMasterSnapshot{Snapshot: s.Snapshot()})
		require.NoError(t, err)
		require.Equal(t, want, wire.Data, "the wire form is what marshalling the snapshot gives")
		packed := &messages.PackedMasterSnapshot{}
		require.NoError(t, proto.Unmarshal(wire.Data, packed))
		require.NotEmpty(t, packed.GetSnapshot().GetChunks())
		require.True(t, proto.Equal(packed, wire), "a journal that marshals it sees the same message")
		require.True(t, s.WantsSnapshot(s.Len(), true))
		again := snapshotMsg()
		require.Equal(t, want, again.(*persistence.Marshaled).Data, "sized from the previous snapshot")
		r, err := RestoreSnapshot(roundTrip(t, packed))
		require.NoError(t, err)
		requireSame(t, s, r)
		r, err = RestoreSnapshot(roundTrip(t, legacySnapshot(s)))
		require.NoError(t, err, "a snapshot of a master from before the packed encoding")
		requireSame(t, s, r)
		_, err = RestoreSnapshot(&messages.WorkStarted{WorkId: "x"})
		require.ErrorIs(t, err, ErrBadSnapshot)
	})

	t.Run("RestoredStateGoesOnTheSame", func(t *testing.T) {
		t.Parallel()
		s := mixedState(t)
		r, err := RestoreWorkState(roundTrip(t, s.Snapshot()))
		require.NoError(t, err)
		for _, st := range []*WorkState{s, r} {
			require.NoError(t, st.Apply(&messages.WorkAccepted{Work: &messages.Work{WorkId: "done", JobType: "square"}, AtUnixNano: 1}))
			require.NoError(t, st.Apply(&messages.WorkAccepted{Work: &messages.Work{WorkId: "dead", JobType: "square"}, AtUnixNano: 2}))
			require.NoError(t, st.Apply(&messages.MasterRecovered{AtUnixNano: 3}))
			require.NoError(t, st.Apply(&messages.FinishedForgotten{BeforeUnixNano: t0.Add(time.Second).UnixNano()}))
		}
		requireSame(t, s, r)
	})

	t.Run("ManyChunks", func(t *testing.T) {
		t.Parallel()
		s := NewWorkState()
		n := 2*chunkEntries + 5
		for i := range n {
			require.NoError(t, s.Apply(&messages.WorkAccepted{Work: &messages.Work{WorkId: "j" + strconv.Itoa(i), JobType: "square"}, AtUnixNano: int64(i)}))
			if i%3 == 0 {
				require.NoError(t, s.Apply(&messages.WorkStarted{WorkId: "j" + strconv.Itoa(i), WorkerId: "w", AtUnixNano: int64(i)}))
				require.NoError(t, s.Apply(&messages.WorkCompleted{WorkId: "j" + strconv.Itoa(i), WorkerId: "w", AtUnixNano: int64(i)}))
			}
		}
		snap := s.Snapshot()
		require.Len(t, snap.GetChunks(), 3)
		r, err := RestoreWorkState(roundTrip(t, snap))
		require.NoError(t, err)
		require.True(t, proto.Equal(legacySnapshot(s), legacySnapshot(r)))
		require.Equal(t, s.Counts(), r.Counts())
	})

	t.Run("DamagedChunksAreRejected", func(t *testing.T) {
		t.Parallel()
		good := mixedState(t).Snapshot().GetChunks()[0]
		for name, chunk := range map[string][]byte{
			"Empty":       {},
			"NewerFormat": append([]byte{packedFormat + 1}, good[1:]...),
			"Truncated":   good[:len(good)-3],
			"LongString":  {packedFormat, 0, 1, 200, 'x'},
		} {
			_, err := RestoreWorkState(&messages.MasterSnapshot{Chunks: [][]byte{chunk}})
			require.ErrorIs(t, err, ErrBadSnapshot, name)
		}
		_, err := RestoreWorkState(&messages.MasterSnapshot{Chunks: [][]byte{good}, Entries: legacySnapshot(mixedState(t)).GetEntries()})
		require.ErrorIs(t, err, ErrBadSnapshot)
	})
}

// TestDoneWorkIsCompact: a work done in a plain run keeps no history nor
// payload, and still answers status, listing and duplicate submissions as
// before.
func TestDoneWorkIsCompact(t *testing.T) {
	t.Parallel()
	s := NewWorkState()
	at := func(ms int) int64 { return t0.Add(time.Duration(ms) * time.Millisecond).UnixNano() }
	require.NoError(t, s.Apply(&messages.WorkAccepted{Work: &messages.Work{WorkId: "a", JobType: "square", Payload: []byte("7")}, AtUnixNano: at(1)}))
	require.NoError(t, s.Apply(&messages.WorkStarted{WorkId: "a", WorkerId: "w1", AtUnixNano: at(2)}))
	require.NoError(t, s.Apply(&messages.WorkCompleted{WorkId: "a", WorkerId: "w1", Result: []byte("49"), AtUnixNano: at(3)}))

	e := s.entries["a"]
	require.True(t, e.plain)
	require.Nil(t, e.history())
	require.Nil(t, e.cold, "nothing cold for a plain done work")
	require.Nil(t, e.payload())
	want := &messages.WorkStatusReply{WorkId: "a", Status: statusDone, Result: []byte("49"), Attempts: 1, JobType: "square",
		History: []*messages.WorkHistoryEvent{
			{Kind: histAccepted, AtUnixNano: at(1)},
			{Kind: histStarted, AtUnixNano: at(2), Attempt: 1, WorkerId: "w1"},
			{Kind: histCompleted, AtUnixNano: at(3), Attempt: 1, WorkerId: "w1"},
		}}
	require.True(t, proto.Equal(want, s.Status("a")), "status: %v", s.Status("a"))
	list := s.List(statusDone, 10)
	require.Len(t, list.GetWorks(), 1)
	require.True(t, proto.Equal(&messages.WorkSummary{WorkId: "a", JobType: "square", Status: statusDone, Attempts: 1, FinishedAtUnixNano: at(3)}, list.GetWorks()[0]))

	// A duplicate is acknowledged and not queued again.
	require.True(t, s.IsAccepted("a"))
	require.NoError(t, s.Apply(&messages.WorkAccepted{Work: &messages.Work{WorkId: "a", JobType: "square"}, AtUnixNano: at(4)}))
	require.Equal(t, Counts{Done: 1, AcceptedTotal: 1}, s.Counts())
	require.True(t, proto.Equal(want, s.Status("a")))

	// A work that needed a second attempt keeps its whole history.
	require.NoError(t, s.Apply(&messages.WorkAccepted{Work: &messages.Work{WorkId: "b", JobType: "square"}, AtUnixNano: at(5)}))
	require.NoError(t, s.Apply(&messages.WorkStarted{WorkId: "b", WorkerId: "w1", AtUnixNano: at(6)}))
	require.NoError(t, s.Apply(&messages.MasterRecovered{AtUnixNano: at(7)}))
	require.NoError(t, s.Apply(&messages.WorkStarted{WorkId: "b", WorkerId: "w2", AtUnixNano: at(8)}))
	require.NoError(t, s.Apply(&messages.WorkCompleted{WorkId: "b", WorkerId: "w2", AtUnixNano: at(9)}))
	require.False(t, s.entries["b"].plain)
	require.Len(t, s.Status("b").GetHistory(), 5)
}

// TestPlainHistoryIsImplied: a pending work and one running its first
// attempt keep no history either (their fields imply it); it is made
// explicit, unchanged, at the first event a plain one cannot express, and a
// snapshot restores the plain form.
func TestPlainHistoryIsImplied(t *testing.T) {
	t.Parallel()
	s := NewWorkState()
	at := func(ms int) int64 { return t0.Add(time.Duration(ms) * time.Millisecond).UnixNano() }
	apply := func(ev proto.Message) { require.NoError(t, s.Apply(ev)) }
	hist := func(s *WorkState, id string) []histEvent { return slices.Clone(s.entries[id].hist(new([3]histEvent))) }
	accepted := histEvent{kind: histAccepted, at: at(1)}
	started := histEvent{kind: histStarted, at: at(2), attempt: 1, worker: "w1"}

	for _, id := range []string{"a", "b", "c"} {
		apply(&messages.WorkAccepted{Work: &messages.Work{WorkId: id, JobType: "square", Payload: []byte("7")}, AtUnixNano: at(1)})
		require.True(t, s.entries[id].plain)
		require.Nil(t, s.entries[id].history())
	}
	require.Equal(t, []histEvent{accepted}, hist(s, "a"))
	restored, err := RestoreWorkState(roundTrip(t, s.Snapshot()))
	require.NoError(t, err)
	require.True(t, restored.entries["a"].plain, "a restored pending work is plain again")

	for _, id := range []string{"a", "b", "c"} {
		apply(&messages.WorkStarted{WorkId: id, WorkerId: "w1", AtUnixNano: at(2)})
		require.True(t, s.entries[id].plain)
	}
	require.Equal(t, []histEvent{accepted, started}, hist(s, "a"))
	restored, err = RestoreWorkState(roundTrip(t, s.Snapshot()))
	require.NoError(t, err)
	require.True(t, restored.entries["a"].plain, "a restored running work is plain again")
	require.Equal(t, []histEvent{accepted, started}, hist(restored, "a"))

	// A failure, a requeue and another worker's completion are explicit.
	apply(&messages.WorkerFailed{WorkId: "a", WorkerId: "w1", Error: "boom", AtUnixNano: at(3), NotBeforeUnixNano: at(4)})
	apply(&messages.WorkCompleted{WorkId: "c", WorkerId: "w2", AtUnixNano: at(6)})
	apply(&messages.MasterRecovered{AtUnixNano: at(5)})
	for _, id := range []string{"a", "b", "c"} {
		require.False(t, s.entries[id].plain, id)
	}
	require.Equal(t, []histEvent{accepted, started,
		{kind: histFailed, at: at(3), attempt: 1, worker: "w1", err: "boom"}}, hist(s, "a"))
	require.Equal(t, []histEvent{accepted, started,
		{kind: histRequeued, at: at(5), attempt: 1, worker: "w1"}}, hist(s, "b"))
	require.Equal(t, []histEvent{accepted, started,
		{kind: histCompleted, at: at(6), attempt: 1, worker: "w2"}}, hist(s, "c"))
}

// TestPackedWireSizing: a snapshot sized from the previous one is packed
// into one buffer, never regrown, with a handful of allocations whatever
// the number of works. Not parallel: AllocsPerRun refuses to run in a
// parallel test.
func TestPackedWireSizing(t *testing.T) {
	s := NewWorkState()
	for i := range 3 * chunkEntries {
		id := "job-" + strconv.Itoa(i)
		require.NoError(t, s.Apply(&messages.WorkAccepted{Work: &messages.Work{WorkId: id, JobType: "square", Payload: []byte("7")}, AtUnixNano: int64(i + 1)}))
		if i%2 == 0 {
			require.NoError(t, s.Apply(&messages.WorkStarted{WorkId: id, WorkerId: "w1", AtUnixNano: int64(i + 2)}))
			require.NoError(t, s.Apply(&messages.WorkCompleted{WorkId: id, WorkerId: "w1", Result: []byte("49"), AtUnixNano: int64(i + 3)}))
		}
	}
	first, size := s.PackedWire(SnapshotSize{})
	require.Equal(t, SnapshotSize{finishedBytes: size.finishedBytes, finished: 3 * chunkEntries / 2,
		otherBytes: size.otherBytes, others: 3 * chunkEntries / 2}, size)
	data, _ := s.PackedWire(size)
	require.Equal(t, first, data)
	require.LessOrEqual(t, cap(data)-len(data), len(data)/16+4096, "sized to the previous snapshot, a sixteenth over")
	allocs := testing.AllocsPerRun(5, func() { s.PackedWire(size) })
	require.LessOrEqual(t, allocs, 4.0, "the buffer, the open chunk's, the unfinished works' order: no regrowth, nothing per work")
}
