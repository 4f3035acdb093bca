package core

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/messages"
)

var (
	frontend = &messages.PID{Address: "node1", Id: "frontend"}
	waiterA  = &messages.PID{Address: "node1", Id: "waiter-a"}
	waiterB  = &messages.PID{Address: "node2", Id: "waiter-b"}
	worker1  = &messages.PID{Address: "node3", Id: "worker-1"}
	worker2  = &messages.PID{Address: "node3", Id: "worker-2"}
	forever  = t0.Add(1000 * time.Hour)
)

func testConfig() Config {
	return Config{
		WorkTimeout: 10 * time.Second, WorkerDeadAfter: time.Minute,
		Policy:        Policy{MaxAttempts: 3, BackoffBase: 500 * time.Millisecond, BackoffMax: 30 * time.Second},
		DoneRetention: 10 * time.Minute, DoneLimit: 1000, MaxPayload: 1 << 20, RecoveryStash: 2,
	}
}

// harness drives a Master as a runner would, keeping the effects of each
// step and what each Append waits for.
type harness struct {
	t   *testing.T
	m   *Master
	now time.Time
}

// serving returns a master that recovered an empty state and serves.
func serving(t *testing.T, cfg Config) *harness {
	h := &harness{t: t, m: New(cfg), now: t0}
	h.m.Reset(NewWorkState())
	h.step(Serving{Until: forever})
	h.step(Recovered{})
	return h
}

func (h *harness) step(in any) []effect.Effect {
	return slices.Clone(h.m.Step(h.now, in))
}

// durable reports every Append of effs durable, then the commit.
func (h *harness) durable(effs []effect.Effect) []effect.Effect {
	var out []effect.Effect
	for _, a := range appends(effs) {
		if a.Token != 0 {
			out = append(out, h.step(effect.Durable{Token: a.Token})...)
		}
	}
	return append(out, h.step(Committed{})...)
}

func appends(effs []effect.Effect) []effect.Append {
	var out []effect.Append
	for _, e := range effs {
		if a, ok := e.(effect.Append); ok {
			out = append(out, a)
		}
	}
	return out
}

func events(effs []effect.Effect) []proto.Message {
	var out []proto.Message
	for _, a := range appends(effs) {
		out = append(out, a.Events...)
	}
	return out
}

// sentTo returns the messages sent to p (Send, and Reply when replies).
func sentTo(effs []effect.Effect, p *messages.PID, replies bool) []proto.Message {
	var out []proto.Message
	for _, e := range effs {
		switch e := e.(type) {
		case effect.Send:
			if samePID(e.To, p) {
				out = append(out, e.Msg)
			}
		case effect.Reply:
			if replies && samePID(e.To, p) {
				out = append(out, e.Msg)
			}
		}
	}
	return out
}

func replies(effs []effect.Effect) []effect.Reply {
	var out []effect.Reply
	for _, e := range effs {
		if r, ok := e.(effect.Reply); ok {
			out = append(out, r)
		}
	}
	return out
}

func handedOut(effs []effect.Effect, to *messages.PID) []string {
	var ids []string
	for _, msg := range sentTo(effs, to, true) {
		switch w := msg.(type) {
		case *messages.Work:
			ids = append(ids, w.GetWorkId())
		case *messages.WorkBundle:
			for _, w := range w.GetWorks() {
				ids = append(ids, w.GetWorkId())
			}
		}
	}
	return ids
}

func work(id string, waiter *messages.PID) *messages.Work {
	return &messages.Work{WorkId: id, JobType: "square", Payload: []byte("3"), Waiter: waiter}
}

func request(worker *messages.PID, n int32) RequestWork {
	return RequestWork{From: worker, Msg: &messages.WorkerRequestsWork{WorkerId: worker.GetId(), Worker: worker, Capacity: n}}
}

func register(worker *messages.PID) Register {
	return Register{From: worker, Msg: &messages.RegisterWorker{WorkerId: worker.GetId(), Worker: worker}}
}

// TestPlantedBugs: each planted bug changes the core's effects as its
// documentation says, and production (NoBug) does not: the simulator's
// tests rely on it.
func TestPlantedBugs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		bug  Bug
		run  func(t *testing.T, h *harness, planted bool)
	}{{
		name: "HandOutBeforeDurable",
		bug:  HandOutBeforeDurable,
		run: func(t *testing.T, h *harness, planted bool) {
			h.step(register(worker1))
			acc := h.step(Submit{From: frontend, Work: work("j1", nil)})
			require.Len(t, appends(acc), 1)
			got := handedOut(h.step(request(worker1, 1)), worker1)
			if planted {
				require.Equal(t, []string{"j1"}, got, "planted: handed out before its WorkAccepted is durable")
				return
			}
			require.Empty(t, got, "nothing reaches a worker before its acceptance is durable")
			h.durable(acc)
			require.Equal(t, []string{"j1"}, handedOut(h.step(request(worker1, 1)), worker1))
		},
	}, {
		name: "AckBeforeFsync",
		bug:  AckBeforeFsync,
		run: func(t *testing.T, h *harness, planted bool) {
			for _, in := range []any{
				Submit{From: frontend, Work: work("j1", nil)},
				SubmitBatch{From: frontend, Batch: &messages.WorkBatch{Works: []*messages.Work{work("j2", nil)}}},
			} {
				effs := h.step(in)
				require.Len(t, appends(effs), 1)
				rs := replies(effs)
				require.Len(t, rs, 1)
				require.Equal(t, !planted, rs[0].AfterDurable, "%T: the ack waits for the fsync unless planted", in)
			}
		},
	}, {
		name: "DuplicateKeepsFirstWaiter",
		bug:  DuplicateKeepsFirstWaiter,
		run: func(t *testing.T, h *harness, planted bool) {
			h.durable(h.step(Submit{From: frontend, Work: work("j1", waiterA)}))
			dup := h.step(Submit{From: frontend, Work: work("j1", waiterB)})
			if planted {
				require.Empty(t, events(dup), "planted: no WaiterAdded")
			} else {
				require.Equal(t, []proto.Message{&messages.WaiterAdded{WorkId: "j1", Waiter: waiterB}}, events(dup))
			}
			h.durable(dup)
			h.step(register(worker1))
			require.Equal(t, []string{"j1"}, handedOut(h.step(request(worker1, 1)), worker1))
			done := h.step(Done{From: worker1, Msg: &messages.WorkIsDone{WorkId: "j1", WorkerId: worker1.GetId(), Result: []byte("9")}})
			told := h.durable(done)
			require.Len(t, sentTo(told, waiterA, false), 1, "the first caller is told")
			if planted {
				require.Empty(t, sentTo(told, waiterB, false), "planted: the second caller is never told")
			} else {
				require.Len(t, sentTo(told, waiterB, false), 1, "every caller is told")
			}
		},
	}, {
		name: "HandOutEarly",
		bug:  HandOutEarly,
		run: func(t *testing.T, h *harness, planted bool) {
			h.step(register(worker1))
			w := work("j1", nil)
			w.RunAtUnixNano = h.now.Add(500 * time.Millisecond).UnixNano()
			h.durable(h.step(Submit{From: frontend, Work: w}))
			got := handedOut(h.step(request(worker1, 1)), worker1)
			if planted {
				require.Equal(t, []string{"j1"}, got, "planted: handed out 500ms before its run_at")
				return
			}
			require.Empty(t, got, "never before its run_at")
			h.now = h.now.Add(500 * time.Millisecond)
			require.Equal(t, []string{"j1"}, handedOut(h.step(request(worker1, 1)), worker1))
		},
	}} {
		for _, planted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/planted=%v", tc.name, planted), func(t *testing.T) {
				t.Parallel()
				cfg := testConfig()
				if planted {
					cfg.Planted = tc.bug
				}
				tc.run(t, serving(t, cfg), planted)
			})
		}
	}
}

// TestMasterStep drives the core through the protocol's main paths.
func TestMasterStep(t *testing.T) {
	t.Parallel()

	t.Run("AcceptedWorkIsAnnouncedOncePerCommit", func(t *testing.T) {
		t.Parallel()
		h := serving(t, testConfig())
		h.step(register(worker1))
		h.step(register(worker2))
		require.Empty(t, handedOut(h.step(request(worker1, 1)), worker1))
		require.Empty(t, handedOut(h.step(request(worker2, 1)), worker2))
		a := h.step(Submit{From: frontend, Work: work("j1", nil)})
		b := h.step(Submit{From: frontend, Work: work("j2", nil)})
		var durable []effect.Effect
		for _, ap := range appends(append(a, b...)) {
			durable = append(durable, h.step(effect.Durable{Token: ap.Token})...)
		}
		require.Empty(t, sentTo(durable, worker1, false), "told only once the commit is done")
		ready := h.step(Committed{})
		for _, w := range []*messages.PID{worker1, worker2} {
			require.Equal(t, []proto.Message{&messages.WorkIsReady{}}, sentTo(ready, w, false))
		}
		require.Empty(t, h.step(Committed{}), "once per commit that released work")
	})

	t.Run("AStaleCancellationLeavesTheWorkToItsOtherCaller", func(t *testing.T) {
		// Found by the simulator (actors/sim, seed 1015389): two callers
		// wait (A, then B, whom workers ask first). B leaves; the worker
		// reports it and the work goes out again asked about through A. A
		// duplicate of the earlier hand-out (B's) reaches the same worker,
		// which asks B again and reports "cancelled" once more. That
		// report is about B, who already left: it must not cancel the work
		// A still waits for.
		t.Parallel()
		h := serving(t, testConfig())
		h.durable(h.step(Submit{From: frontend, Work: work("j1", waiterA)}))
		h.durable(h.step(Submit{From: frontend, Work: work("j1", waiterB)}))
		h.step(register(worker1))
		require.Equal(t, []string{"j1"}, handedOut(h.step(request(worker1, 1)), worker1))
		bLeft := &messages.WorkFailed{WorkId: "j1", WorkerId: worker1.GetId(), Error: "caller gone", Permanent: true, Cancelled: true, Waiter: waiterB}
		h.durable(h.step(Failed{Msg: bLeft}))
		require.Equal(t, waiterA, h.m.State().Waiter("j1"), "handed out again, asked about through A")
		require.Equal(t, []string{"j1"}, handedOut(h.step(request(worker1, 1)), worker1))
		stale := h.step(Failed{Msg: bLeft})
		require.Empty(t, events(stale), "B's second report changes nothing")
		require.Equal(t, messages.WorkStatus_WORK_STATUS_RUNNING, h.m.State().Status("j1").GetStatus())
		aLeft := &messages.WorkFailed{WorkId: "j1", WorkerId: worker1.GetId(), Error: "caller gone", Permanent: true, Cancelled: true, Waiter: waiterA}
		evs := events(h.step(Failed{Msg: aLeft}))
		require.Len(t, evs, 1)
		require.True(t, evs[0].(*messages.WorkerFailed).GetCancelled(), "A's own report cancels it")
	})

	t.Run("OutcomeReachesTheWaiterOnceDurable", func(t *testing.T) {
		t.Parallel()
		h := serving(t, testConfig())
		h.durable(h.step(Submit{From: frontend, Work: work("j1", waiterA)}))
		h.step(register(worker1))
		require.Equal(t, []string{"j1"}, handedOut(h.step(request(worker1, 1)), worker1))
		done := h.step(Done{From: worker1, Msg: &messages.WorkIsDone{WorkId: "j1", WorkerId: worker1.GetId(), Result: []byte("9")}})
		require.Empty(t, sentTo(done, waiterA, true), "not before the WorkCompleted is durable")
		rs := replies(done)
		require.Len(t, rs, 1)
		require.True(t, rs[0].AfterDurable)
		require.Equal(t, &messages.Ack{WorkId: "j1"}, rs[0].Msg)
		evs := events(done)
		require.Len(t, evs, 1, "the WorkStarted went with the hand-out (no hold)")
		require.IsType(t, &messages.WorkCompleted{}, evs[0])
		told := h.durable(done)
		res := sentTo(told, waiterA, false)
		require.Len(t, res, 1)
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, res[0].(*messages.WorkResult).GetStatus())
		require.Contains(t, told, effect.Effect(Publish{Result: &messages.WorkResult{WorkId: "j1", JobType: "square", Result: []byte("9")}}))
		require.Empty(t, h.step(effect.Durable{Token: appends(done)[0].Token}), "a token is reported once")
	})

	t.Run("NotServingHoldsSubmissionsAndHandsOutNothing", func(t *testing.T) {
		t.Parallel()
		h := serving(t, testConfig())
		h.durable(h.step(Submit{From: frontend, Work: work("j1", nil)}))
		h.step(register(worker1))
		h.step(Serving{Until: t0.Add(time.Second)})
		h.now = t0.Add(time.Second) // the lease's deadline: no longer serving
		require.Empty(t, h.step(request(worker1, 1)), "no hand-out at the deadline")
		require.Empty(t, h.step(Submit{From: frontend, Work: work("j2", nil)}), "held")
		require.Empty(t, h.step(Submit{From: frontend, Work: work("j3", nil)}), "held")
		full := h.step(Submit{From: frontend, Work: work("j4", nil)})
		require.Equal(t, []effect.Effect{effect.Reply{To: frontend, Msg: &messages.WorkRejected{WorkId: "j4",
			Code: messages.RejectCode_REJECT_CODE_UNAVAILABLE, Reason: "master: recovering from the journal; retry later"}}}, full,
			"beyond the stash: turned away at once")
		st := h.step(GetStatus{From: frontend, Msg: &messages.GetWorkStatus{WorkId: "j1"}})
		require.Len(t, replies(st), 1)
		require.False(t, replies(st)[0].AfterDurable)
		require.Equal(t, messages.RejectCode_REJECT_CODE_UNAVAILABLE, replies(st)[0].Msg.(*messages.WorkRejected).GetCode())

		h.step(Serving{Until: forever})
		rec := h.step(Recovered{})
		require.Len(t, events(rec), 2, "the held submissions are taken")
		acks := 0
		for _, r := range replies(rec) {
			if _, ok := r.Msg.(*messages.Ack); ok && r.AfterDurable {
				acks++
			}
		}
		require.Equal(t, 2, acks)
		require.Equal(t, 0, h.m.Stashed())
	})

	t.Run("FailingRecoveryTurnsAwayAndStoppingRejectsTheStash", func(t *testing.T) {
		t.Parallel()
		h := serving(t, testConfig())
		h.step(Serving{})
		require.Empty(t, h.step(SubmitBatch{From: frontend, Batch: &messages.WorkBatch{Works: []*messages.Work{work("j1", nil)}}}))
		h.step(Serving{RecoveryFailing: true})
		away := replies(h.step(Submit{From: frontend, Work: work("j2", nil)}))
		require.Len(t, away, 1)
		require.Equal(t, messages.RejectCode_REJECT_CODE_UNAVAILABLE, away[0].Msg.(*messages.WorkRejected).GetCode())
		stop := replies(h.step(Stopping{}))
		require.Len(t, stop, 1)
		require.Equal(t, messages.RejectCode_REJECT_CODE_UNAVAILABLE, stop[0].Msg.(*messages.WorkBatchAck).GetOutcomes()[0].GetCode())
	})

	t.Run("TimersOfAnEarlierRecoveryAreIgnored", func(t *testing.T) {
		t.Parallel()
		h := serving(t, testConfig())
		var first string
		for _, e := range h.step(Recovered{}) { // a re-sync: the timers of the first recovery are stopped
			if s, ok := e.(effect.StopTimer); ok && first == "" {
				first = s.Name
			}
		}
		require.NotEmpty(t, first)
		h.durable(h.step(Submit{From: frontend, Work: work("j1", nil)}))
		h.step(register(worker1))
		require.Len(t, handedOut(h.step(request(worker1, 1)), worker1), 1)
		h.now = t0.Add(time.Hour) // long overdue
		require.Empty(t, h.step(effect.Fired{Name: first}), "a stale cleanup does nothing")
		var cleanup string
		for _, e := range h.step(Recovered{}) {
			if tm, ok := e.(effect.Timer); ok {
				cleanup = tm.Name
				require.Equal(t, h.now.Add(5*time.Second), tm.At, "every half work timeout")
			}
		}
		effs := h.step(effect.Fired{Name: cleanup})
		evs := events(effs)
		require.Len(t, evs, 1)
		require.IsType(t, &messages.WorkerTimedOut{}, evs[0])
	})

	t.Run("FailureRetriesWithBackoffThenDies", func(t *testing.T) {
		t.Parallel()
		h := serving(t, testConfig())
		h.durable(h.step(Submit{From: frontend, Work: work("j1", waiterA)}))
		h.step(register(worker1))
		for attempt := 1; attempt <= 3; attempt++ {
			require.Equal(t, []string{"j1"}, handedOut(h.step(request(worker1, 1)), worker1), "attempt %d", attempt)
			effs := h.step(Failed{Msg: &messages.WorkFailed{WorkId: "j1", WorkerId: worker1.GetId(), Error: "boom"}})
			ev := events(effs)[len(events(effs))-1].(*messages.WorkerFailed)
			if attempt < 3 {
				require.False(t, ev.GetDead())
				require.Equal(t, h.now.Add(h.m.cfg.Policy.Backoff(int32(attempt))).UnixNano(), ev.GetNotBeforeUnixNano())
				h.durable(effs)
				require.Empty(t, handedOut(h.step(request(worker1, 1)), worker1), "backing off")
				h.now = time.Unix(0, ev.GetNotBeforeUnixNano())
				continue
			}
			require.True(t, ev.GetDead(), "out of attempts")
			res := sentTo(h.durable(effs), waiterA, false)
			require.Len(t, res, 1)
			require.Equal(t, messages.WorkStatus_WORK_STATUS_DEAD, res[0].(*messages.WorkResult).GetStatus())
		}
	})

	t.Run("HeldStartsAreWrittenBeforeAnAnswerThatShowsThem", func(t *testing.T) {
		t.Parallel()
		cfg := testConfig()
		cfg.StartedHold = time.Millisecond
		h := serving(t, cfg)
		h.durable(h.step(Submit{From: frontend, Work: work("j1", nil)}))
		h.step(register(worker1))
		out := h.step(request(worker1, 1))
		require.Empty(t, appends(out), "held")
		require.Contains(t, out, effect.Effect(effect.Timer{Name: StartsTimer, At: h.now.Add(time.Millisecond)}))
		st := h.step(GetStatus{From: frontend, Msg: &messages.GetWorkStatus{WorkId: "j1"}})
		require.Len(t, events(st), 1, "journaled before the answer")
		require.Equal(t, messages.WorkStatus_WORK_STATUS_RUNNING, replies(st)[0].Msg.(*messages.WorkStatusReply).GetStatus())
		require.True(t, replies(st)[0].AfterDurable)
		require.Empty(t, h.step(effect.Fired{Name: StartsTimer}), "nothing left to write")
	})

	t.Run("FromIsCopiedWhereKept", func(t *testing.T) {
		t.Parallel()
		h := serving(t, testConfig())
		h.step(Serving{})
		scratch := &messages.PID{Address: "node1", Id: "caller-1"}
		require.Empty(t, h.step(Submit{From: scratch, Work: work("j1", nil)}), "held")
		scratch.Id = "caller-2" // the runner reuses its PID
		h.step(Serving{Until: forever})
		rec := h.step(Recovered{})
		require.Len(t, replies(rec), 1)
		require.True(t, samePID(&messages.PID{Address: "node1", Id: "caller-1"}, replies(rec)[0].To), "the held submission's caller")
		h.durable(rec)
		h.step(request(worker1, 1)) // takes j1

		// A worker that names no PID of its own is known by its request's
		// sender; it wants work, and is told at that PID.
		anon := &messages.PID{Address: "node3", Id: "worker-9"}
		require.Empty(t, handedOut(h.step(RequestWork{From: anon, Msg: &messages.WorkerRequestsWork{WorkerId: "worker-9", Capacity: 1}}), anon))
		anon.Id = "someone-else"
		told := h.durable(h.step(Submit{From: frontend, Work: work("j2", nil)}))
		require.Len(t, sentTo(told, &messages.PID{Address: "node3", Id: "worker-9"}, false), 1)
	})

	t.Run("LogsAreEffects", func(t *testing.T) {
		t.Parallel()
		h := serving(t, testConfig())
		effs := h.step(register(worker1))
		require.Contains(t, effs, effect.Effect(effect.Log{Level: slog.LevelInfo, Msg: "worker registered",
			Attrs: []any{"worker_id", "worker-1", "worker", "node3/worker-1"}}))
	})
}

// TestMasterIsDeterministic: the same inputs give the same effects, though
// the state and the registry keep maps.
func TestMasterIsDeterministic(t *testing.T) {
	t.Parallel()
	run := func() []effect.Effect {
		h := serving(t, testConfig())
		var all []effect.Effect
		workers := make([]*messages.PID, 12)
		for i := range workers {
			workers[i] = &messages.PID{Address: "n", Id: fmt.Sprintf("w%02d", i)}
			all = append(all, h.step(register(workers[i]))...)
			all = append(all, h.step(request(workers[i], 2))...)
		}
		var acc []effect.Effect
		for i := range 30 {
			acc = append(acc, h.step(Submit{From: frontend, Work: work(fmt.Sprintf("j%02d", i), waiterA)})...)
		}
		all = append(all, acc...)
		all = append(all, h.durable(acc)...)
		for _, w := range workers {
			all = append(all, h.step(request(w, 3))...)
		}
		h.now = t0.Add(time.Minute)
		all = append(all, h.step(Recovered{})...)
		return all
	}
	want := run()
	for range 5 {
		require.Equal(t, want, run())
	}
}
