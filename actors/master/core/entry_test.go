package core

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

// TestEntrySize keeps an entry within the 144-byte allocation class: a
// million retained works cost 64 MB more at the next class up (208 bytes,
// where the entry was before its cold fields moved out).
func TestEntrySize(t *testing.T) {
	t.Parallel()
	require.LessOrEqual(t, unsafe.Sizeof(entry{}), uintptr(144),
		"a field added to entry belongs in entryCold unless most works set it")
	require.Equal(t, uintptr(16), unsafe.Sizeof(finishedRef{}))
	// A failed or retried work allocates its cold fields: the fields
	// almost no work sets (further waiters, extra Work fields) hang off
	// them rather than grow them (issue 34: 64 bytes, 56 before, not 104).
	require.LessOrEqual(t, unsafe.Sizeof(entryCold{}), uintptr(64),
		"a field added to entryCold belongs in entryRare unless many works set it")
}

// TestEntryColdFields: a plain work keeps no cold fields from submission to
// done; a work that sets one gets them, and the payload and the result
// share entry.data without showing through each other.
func TestEntryColdFields(t *testing.T) {
	t.Parallel()
	withDeadline := &messages.WorkAccepted{Work: &messages.Work{WorkId: "d", JobType: "sq", Payload: []byte("p"),
		DeadlineUnixNano: at(time.Hour), Attempt: 2}, AtUnixNano: at(0)}
	tests := []struct {
		name          string
		evs           []proto.Message
		id            string
		cold          bool
		payload, res  string
		lastErr       string
		deadline      int64
		attempt       int32
		historyLength int
	}{
		{name: "Pending", evs: []proto.Message{accepted("a", "sq", 0)}, id: "a", payload: "a", historyLength: 1},
		{name: "Running", evs: []proto.Message{accepted("a", "sq", 0), started("a", "w", 1)}, id: "a", payload: "a", historyLength: 2},
		{name: "Done", evs: []proto.Message{accepted("a", "sq", 0), started("a", "w", 1), completed("a", "w", "r", 2)},
			id: "a", res: "r", historyLength: 3},
		{name: "DoneWithEmptyResult", evs: []proto.Message{accepted("a", "sq", 0), started("a", "w", 1), completed("a", "w", "", 2)},
			id: "a", historyLength: 3},
		{name: "FailedKeepsPayloadAndError", evs: []proto.Message{accepted("a", "sq", 0), started("a", "w", 1), failed("a", "w", 2, 3, false)},
			id: "a", cold: true, payload: "a", lastErr: "boom", historyLength: 3},
		{name: "DeadKeepsPayload", evs: []proto.Message{accepted("a", "sq", 0), started("a", "w", 1), failed("a", "w", 2, 0, true)},
			id: "a", cold: true, payload: "a", lastErr: "boom", historyLength: 4},
		{name: "RetriedThenDone", evs: []proto.Message{accepted("a", "sq", 0), started("a", "w", 1), failed("a", "w", 2, 3, false),
			started("a", "w", 4), completed("a", "w", "r", 5)}, id: "a", cold: true, res: "r", lastErr: "boom", historyLength: 5},
		{name: "SubmittedWithDeadlineAndAttempt", evs: []proto.Message{withDeadline}, id: "d", cold: true, payload: "p",
			deadline: at(time.Hour), attempt: 2, historyLength: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := build(t, tt.evs...)
			e := s.entries[tt.id]
			require.Equal(t, tt.cold, e.cold != nil, "cold fields allocated")
			require.Equal(t, tt.payload, string(e.payload()))
			require.Equal(t, tt.res, string(e.result()))
			require.Equal(t, tt.lastErr, e.lastError())
			require.Equal(t, tt.deadline, e.deadline())
			require.Equal(t, tt.attempt, e.attempt())
			require.Len(t, s.Status(tt.id).GetHistory(), tt.historyLength)
			require.Equal(t, tt.res, string(s.Status(tt.id).GetResult()))
			w := s.Work(tt.id)
			require.Equal(t, tt.payload, string(w.GetPayload()))
			require.Equal(t, tt.deadline, w.GetDeadlineUnixNano())
			require.Equal(t, tt.attempt, w.GetAttempt())
		})
	}
}

// TestForgetSkipsAReplacedWorkFinishedAtTheSameInstant: a dead work
// re-submitted and done at the instant it died leaves a ref to its old
// entry with the same finishing time; forgetting and snapshots must take
// only the new one, and forget it once its own time has passed.
func TestForgetSkipsAReplacedWorkFinishedAtTheSameInstant(t *testing.T) {
	t.Parallel()
	s := build(t, accepted("a", "sq", 0), started("a", "w", 1), failed("a", "w", 2, 0, true),
		accepted("a", "sq", 2), started("a", "w", 2), completed("a", "w", "r", 2))
	n := 0
	s.eachForSnapshot(func(e *entry) {
		n++
		require.Equal(t, "r", string(e.result()))
	})
	require.Equal(t, 1, n, "listed once")
	require.NoError(t, s.Apply(&messages.FinishedForgotten{BeforeUnixNano: at(2)}))
	require.True(t, s.IsDone("a"), "finished at 2: kept")
	require.NoError(t, s.Apply(&messages.FinishedForgotten{BeforeUnixNano: at(3)}))
	require.Zero(t, s.Len())
	require.Zero(t, s.Counts().Done)
	checkInvariants(t, s)
}
