package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) int64 { return t0.Add(d).UnixNano() }

func accepted(id, jobType string, d time.Duration) *messages.WorkAccepted {
	return &messages.WorkAccepted{Work: &messages.Work{WorkId: id, JobType: jobType, Payload: []byte(id)}, AtUnixNano: at(d)}
}

func started(id, worker string, d time.Duration) *messages.WorkStarted {
	return &messages.WorkStarted{WorkId: id, WorkerId: worker, AtUnixNano: at(d)}
}

func completed(id, worker, result string, d time.Duration) *messages.WorkCompleted {
	return &messages.WorkCompleted{WorkId: id, WorkerId: worker, Result: []byte(result), AtUnixNano: at(d)}
}

func failed(id, worker string, d, notBefore time.Duration, dead bool) *messages.WorkerFailed {
	return &messages.WorkerFailed{WorkId: id, WorkerId: worker, Error: "boom", AtUnixNano: at(d), NotBeforeUnixNano: at(notBefore), Dead: dead}
}

func build(t *testing.T, evs ...proto.Message) *WorkState {
	t.Helper()
	s := NewWorkState()
	for _, ev := range evs {
		require.NoError(t, s.Apply(ev))
	}
	checkInvariants(t, s)
	return s
}

func checkInvariants(t testing.TB, s *WorkState) {
	t.Helper()
	c := s.Counts()
	require.Equal(t, s.Len(), c.Pending+c.InProgress+c.Done+c.Dead+c.Cancelled, "every work is in exactly one state")
	require.Len(t, s.PendingIDs(), c.Pending)
	require.Len(t, s.InProgress(), c.InProgress)
}

func TestWorkStateEvents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		evs   []proto.Message
		check func(t *testing.T, s *WorkState)
	}{
		{
			name: "WorkAcceptedQueues",
			evs:  []proto.Message{accepted("a", "sq", 0), accepted("b", "sq", 1)},
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, []string{"a", "b"}, s.PendingIDs())
				require.True(t, s.IsAccepted("a"))
				require.Equal(t, messages.WorkStatus_WORK_STATUS_ACCEPTED, s.Status("a").GetStatus())
				require.Equal(t, int64(2), s.Counts().AcceptedTotal)
			},
		},
		{
			name: "WorkAcceptedTwiceQueuesOnce",
			evs:  []proto.Message{accepted("a", "sq", 0), accepted("a", "sq", 1)},
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, []string{"a"}, s.PendingIDs())
				require.Equal(t, int64(1), s.Counts().AcceptedTotal)
			},
		},
		{
			name: "WorkStartedMovesToInProgress",
			evs:  []proto.Message{accepted("a", "sq", 0), started("a", "w1", time.Second)},
			check: func(t *testing.T, s *WorkState) {
				require.Empty(t, s.PendingIDs())
				require.Equal(t, []Running{{WorkID: "a", WorkerID: "w1"}}, s.InProgress())
				require.Equal(t, int32(1), s.Attempts("a"))
				w, ok := s.WorkerOf("a")
				require.True(t, ok)
				require.Equal(t, "w1", w)
				require.Equal(t, messages.WorkStatus_WORK_STATUS_RUNNING, s.Status("a").GetStatus())
			},
		},
		{
			name: "WorkStartedOfUnknownOrRunningChangesNothing",
			evs:  []proto.Message{accepted("a", "sq", 0), started("a", "w1", 1), started("a", "w2", 2), started("zz", "w1", 3)},
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, []Running{{WorkID: "a", WorkerID: "w1"}}, s.InProgress())
				require.Equal(t, int32(1), s.Attempts("a"))
			},
		},
		{
			name: "WorkCompletedIsDoneWithResultAndDropsPayload",
			evs:  []proto.Message{accepted("a", "sq", 0), started("a", "w1", 1), completed("a", "w1", "42", 2)},
			check: func(t *testing.T, s *WorkState) {
				require.True(t, s.IsDone("a"))
				require.True(t, s.IsAccepted("a"))
				st := s.Status("a")
				require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, st.GetStatus())
				require.Equal(t, []byte("42"), st.GetResult())
				require.Equal(t, "sq", st.GetJobType())
				require.Nil(t, s.Work("a").GetPayload())
				require.Equal(t, 1, s.Counts().Done)
			},
		},
		{
			name: "WorkCompletedWhilePendingCompletesIt",
			evs:  []proto.Message{accepted("a", "sq", 0), completed("a", "late", "1", 2), completed("a", "other", "2", 3)},
			check: func(t *testing.T, s *WorkState) {
				require.Empty(t, s.PendingIDs())
				require.Equal(t, []byte("1"), s.Status("a").GetResult(), "the first result wins")
			},
		},
		{
			name: "WorkerFailedRequeuesWithBackoff",
			evs: []proto.Message{accepted("a", "sq", 0), accepted("b", "sq", 1), started("a", "w1", 2),
				failed("a", "w1", 3, 10*time.Second, false)},
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, []string{"b", "a"}, s.PendingIDs())
				st := s.Status("a")
				require.Equal(t, messages.WorkStatus_WORK_STATUS_FAILED, st.GetStatus())
				require.Equal(t, "boom", st.GetLastError())
				require.Equal(t, "b", s.NextReady(t0.Add(5*time.Second), nil).GetWorkId())
				next, ok := s.NextReadyAt(t0.Add(5 * time.Second))
				require.False(t, ok, "b is ready now, so no queue head waits: %v", next)
			},
		},
		{
			name: "WorkerFailedDeadIsDead",
			evs:  []proto.Message{accepted("a", "sq", 0), started("a", "w1", 1), failed("a", "w1", 2, 0, true)},
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, messages.WorkStatus_WORK_STATUS_DEAD, s.Status("a").GetStatus())
				require.False(t, s.IsAccepted("a"), "a dead work can be submitted again")
				require.Equal(t, 1, s.Counts().Dead)
			},
		},
		{
			name: "WorkerFailedFromOtherWorkerIsIgnored",
			evs:  []proto.Message{accepted("a", "sq", 0), started("a", "w1", 1), failed("a", "w2", 2, 0, true)},
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, messages.WorkStatus_WORK_STATUS_RUNNING, s.Status("a").GetStatus())
			},
		},
		{
			name: "WorkerTimedOutRequeues",
			evs: []proto.Message{accepted("a", "sq", 0), started("a", "w1", 1),
				&messages.WorkerTimedOut{WorkId: "a", WorkerId: "w1", AtUnixNano: at(20 * time.Second), NotBeforeUnixNano: at(21 * time.Second)}},
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, []string{"a"}, s.PendingIDs())
				require.Equal(t, "work timed out", s.Status("a").GetLastError())
				next, ok := s.NextReadyAt(t0.Add(20 * time.Second))
				require.True(t, ok)
				require.Equal(t, at(21*time.Second), next.UnixNano())
				require.Nil(t, s.NextReady(t0.Add(20*time.Second), nil))
			},
		},
		{
			name: "WorkExpiredIsDeadWithReason",
			evs: []proto.Message{accepted("a", "sq", 0),
				&messages.WorkExpired{WorkId: "a", Reason: "deadline passed", AtUnixNano: at(1)}},
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, messages.WorkStatus_WORK_STATUS_DEAD, s.Status("a").GetStatus())
				require.Equal(t, "deadline passed", s.Status("a").GetLastError())
			},
		},
		{
			name: "DeadResubmittedIsPendingAgain",
			evs: []proto.Message{accepted("a", "sq", 0), started("a", "w1", 1), failed("a", "w1", 2, 0, true),
				accepted("a", "sq", 3)},
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, []string{"a"}, s.PendingIDs())
				require.Equal(t, int32(0), s.Attempts("a"))
				require.Equal(t, 0, s.Counts().Dead)
			},
		},
		{
			name: "CancelledIsFinalAndResubmittable",
			evs: []proto.Message{accepted("a", "sq", 0), started("a", "w1", 1),
				&messages.WorkerFailed{WorkId: "a", WorkerId: "w1", Error: "caller gone", AtUnixNano: at(2), Cancelled: true}},
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, messages.WorkStatus_WORK_STATUS_CANCELLED, s.Status("a").GetStatus())
				require.Equal(t, 1, s.Counts().Cancelled)
				require.Zero(t, s.Counts().Dead)
				require.Empty(t, s.PendingIDs(), "not retried")
				require.False(t, s.IsAccepted("a"), "re-submittable")
				require.NoError(t, s.Apply(accepted("a", "sq", 3)))
				require.Equal(t, []string{"a"}, s.PendingIDs())
				require.Zero(t, s.Counts().Cancelled)
				checkInvariants(t, s)
			},
		},
		{
			name: "WaiterDetachedDropsTheWaiter",
			evs: []proto.Message{&messages.WorkAccepted{Work: &messages.Work{WorkId: "a", JobType: "sq", Waiter: &messages.PID{Address: "x", Id: "y"}}},
				&messages.WaiterDetached{WorkId: "a"}},
			check: func(t *testing.T, s *WorkState) {
				require.Nil(t, s.Work("a").GetWaiter())
				require.Equal(t, []string{"a"}, s.PendingIDs())
			},
		},
		{
			name: "FinishedForgottenAfterRetention",
			evs: []proto.Message{accepted("a", "sq", 0), accepted("b", "sq", 0), started("a", "w", 1), completed("a", "w", "", time.Minute),
				started("b", "w", 1), completed("b", "w", "", 2*time.Minute),
				&messages.FinishedForgotten{BeforeUnixNano: at(90 * time.Second)}},
			check: func(t *testing.T, s *WorkState) {
				require.False(t, s.IsAccepted("a"), "forgotten: a re-submit runs again")
				require.True(t, s.IsDone("b"))
				require.Equal(t, 1, s.Len())
			},
		},
		{
			name: "FinishedForgottenSkipsResubmitted",
			evs: []proto.Message{accepted("a", "sq", 0), started("a", "w", 1), failed("a", "w", time.Second, 0, true),
				accepted("a", "sq", time.Minute), &messages.FinishedForgotten{BeforeUnixNano: at(time.Hour)}},
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, []string{"a"}, s.PendingIDs())
			},
		},
		{
			name: "MasterRecoveredRequeuesInProgressFirst",
			evs: []proto.Message{accepted("a", "sq", 0), accepted("b", "sq", 1), accepted("c", "sq", 2),
				started("a", "w1", 3), started("b", "w2", 4), &messages.MasterRecovered{AtUnixNano: at(5)}},
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, []string{"a", "b", "c"}, s.PendingIDs())
				require.Empty(t, s.InProgress())
				require.Equal(t, int32(0), s.Attempts("a"), "a hand-out a failover took back is not an attempt")
			},
		},
		{
			// Found by the simulator (actors/sim, seed 44): a work on its
			// last attempt when its master failed over was handed out
			// again as attempt 4 of 3.
			name: "MasterRecoveredNeverPushesPastTheLastAttempt",
			evs: []proto.Message{accepted("a", "sq", 0), started("a", "w1", 1), failed("a", "w1", 2, 0, false),
				started("a", "w1", 3), failed("a", "w1", 4, 0, false), started("a", "w1", 5),
				&messages.MasterRecovered{AtUnixNano: at(6)}, started("a", "w2", 7)},
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, int32(3), s.Attempts("a"), "the third hand-out again, not a fourth")
				checkInvariants(t, s)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.check(t, build(t, tt.evs...))
		})
	}
}

func TestWorkStateUnknownEvent(t *testing.T) {
	t.Parallel()
	err := NewWorkState().Apply(&messages.Ack{WorkId: "x"})
	require.ErrorIs(t, err, ErrUnknownEvent)
}

func TestWorkStateQueries(t *testing.T) {
	t.Parallel()
	p := Policy{MaxAttempts: 2, BackoffBase: time.Second, BackoffMax: 3 * time.Second}
	tests := []struct {
		name  string
		evs   []proto.Message
		check func(t *testing.T, s *WorkState)
	}{
		{
			name: "StatusOfUnknown",
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, messages.WorkStatus_WORK_STATUS_UNKNOWN, s.Status("nope").GetStatus())
				require.False(t, s.IsAccepted("nope"))
				require.Nil(t, s.Work("nope"))
			},
		},
		{
			name: "OutcomeOfFinishedWorksOnly",
			evs: []proto.Message{
				accepted("done", "sq", 1), started("done", "w1", 2), completed("done", "w1", "49", 3),
				accepted("dead", "sq", 1), started("dead", "w1", 2), failed("dead", "w1", 3, 3, true),
				accepted("cancel", "sq", 1), started("cancel", "w1", 2),
				&messages.WorkerFailed{WorkId: "cancel", WorkerId: "w1", Error: "caller left", AtUnixNano: at(3), Cancelled: true},
				accepted("running", "sq", 1), started("running", "w1", 2),
				accepted("pending", "sq", 1),
			},
			check: func(t *testing.T, s *WorkState) {
				for _, id := range []string{"done", "dead", "cancel"} {
					res, _, _, ok := s.Outcome(id)
					require.True(t, ok, id)
					st := s.Status(id)
					require.True(t, proto.Equal(&messages.WorkResult{WorkId: id, JobType: st.GetJobType(), Result: st.GetResult(),
						Status: st.GetStatus(), Error: st.GetLastError()}, res), "%s: the outcome is the status's", id)
				}
				res, _, _, _ := s.Outcome("done")
				require.Equal(t, "49", string(res.GetResult()))
				require.Equal(t, "sq", res.GetJobType())
				for _, id := range []string{"running", "pending", "nope"} {
					_, _, _, ok := s.Outcome(id)
					require.False(t, ok, "%s is not finished", id)
				}
			},
		},
		{
			name: "NextReadyPicksEarliestAcrossTypesAndFilters",
			evs:  []proto.Message{accepted("s1", "sleep", 2), accepted("q1", "sq", 1), accepted("q2", "sq", 3)},
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, "q1", s.NextReady(t0.Add(time.Hour), nil).GetWorkId())
				onlySleep := func(jt string) bool { return jt == "sleep" }
				require.Equal(t, "s1", s.NextReady(t0.Add(time.Hour), onlySleep).GetWorkId())
				require.Nil(t, s.NextReady(t0, nil), "nothing is ready before its accept time")
			},
		},
		{
			name: "CountsAndInProgressBy",
			evs: []proto.Message{accepted("a", "sq", 0), accepted("b", "sq", 0), accepted("c", "sq", 0),
				started("a", "w1", 1), started("b", "w1", 1), started("c", "w2", 1), completed("c", "w2", "", 2)},
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, Counts{InProgress: 2, Done: 1, AcceptedTotal: 3}, s.Counts())
				require.Equal(t, []string{"a", "b"}, s.InProgressBy("w1"))
				require.Equal(t, 2, s.RunningCount("w1"))
				require.Equal(t, 0, s.RunningCount("w2"))
			},
		},
		{
			name: "Overdue",
			evs:  []proto.Message{accepted("a", "sq", 0), accepted("b", "sq", 0), started("a", "w1", time.Second), started("b", "w2", 5*time.Second)},
			check: func(t *testing.T, s *WorkState) {
				require.Equal(t, []Running{{WorkID: "a", WorkerID: "w1"}}, s.Overdue(t0.Add(11*time.Second), 10*time.Second))
				require.Empty(t, s.Overdue(t0.Add(10*time.Second), 10*time.Second+1))
			},
		},
		{
			name: "FailureEventBacksOffThenDies",
			evs:  []proto.Message{accepted("a", "sq", 0), started("a", "w1", 1)},
			check: func(t *testing.T, s *WorkState) {
				ev, ok := s.FailureEvent(p, "a", "w1", "x", t0)
				require.True(t, ok)
				require.False(t, ev.GetDead())
				require.Equal(t, t0.Add(time.Second).UnixNano(), ev.GetNotBeforeUnixNano())
				_, ok = s.FailureEvent(p, "a", "w2", "x", t0)
				require.False(t, ok, "a worker that does not hold the work cannot fail it")
				require.NoError(t, s.Apply(ev))
				require.NoError(t, s.Apply(started("a", "w1", 2*time.Second)))
				tev, ok := s.TimeoutEvent(p, "a", "w1", t0.Add(time.Minute))
				require.True(t, ok)
				require.True(t, tev.GetDead(), "second attempt of two")
			},
		},
		{
			name: "OldestFinishedAt",
			evs:  []proto.Message{accepted("a", "sq", 0), completed("a", "w", "", time.Minute)},
			check: func(t *testing.T, s *WorkState) {
				got, ok := s.OldestFinishedAt()
				require.True(t, ok)
				require.Equal(t, at(time.Minute), got)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.check(t, build(t, tt.evs...))
		})
	}
}

func TestPolicyBackoff(t *testing.T) {
	t.Parallel()
	p := Policy{MaxAttempts: 10, BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second}
	tests := []struct {
		name     string
		attempts int32
		want     time.Duration
	}{
		{name: "First", attempts: 1, want: 100 * time.Millisecond},
		{name: "Second", attempts: 2, want: 200 * time.Millisecond},
		{name: "Fourth", attempts: 4, want: 800 * time.Millisecond},
		{name: "Capped", attempts: 9, want: time.Second},
		{name: "ZeroIsFirst", attempts: 0, want: 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, p.Backoff(tt.attempts))
		})
	}
}

func TestRestoreRejectsBadSnapshot(t *testing.T) {
	t.Parallel()
	w := &messages.Work{WorkId: "a", JobType: "sq"}
	tests := []struct {
		name string
		snap *messages.MasterSnapshot
	}{
		{name: "NoID", snap: &messages.MasterSnapshot{Entries: []*messages.WorkEntry{{Work: &messages.Work{}, Status: statusDone}}}},
		{name: "Duplicate", snap: &messages.MasterSnapshot{Entries: []*messages.WorkEntry{{Work: w, Status: statusDone}, {Work: w, Status: statusDone}}}},
		{name: "NoStatus", snap: &messages.MasterSnapshot{Entries: []*messages.WorkEntry{{Work: w}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := RestoreWorkState(tt.snap)
			require.ErrorIs(t, err, ErrBadSnapshot)
		})
	}
}

// A request for several works is journaled as one WorksStarted (one record
// instead of one per work), which replays to the state the dispatch made;
// expired work between hand-outs keeps its own record, in order.
func TestDispatchJournalsOneWorksStarted(t *testing.T) {
	t.Parallel()
	expiring := accepted("x", "sq", 0)
	expiring.Work.DeadlineUnixNano = at(time.Second)
	evs := []proto.Message{accepted("a", "sq", 0), accepted("b", "sq", 0), expiring, accepted("c", "sq", 0), accepted("d", "sq", 0)}
	live := build(t, evs...)
	now := t0.Add(2 * time.Second)

	p := planDispatch(live, nil, nil, "k1", 3, now)
	require.Len(t, p.works, 3)
	require.Equal(t, []proto.Message{
		&messages.WorksStarted{WorkIds: []string{"a", "b"}, WorkerId: "k1", AtUnixNano: now.UnixNano()},
		&messages.WorkExpired{WorkId: "x", AtUnixNano: now.UnixNano(), JobType: "sq", Reason: "deadline of the submitter passed before the work was started"},
		&messages.WorkStarted{WorkId: "c", WorkerId: "k1", AtUnixNano: now.UnixNano()},
	}, p.events)
	one := planDispatch(live, nil, nil, "k2", 1, now)
	require.Equal(t, []proto.Message{started("d", "k2", 2*time.Second)}, one.events, "a lone hand-out stays a WorkStarted")

	replayed := build(t, append(evs, append(p.events, one.events...)...)...)
	require.True(t, proto.Equal(live.Snapshot(), replayed.Snapshot()), "replay differs from the dispatch")
	require.Equal(t, []Running{{WorkID: "a", WorkerID: "k1"}, {WorkID: "b", WorkerID: "k1"}, {WorkID: "c", WorkerID: "k1"}, {WorkID: "d", WorkerID: "k2"}},
		replayed.InProgress())
	require.Equal(t, int32(1), replayed.Attempts("b"))
	require.Equal(t, messages.WorkStatus_WORK_STATUS_DEAD, replayed.Status("x").GetStatus())
}

// An observer is told one WorkStarted and one WorkAccepted per work,
// whatever the record.
func TestExpandGroupsForTheObserver(t *testing.T) {
	t.Parallel()
	plain := []proto.Message{started("a", "k", 0), completed("a", "k", "r", time.Second)}
	require.Equal(t, plain, ExpandGroups(plain), "nothing to expand: the same events")
	w1 := &messages.Work{WorkId: "w1", JobType: "sq", Payload: []byte("1")}
	w2 := &messages.Work{WorkId: "w2", JobType: "sq", Payload: []byte("2")}
	got := ExpandGroups([]proto.Message{
		&messages.WorksAccepted{Works: []*messages.Work{w1, w2}, AtUnixNano: at(0)},
		&messages.WorksStarted{WorkIds: []string{"b", "c"}, WorkerId: "k", AtUnixNano: at(0)},
		completed("a", "k", "r", time.Second),
	})
	require.Equal(t, []proto.Message{
		&messages.WorkAccepted{Work: w1, AtUnixNano: at(0)}, &messages.WorkAccepted{Work: w2, AtUnixNano: at(0)},
		started("b", "k", 0), started("c", "k", 0), completed("a", "k", "r", time.Second),
	}, got)
}
