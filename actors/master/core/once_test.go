package core

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/messages"
)

// TestOnceWorkIsNotRunAgainBySubmission: a Work submitted with once (a
// periodic schedule's tick) that died or was cancelled is answered as the
// work it is when the same id is submitted again, not run again: a
// scheduler's retried submission of a tick that reaches the master after
// the tick's job died is the same fire (the simulator's seed 6000457 with
// --schedules, where the tick then ran twice). An operator's explicit
// re-submission (POST /work/{id}/resubmit) still runs it, and a Work
// without once still runs again when submitted again.
func TestOnceWorkIsNotRunAgainBySubmission(t *testing.T) {
	die := func(h *harness, w *messages.Work) {
		h.durable(h.step(Submit{From: frontend, Work: w}))
		h.step(register(worker1))
		require.Equal(t, []string{w.GetWorkId()}, handedOut(h.step(request(worker1, 1)), worker1))
		h.durable(h.step(Failed{Msg: &messages.WorkFailed{WorkId: w.GetWorkId(), WorkerId: worker1.GetId(), Error: "boom", Permanent: true}}))
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DEAD, h.m.State().Status(w.GetWorkId()).GetStatus())
	}
	t.Run("ASubmissionIsAnsweredAsTheDeadWork", func(t *testing.T) {
		h := serving(t, testConfig())
		w := work("tick", nil)
		w.Once = true
		die(h, w)
		again := h.step(Submit{From: frontend, Work: work("tick", nil)})
		require.Empty(t, events(again), "not accepted again")
		rs := replies(again)
		require.Len(t, rs, 1)
		require.Equal(t, &messages.Ack{WorkId: "tick"}, rs[0].Msg)
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DEAD, h.m.State().Status("tick").GetStatus())
		require.Empty(t, handedOut(h.step(request(worker1, 1)), worker1))
	})
	t.Run("AnExplicitResubmissionRunsIt", func(t *testing.T) {
		h := serving(t, testConfig())
		w := work("tick", nil)
		w.Once = true
		die(h, w)
		h.durable(h.step(Resubmit{From: frontend, Msg: &messages.ResubmitWork{WorkId: "tick"}}))
		require.Equal(t, []string{"tick"}, handedOut(h.step(request(worker1, 1)), worker1))
	})
	t.Run("WithoutOnceASubmissionRunsItAgain", func(t *testing.T) {
		h := serving(t, testConfig())
		die(h, work("j1", nil))
		require.NotEmpty(t, events(h.step(Submit{From: frontend, Work: work("j1", nil)})))
	})
}
