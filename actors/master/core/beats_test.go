package core

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/messages"
)

// armed returns the last timer among effs whose name starts with prefix.
func armed(effs []effect.Effect, prefix string) (effect.Timer, bool) {
	var t effect.Timer
	ok := false
	for _, e := range effs {
		if tm, is := e.(effect.Timer); is && strings.HasPrefix(tm.Name, prefix) {
			t, ok = tm, true
		}
	}
	return t, ok
}

func beatOf(worker *messages.PID, id string, attempt int32, timeout time.Duration) Heartbeat {
	return Heartbeat{From: worker, Msg: &messages.WorkHeartbeat{WorkerId: worker.GetId(), Beats: []*messages.Beat{
		{WorkId: id, Attempt: attempt, TimeoutMs: timeout.Milliseconds()}}}}
}

func timedOutIDs(effs []effect.Effect) []string {
	var ids []string
	for _, ev := range events(effs) {
		if to, ok := ev.(*messages.WorkerTimedOut); ok {
			ids = append(ids, to.GetWorkId())
		}
	}
	return ids
}

// TestHeartbeats: the work timeout applies between a job's heartbeats
// rather than to the whole job (docs/long-jobs.md).
func TestHeartbeats(t *testing.T) {
	t.Parallel()
	// handOut serves one work j1 (work timeout 10 s) and hands it to
	// worker1 at t0; it returns the cleanup timer's name.
	handOut := func(t *testing.T) (*harness, string) {
		h := serving(t, testConfig())
		h.durable(h.step(Submit{From: frontend, Work: work("j1", nil)}))
		h.step(register(worker1))
		h.step(register(worker2))
		require.Equal(t, []string{"j1"}, handedOut(h.step(request(worker1, 1)), worker1))
		return h, cleanupTimer + "1"
	}
	at := func(h *harness, d time.Duration) { h.now = t0.Add(d) }

	for _, tc := range []struct {
		name string
		run  func(t *testing.T, h *harness, cleanup string)
	}{{
		name: "HeartbeatsExtendTheWorkTimeout",
		run: func(t *testing.T, h *harness, cleanup string) {
			for _, d := range []time.Duration{5, 12, 19, 26} { // 26 s of job, never 8 s without a beat
				at(h, d*time.Second)
				effs := h.step(beatOf(worker1, "j1", 1, 8*time.Second))
				require.Empty(t, timedOutIDs(effs))
				at(h, (d+2)*time.Second)
				require.Empty(t, timedOutIDs(h.step(effect.Fired{Name: cleanup})), "alive at %v s: it beat 2 s ago", d+2)
			}
			st := h.step(GetStatus{From: frontend, Msg: &messages.GetWorkStatus{WorkId: "j1"}})
			require.Equal(t, messages.WorkStatus_WORK_STATUS_RUNNING, replies(st)[0].Msg.(*messages.WorkStatusReply).GetStatus())
		},
	}, {
		name: "AMissingHeartbeatTimesTheWorkOutAfterItsHeartbeatTimeout",
		run: func(t *testing.T, h *harness, _ string) {
			at(h, time.Second)
			effs := h.step(beatOf(worker1, "j1", 1, 3*time.Second))
			tm, ok := armed(effs, beatTimer)
			require.True(t, ok, "a heartbeat timeout shorter than the cleanup tick arms a check of its own")
			require.Equal(t, t0.Add(4*time.Second), tm.At)
			at(h, 4*time.Second)
			require.Equal(t, []string{"j1"}, timedOutIDs(h.step(effect.Fired{Name: tm.Name})),
				"3 s without a beat: timed out long before the 10 s work timeout")
			require.Equal(t, messages.WorkStatus_WORK_STATUS_FAILED, h.m.State().Status("j1").GetStatus(), "retried by the policy")
			at(h, time.Minute) // past the backoff
			h.step(register(worker2))
			require.Equal(t, []string{"j1"}, handedOut(h.step(request(worker2, 1)), worker2))
		},
	}, {
		name: "ABeatThatStopsAfterTheWorkTimeoutTimesOutAtItsHeartbeatTimeout",
		run: func(t *testing.T, h *harness, cleanup string) {
			at(h, 9*time.Second)
			h.step(beatOf(worker1, "j1", 1, 8*time.Second))
			at(h, 15*time.Second)
			require.Empty(t, timedOutIDs(h.step(effect.Fired{Name: cleanup})), "15 s: past the work timeout, alive by its beat")
			at(h, 17*time.Second)
			require.Equal(t, []string{"j1"}, timedOutIDs(h.step(effect.Fired{Name: beatTimer + "1"})))
		},
	}, {
		name: "AStaleHeartbeatOfAnOldHandOutIsIgnored",
		run: func(t *testing.T, h *harness, cleanup string) {
			at(h, 11*time.Second)
			require.Equal(t, []string{"j1"}, timedOutIDs(h.step(effect.Fired{Name: cleanup})), "no beat: the work timeout")
			at(h, time.Minute)
			h.step(register(worker1))
			h.step(register(worker2))
			require.Equal(t, []string{"j1"}, handedOut(h.step(request(worker2, 1)), worker2), "attempt 2 on worker2")
			start := h.now
			// The first worker's job still runs and beats; and a beat of
			// the first attempt on worker2 (a duplicated hand-out).
			for _, b := range []Heartbeat{beatOf(worker1, "j1", 1, time.Hour), beatOf(worker2, "j1", 1, time.Hour)} {
				effs := h.step(b)
				_, armedBeat := armed(effs, beatTimer)
				require.False(t, armedBeat, "a stale beat arms nothing")
			}
			require.Empty(t, h.m.beats, "a stale beat is not recorded")
			h.now = start.Add(11 * time.Second)
			require.Equal(t, []string{"j1"}, timedOutIDs(h.step(effect.Fired{Name: cleanup})),
				"the current hand-out never beat: the work timeout applies")
		},
	}, {
		name: "ProgressIsShownByTheStatusWhileTheWorkRuns",
		run: func(t *testing.T, h *harness, _ string) {
			at(h, 2*time.Second)
			h.step(Heartbeat{From: worker1, Msg: &messages.WorkHeartbeat{WorkerId: worker1.GetId(), Beats: []*messages.Beat{
				{WorkId: "j1", Attempt: 1, TimeoutMs: 5000, HasProgress: true, Fraction: 0.25, Message: "step 1 of 4"}}}})
			st := replies(h.step(GetStatus{From: frontend, Msg: &messages.GetWorkStatus{WorkId: "j1"}}))[0].Msg.(*messages.WorkStatusReply)
			require.True(t, st.GetHasProgress())
			require.InDelta(t, 0.25, st.GetProgress(), 1e-9)
			require.Equal(t, "step 1 of 4", st.GetProgressMessage())
			require.Equal(t, t0.Add(2*time.Second).UnixNano(), st.GetHeartbeatUnixNano())
			// A beat without progress keeps the last progress.
			at(h, 3*time.Second)
			h.step(beatOf(worker1, "j1", 1, 5*time.Second))
			st = replies(h.step(GetStatus{From: frontend, Msg: &messages.GetWorkStatus{WorkId: "j1"}}))[0].Msg.(*messages.WorkStatusReply)
			require.Equal(t, "step 1 of 4", st.GetProgressMessage())
			require.Equal(t, t0.Add(3*time.Second).UnixNano(), st.GetHeartbeatUnixNano())
			h.durable(h.step(Done{From: worker1, Msg: &messages.WorkIsDone{WorkId: "j1", WorkerId: worker1.GetId(), Result: []byte("9")}}))
			st = replies(h.step(GetStatus{From: frontend, Msg: &messages.GetWorkStatus{WorkId: "j1"}}))[0].Msg.(*messages.WorkStatusReply)
			require.False(t, st.GetHasProgress(), "done: no running progress")
			require.Zero(t, st.GetHeartbeatUnixNano())
		},
	}, {
		name: "AWorkHandedBackIsReadyAtOnceWithoutUsingAnAttempt",
		run: func(t *testing.T, h *harness, _ string) {
			at(h, 3*time.Second)
			effs := h.step(Failed{Msg: &messages.WorkFailed{WorkId: "j1", WorkerId: worker1.GetId(),
				Error: "worker: worker stopping, work handed back: drain timeout", HandedBack: true}})
			evs := events(effs)
			require.Len(t, evs, 1)
			wf := evs[0].(*messages.WorkerFailed)
			require.True(t, wf.GetHandedBack())
			require.False(t, wf.GetDead())
			require.Equal(t, h.now.UnixNano(), wf.GetNotBeforeUnixNano(), "no backoff")
			require.Equal(t, int32(0), h.m.State().Attempts("j1"), "the attempt does not count")
			require.Equal(t, messages.WorkStatus_WORK_STATUS_ACCEPTED, h.m.State().Status("j1").GetStatus())
			h.durable(effs)
			require.Equal(t, []string{"j1"}, handedOut(h.step(request(worker2, 1)), worker2), "out again at once")
			require.Equal(t, int32(1), h.m.State().Attempts("j1"))
			// Replay agrees.
			s := NewWorkState()
			require.NoError(t, s.Apply(&messages.WorkAccepted{Work: work("j1", nil), AtUnixNano: t0.UnixNano()}))
			require.NoError(t, s.Apply(&messages.WorkStarted{WorkId: "j1", WorkerId: worker1.GetId(), AtUnixNano: t0.UnixNano()}))
			require.NoError(t, s.Apply(wf))
			require.Equal(t, int32(0), s.Attempts("j1"))
			require.Equal(t, messages.WorkStatus_WORK_STATUS_ACCEPTED, s.Status("j1").GetStatus())
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, cleanup := handOut(t)
			tc.run(t, h, cleanup)
		})
	}
}

// TestSubmissionHeartbeatTimeout: a work submitted with a heartbeat timeout
// (Work.heartbeat_timeout_ms) is timed out by it, over the one its job
// type's beats carry, and also when its type has none (beats of 0).
func TestSubmissionHeartbeatTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		typeTime time.Duration // what the worker's beats carry
	}{{name: "OverTheTypesTimeout", typeTime: 8 * time.Second}, {name: "WhenTheTypeHasNone", typeTime: 0}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := serving(t, testConfig())
			w := work("j1", nil)
			w.HeartbeatTimeoutMs = 2000
			h.durable(h.step(Submit{From: frontend, Work: w}))
			h.step(register(worker1))
			got := handedOut(h.step(request(worker1, 1)), worker1)
			require.Equal(t, []string{"j1"}, got)
			h.now = t0.Add(time.Second)
			tm, ok := armed(h.step(beatOf(worker1, "j1", 1, tc.typeTime)), beatTimer)
			require.True(t, ok, "the submission's 2 s arms a check")
			require.Equal(t, t0.Add(3*time.Second), tm.At)
			h.now = t0.Add(2500 * time.Millisecond)
			require.Empty(t, timedOutIDs(h.step(effect.Fired{Name: tm.Name})), "alive: it beat 1.5 s ago")
			h.now = t0.Add(3 * time.Second)
			require.Equal(t, []string{"j1"}, timedOutIDs(h.step(effect.Fired{Name: tm.Name})),
				"2 s without a beat: timed out by the submission's timeout")
		})
	}
	t.Run("TheHandOutCarriesIt", func(t *testing.T) {
		t.Parallel()
		h := serving(t, testConfig())
		w := work("j1", nil)
		w.HeartbeatTimeoutMs = 2000
		h.durable(h.step(Submit{From: frontend, Work: w}))
		h.step(register(worker1))
		for _, e := range h.step(request(worker1, 1)) {
			if s, ok := e.(effect.Send); ok {
				if hw, ok := s.Msg.(*messages.Work); ok {
					require.Equal(t, int64(2000), hw.GetHeartbeatTimeoutMs())
					return
				}
			}
		}
		require.Fail(t, "no work handed out")
	})
}
