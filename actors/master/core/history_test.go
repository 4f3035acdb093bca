package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

// h is a short way to write an expected history event.
func h(kind messages.WorkHistoryKind, d time.Duration, attempt int32, worker, err string) *messages.WorkHistoryEvent {
	return &messages.WorkHistoryEvent{Kind: kind, AtUnixNano: at(d), Attempt: attempt, WorkerId: worker, Error: err}
}

func TestWorkHistory(t *testing.T) {
	t.Parallel()
	timedOut := func(id, worker string, d, nb time.Duration, dead bool) *messages.WorkerTimedOut {
		return &messages.WorkerTimedOut{WorkId: id, WorkerId: worker, AtUnixNano: at(d), NotBeforeUnixNano: at(nb), Dead: dead}
	}
	tests := []struct {
		name string
		evs  []proto.Message
		want []*messages.WorkHistoryEvent
	}{
		{
			name: "AcceptedStartedCompleted",
			evs:  []proto.Message{accepted("a", "sq", 0), started("a", "w1", 1), completed("a", "w1", "r", 2)},
			want: []*messages.WorkHistoryEvent{h(histAccepted, 0, 0, "", ""), h(histStarted, 1, 1, "w1", ""), h(histCompleted, 2, 1, "w1", "")},
		},
		{
			name: "FailedThenTimedOutThenDead",
			evs: []proto.Message{accepted("a", "sq", 0), started("a", "w1", 1), failed("a", "w1", 2, 3, false),
				started("a", "w2", 4), timedOut("a", "w2", 5, 6, false), started("a", "w1", 7), failed("a", "w1", 8, 0, true)},
			want: []*messages.WorkHistoryEvent{h(histAccepted, 0, 0, "", ""), h(histStarted, 1, 1, "w1", ""), h(histFailed, 2, 1, "w1", "boom"),
				h(histStarted, 4, 2, "w2", ""), h(histTimedOut, 5, 2, "w2", "work timed out"),
				h(histStarted, 7, 3, "w1", ""), h(histFailed, 8, 3, "w1", "boom"), h(histDead, 8, 3, "", "boom")},
		},
		{
			name: "ResubmittedDeadWorkContinuesItsHistory",
			evs: []proto.Message{accepted("a", "sq", 0), started("a", "w1", 1), failed("a", "w1", 2, 0, true),
				accepted("a", "sq", 3), started("a", "w2", 4), completed("a", "w2", "r", 5)},
			want: []*messages.WorkHistoryEvent{h(histAccepted, 0, 0, "", ""), h(histStarted, 1, 1, "w1", ""), h(histFailed, 2, 1, "w1", "boom"),
				h(histDead, 2, 1, "", "boom"), h(histAccepted, 3, 0, "", ""), h(histStarted, 4, 1, "w2", ""), h(histCompleted, 5, 1, "w2", "")},
		},
		{
			name: "ExpiredBeforeItRan",
			evs:  []proto.Message{accepted("a", "sq", 0), &messages.WorkExpired{WorkId: "a", Reason: "deadline passed", AtUnixNano: at(1)}},
			want: []*messages.WorkHistoryEvent{h(histAccepted, 0, 0, "", ""), h(histDead, 1, 0, "", "deadline passed")},
		},
		{
			name: "RequeuedByANewMaster",
			evs:  []proto.Message{accepted("a", "sq", 0), started("a", "w1", 1), &messages.MasterRecovered{AtUnixNano: at(2)}, started("a", "w2", 3)},
			want: []*messages.WorkHistoryEvent{h(histAccepted, 0, 0, "", ""), h(histStarted, 1, 1, "w1", ""), h(histRequeued, 2, 1, "w1", ""), h(histStarted, 3, 1, "w2", "")},
		},
		{
			name: "StaleEventsLeaveNoTrace",
			evs:  []proto.Message{accepted("a", "sq", 0), accepted("a", "sq", 1), completed("b", "w1", "r", 2), started("a", "w1", 3), failed("a", "w9", 4, 5, false)},
			want: []*messages.WorkHistoryEvent{h(histAccepted, 0, 0, "", ""), h(histStarted, 3, 1, "w1", "")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := build(t, tt.evs...)
			requireHistory(t, tt.want, s.Status("a").GetHistory())
			// A snapshot carries the history, so a restored state (a new
			// master) answers the same.
			r, err := RestoreWorkState(s.Snapshot())
			require.NoError(t, err)
			requireHistory(t, tt.want, r.Status("a").GetHistory())
		})
	}
}

func requireHistory(t *testing.T, want, got []*messages.WorkHistoryEvent) {
	t.Helper()
	require.Len(t, got, len(want), "history %v", got)
	for i := range want {
		require.True(t, proto.Equal(want[i], got[i]), "event %d: want %v, got %v", i, want[i], got[i])
	}
}

// TestWorkHistoryIsBounded retries a work many times: its history keeps the
// first transitions and the latest ones, never more than historyCap.
func TestWorkHistoryIsBounded(t *testing.T) {
	t.Parallel()
	evs := []proto.Message{accepted("a", "sq", 0)}
	for i := range 50 {
		d := time.Duration(10 * (i + 1))
		evs = append(evs, started("a", fmt.Sprintf("w%d", i), d), failed("a", fmt.Sprintf("w%d", i), d+1, d+2, false))
	}
	s := build(t, evs...)
	got := s.Status("a").GetHistory()
	require.Len(t, got, historyCap)
	require.Equal(t, histAccepted, got[0].GetKind())
	require.Equal(t, "w0", got[1].GetWorkerId(), "the first attempts are kept")
	last := got[len(got)-1]
	require.Equal(t, histFailed, last.GetKind())
	require.Equal(t, "w49", last.GetWorkerId(), "the latest attempt is kept")
	require.Equal(t, int32(50), last.GetAttempt())

	// A snapshot written with a longer history is cut to the bound.
	long := make([]*messages.WorkHistoryEvent, 40)
	for i := range long {
		long[i] = h(histStarted, time.Duration(i), int32(i), "w", "")
	}
	require.Len(t, historyFromProto(long), historyCap)
}
