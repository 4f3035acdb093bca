package core

import (
	"fmt"
	"testing"
	"testing/quick"

	"github.com/stretchr/testify/require"
)

// Reference: seed 003, WorkWaiter: interested answers IAmStillInterested and
// completes the promise on WorkComplete; after ReceiveTimeout it fails the
// promise and becomes notInterested, which answers IAmNoLongerInterested
// and stops.
func TestWaiterFSM(t *testing.T) {
	t.Parallel()

	type event int
	const (
		ask event = iota + 1
		giveUp
		complete
		drop
	)
	type step struct {
		ev    event
		want  Effects
		phase Phase
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name: "asked then completed in time",
			steps: []step{
				{ev: ask, want: Effects{Reply: AnswerStill}, phase: PhaseInterested},
				{ev: complete, want: Effects{Deliver: true, Stop: true}, phase: PhaseDone},
			},
		},
		{
			name: "gave up before the worker asked: the worker is told no and the waiter stops",
			steps: []step{
				{ev: giveUp, want: Effects{Fail: true}, phase: PhaseNotInterested},
				{ev: ask, want: Effects{Reply: AnswerNoLonger, Stop: true}, phase: PhaseDone},
			},
		},
		{
			name: "gave up while the work ran: the worker is told to cancel, the late result is dropped",
			steps: []step{
				{ev: ask, want: Effects{Reply: AnswerStill}, phase: PhaseInterested},
				{ev: giveUp, want: Effects{Fail: true, CancelWorker: true}, phase: PhaseNotInterested},
				{ev: giveUp, want: Effects{}, phase: PhaseNotInterested},
				{ev: complete, want: Effects{Stop: true}, phase: PhaseDone},
			},
		},
		{
			name: "dropped while waiting fails the promise",
			steps: []step{
				{ev: drop, want: Effects{Fail: true, Stop: true}, phase: PhaseDone},
				{ev: ask, want: Effects{}, phase: PhaseDone},
			},
		},
		{
			name: "dropped after giving up only stops",
			steps: []step{
				{ev: giveUp, want: Effects{Fail: true}, phase: PhaseNotInterested},
				{ev: drop, want: Effects{Stop: true}, phase: PhaseDone},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := NewWaiter()
			for i, s := range tt.steps {
				var got Effects
				switch s.ev {
				case ask:
					got = w.Ask()
				case giveUp:
					got = w.GiveUp(ReasonDeadline)
				case complete:
					got = w.Complete()
				case drop:
					got = w.Drop()
				}
				require.Equal(t, s.want, got, "step %d", i)
				require.Equal(t, s.phase, w.phase, "step %d", i)
			}
		})
	}
}

// checkWaiter drives a Waiter with random events and checks the rules
// every sequence must keep: the promise is completed at most once, the
// result is delivered only to a caller that still waits, "still interested"
// is never said after giving up, the cancel push only goes to a worker that
// was told yes, and nothing happens after Stop.
func checkWaiter(events []byte) error {
	w := NewWaiter()
	completed, stopped, gaveUp, toldYes := false, false, false, false
	for i, b := range events {
		var eff Effects
		kind := b % 4
		switch kind {
		case 0:
			eff = w.Ask()
		case 1:
			eff = w.GiveUp(Reason(b%3 + 1))
		case 2:
			eff = w.Complete()
		case 3:
			eff = w.Drop()
		}
		if stopped && eff != (Effects{}) {
			return fmt.Errorf("event %d: effects %+v after Stop", i, eff)
		}
		if eff.Deliver || eff.Fail {
			if completed {
				return fmt.Errorf("event %d: promise completed twice", i)
			}
			completed = true
		}
		if eff.Deliver && gaveUp {
			return fmt.Errorf("event %d: result delivered after the caller gave up", i)
		}
		if eff.Reply == AnswerStill && gaveUp {
			return fmt.Errorf("event %d: said still interested after giving up", i)
		}
		if eff.CancelWorker && !toldYes {
			return fmt.Errorf("event %d: cancel pushed without a worker told yes", i)
		}
		if eff.Reply == AnswerStill {
			toldYes = true
		}
		if kind == 1 && w.phase == PhaseNotInterested {
			gaveUp = true
		}
		if eff.Stop {
			stopped = true
			if w.phase != PhaseDone {
				return fmt.Errorf("event %d: stopped in phase %v", i, w.phase)
			}
		}
		if (w.phase == PhaseDone) != stopped {
			return fmt.Errorf("event %d: phase %v but stopped=%v", i, w.phase, stopped)
		}
	}
	return nil
}

func TestWaiterFSMRules(t *testing.T) {
	t.Parallel()
	f := func(events []byte) bool {
		if err := checkWaiter(events); err != nil {
			t.Log(err)
			return false
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Fatal(err)
	}
}

func FuzzWaiterFSM(f *testing.F) {
	f.Add([]byte{0, 1, 2})
	f.Add([]byte{1, 0, 0})
	f.Add([]byte{3, 0, 1, 2})
	f.Fuzz(func(t *testing.T, events []byte) {
		if err := checkWaiter(events); err != nil {
			t.Fatal(err)
		}
	})
}

func TestWaiterStringers(t *testing.T) {
	t.Parallel()
	require.Equal(t, "not_interested", PhaseNotInterested.String())
	require.Equal(t, "closed", ReasonClosed.String())
}
