package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/messages"
)

var t0 = time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)

var (
	w1 = &messages.PID{Address: "10.0.0.7:1", Id: "worker-1"}
	w2 = &messages.PID{Address: "10.0.0.8:1", Id: "worker-2"}
)

func still(to *messages.PID) effect.Effect {
	return effect.Reply{To: to, Msg: &messages.IAmStillInterested{WorkId: "j"}}
}

func noLonger(to *messages.PID, r Reason) effect.Effect {
	return effect.Reply{To: to, Msg: &messages.IAmNoLongerInterested{WorkId: "j", Reason: r.Proto()}}
}

func push(to *messages.PID, r Reason) effect.Effect {
	return effect.Send{To: to, Msg: &messages.IAmNoLongerInterested{WorkId: "j", Reason: r.Proto()}}
}

func linger(at time.Duration) effect.Effect { return effect.Timer{Name: TimerLinger, At: t0.Add(at)} }

// TestInterestTable: what the workers hear in each case, and when the
// Interest stops.
func TestInterestTable(t *testing.T) {
	t.Parallel()
	result := &messages.WorkResult{WorkId: "j", Status: messages.WorkStatus_WORK_STATUS_DONE}
	type step struct {
		at   time.Duration
		in   any
		want []effect.Effect
	}
	asked := func(from *messages.PID) Asked { return Asked{From: from, WorkID: "j"} }
	tests := []struct {
		name  string
		steps []step
	}{
		{"yes while the caller waits; the outcome is delivered once", []step{
			{0, asked(w1), []effect.Effect{still(w1)}},
			{time.Second, asked(w2), []effect.Effect{still(w2)}},
			{2 * time.Second, Outcome{Result: result}, []effect.Effect{Deliver{Result: result}}},
			{3 * time.Second, Outcome{Result: result}, nil},
			{4 * time.Second, Closed{}, []effect.Effect{effect.StopTimer{Name: TimerLinger}, Stop{}}},
			{5 * time.Second, asked(w1), nil},
		}},
		{"the caller leaves: the workers told yes hear no, unasked; later askers hear no for the linger", []step{
			{0, asked(w1), []effect.Effect{still(w1)}},
			{0, asked(w2), []effect.Effect{still(w2)}},
			{time.Second, CallerGone{Reason: ReasonCancelled}, []effect.Effect{push(w1, ReasonCancelled), push(w2, ReasonCancelled), linger(6 * time.Second)}},
			{2 * time.Second, CallerGone{Reason: ReasonDeadline}, nil},
			{3 * time.Second, asked(w1), []effect.Effect{noLonger(w1, ReasonCancelled)}},
			{4 * time.Second, asked(w2), []effect.Effect{noLonger(w2, ReasonCancelled)}},
			{6 * time.Second, effect.Fired{Name: TimerLinger}, []effect.Effect{Stop{}}},
			{7 * time.Second, asked(w1), nil},
		}},
		{"the caller left before anyone asked: no push, just no", []step{
			{0, CallerGone{Reason: ReasonDeadline}, []effect.Effect{linger(5 * time.Second)}},
			{time.Second, asked(w1), []effect.Effect{noLonger(w1, ReasonDeadline)}},
		}},
		{"a question after the ctx ended but before its notice: no, and the linger starts", []step{
			{0, asked(w1), []effect.Effect{still(w1)}},
			{time.Second, Asked{From: w2, WorkID: "j", CallerLeft: true, Reason: ReasonDeadline},
				[]effect.Effect{push(w1, ReasonDeadline), linger(6 * time.Second), noLonger(w2, ReasonDeadline)}},
			{time.Second, CallerGone{Reason: ReasonDeadline}, nil},
		}},
		{"detached: yes to everyone, even after the caller left, until the release linger ends", []step{
			{0, asked(w1), []effect.Effect{still(w1)}},
			{time.Second, Released{}, []effect.Effect{linger(61 * time.Second)}},
			{time.Second, Released{}, nil},
			{2 * time.Second, CallerGone{Reason: ReasonCancelled}, nil},
			{3 * time.Second, Asked{From: w2, WorkID: "j", CallerLeft: true, Reason: ReasonCancelled}, []effect.Effect{still(w2)}},
			{61 * time.Second, effect.Fired{Name: TimerLinger}, []effect.Effect{Stop{}}},
		}},
		{"released after the caller left: too late, no stays no", []step{
			{0, CallerGone{Reason: ReasonCancelled}, []effect.Effect{linger(5 * time.Second)}},
			{time.Second, Released{}, nil},
			{time.Second, asked(w1), []effect.Effect{noLonger(w1, ReasonCancelled)}},
		}},
		{"a stale linger timer before any linger does nothing", []step{
			{0, effect.Fired{Name: TimerLinger}, nil},
			{0, asked(w1), []effect.Effect{still(w1)}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := NewInterest(InterestConfig{})
			for i, s := range tt.steps {
				require.Equal(t, s.want, in.Step(t0.Add(s.at), s.in), "step %d (%T)", i, s.in)
			}
		})
	}
}

// TestAskerTable: the worker's side: run on yes, skip on no, on a dead
// letter or on silence, and cancel when told no while running.
func TestAskerTable(t *testing.T) {
	t.Parallel()
	waiter := &messages.PID{Address: "10.0.0.1:1", Id: "interest-1"}
	stop := effect.StopTimer{Name: TimerAsk}
	no := &messages.IAmNoLongerInterested{Reason: ReasonCancelled.Proto()}
	type step struct {
		in   any
		want []effect.Effect
	}
	ask := step{Ask{Waiter: waiter, WorkID: "j"}, []effect.Effect{
		effect.Send{To: waiter, Msg: &messages.AreYouStillInterested{WorkId: "j"}},
		effect.Timer{Name: TimerAsk, At: t0.Add(DefaultAskTimeout)},
	}}
	tests := []struct {
		name  string
		steps []step
	}{
		{"yes, then no while running: cancel", []step{ask,
			{Heard{Msg: &messages.IAmStillInterested{}}, []effect.Effect{stop, Verdict{Interested: true, Answered: true}}},
			{Heard{Msg: &messages.IAmStillInterested{}}, nil},
			{Heard{Msg: no}, []effect.Effect{Cancel{Reason: ReasonCancelled.Proto()}}},
			{Heard{Msg: no}, nil},
		}},
		{"no: skip", []step{ask, {Heard{Msg: no}, []effect.Effect{stop, Verdict{Answered: true, Reason: ReasonCancelled.Proto()}}}}},
		{"a dead letter: skip", []step{ask, {Heard{}, []effect.Effect{stop, Verdict{}}}}},
		{"silence: skip", []step{ask, {effect.Fired{Name: TimerAsk}, []effect.Effect{Verdict{}}}, {Heard{Msg: &messages.IAmStillInterested{}}, nil}}},
		{"no waiter: skip at once", []step{{Ask{WorkID: "j"}, []effect.Effect{Verdict{}}}}},
		{"a no after the run ended is not about it", []step{ask,
			{Heard{Msg: &messages.IAmStillInterested{}}, []effect.Effect{stop, Verdict{Interested: true, Answered: true}}},
			{RunEnded{}, nil},
			{Heard{Msg: no}, nil},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := NewAsker(0)
			for i, s := range tt.steps {
				require.Equal(t, s.want, a.Step(t0, s.in), "step %d (%T)", i, s.in)
			}
		})
	}
}
