package core

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/messages"
)

// TestInterestRandomSchedules drives Interests with random questions,
// the caller leaving (noticed late or not at all), Detach, outcomes,
// Close and stale timers, and checks the rules the cluster relies on:
// once the caller has left (and had not detached) no worker hears yes;
// an unasked no goes only to a worker told yes; the outcome is delivered
// at most once; nothing happens after Stop; every question before Stop
// is answered.
func TestInterestRandomSchedules(t *testing.T) {
	t.Parallel()
	workers := []*messages.PID{{Id: "w0"}, {Id: "w1"}, {Id: "w2"}}
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 3))
		in := NewInterest(InterestConfig{})
		now := t0
		left, released, stopped := false, false, false
		toldYes := map[string]bool{}
		delivered := 0
		for step := range 60 {
			now = now.Add(time.Duration(rng.IntN(2000)) * time.Millisecond)
			var input any
			w := workers[rng.IntN(len(workers))]
			switch rng.IntN(8) {
			case 0, 1, 2:
				input = Asked{From: w, WorkID: "j", CallerLeft: left, Reason: ReasonCancelled}
			case 3:
				left = true
				if rng.IntN(2) == 0 { // the ctx's notice may lag behind questions
					input = CallerGone{Reason: ReasonCancelled}
				}
			case 4:
				if !left {
					input = Released{}
				}
			case 5:
				input = Outcome{Result: &messages.WorkResult{WorkId: "j"}}
			case 6:
				input = effect.Fired{Name: TimerLinger}
			case 7:
				if rng.IntN(10) == 0 {
					input = Closed{}
				}
			}
			if input == nil {
				continue
			}
			if _, ok := input.(Released); ok && in.Phase() == PhaseInterested {
				released = true
			}
			effs := in.Step(now, input)
			if stopped {
				require.Empty(t, effs, "seed %d step %d: effects after Stop", seed, step)
				continue
			}
			replies := 0
			for _, e := range effs {
				switch e := e.(type) {
				case effect.Reply:
					replies++
					if _, yes := e.Msg.(*messages.IAmStillInterested); yes {
						require.True(t, !left || released, "seed %d step %d: yes after the caller left", seed, step)
						toldYes[e.To.GetId()] = true
					}
				case effect.Send:
					require.True(t, toldYes[e.To.GetId()], "seed %d step %d: unasked no to %s, never told yes", seed, step, e.To.GetId())
				case Deliver:
					delivered++
					require.Equal(t, 1, delivered, "seed %d: delivered twice", seed)
				case Stop:
					stopped = true
				}
			}
			if _, asked := input.(Asked); asked {
				require.Equal(t, 1, replies, "seed %d step %d: a question not answered once", seed, step)
			}
		}
	}
}
