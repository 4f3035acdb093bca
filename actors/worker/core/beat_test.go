package core_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/actors/worker/core"
	"github.com/foreman-actors/foreman/messages"
)

func beat(slot int, seq uint64, p *core.Progress) func(*core.Worker, time.Time) []effect.Effect {
	return func(w *core.Worker, at time.Time) []effect.Effect { return w.Beat(at, slot, seq, p) }
}

func drainWithin(d time.Duration) func(*core.Worker, time.Time) []effect.Effect {
	return func(w *core.Worker, at time.Time) []effect.Effect { return w.DrainWithin(at, d) }
}

// TestWorkerCoreLongJobs: heartbeats are coalesced to one message per
// interval, stale ones dropped; a drain lets jobs finish within its
// timeout, then cancels and hands back the rest.
func TestWorkerCoreLongJobs(t *testing.T) {
	t.Parallel()
	started := []string{"timer register +10s", "register", "request 2"}
	long := func(c *core.Config) {
		c.BeatInterval = time.Second
		c.BeatTimeout = func(jt string) time.Duration {
			if jt == "echo" {
				return 30 * time.Second
			}
			return 0
		}
	}
	tests := []struct {
		name  string
		cfg   core.Config
		steps []step
	}{
		{name: "HeartbeatsLeaveAtMostOncePerInterval", cfg: config(long), steps: []step{
			{do: start, want: started},
			{do: bundle(&messages.Work{WorkId: "a", JobType: "echo", Attempt: 2}, &messages.Work{WorkId: "b", JobType: "sleep", Attempt: 1}),
				want: []string{"run 0 a", "run 1 b"}},
			{do: beat(0, 1, nil), want: []string{"heartbeat a#2/30000ms", "timer beat +1s"}}, // the first leaves at once
			{at: 100 * time.Millisecond, do: beat(0, 1, nil), want: nil},                     // a tight loop: gathered
			{at: 200 * time.Millisecond, do: beat(0, 1, &core.Progress{Fraction: 0.25, Message: "x"}), want: nil},
			{at: 300 * time.Millisecond, do: beat(0, 1, &core.Progress{Fraction: 0.5, Message: "y"}), want: nil},
			{at: 400 * time.Millisecond, do: beat(1, 2, nil), want: nil},
			{at: time.Second, do: fired(core.TimerBeat), want: []string{"heartbeat a#2/30000ms@0.50:y,b#1/0ms", "timer beat +1s"}},
			{at: 2 * time.Second, do: fired(core.TimerBeat), want: nil}, // quiet: nothing, and the timer rests
			{at: 2500 * time.Millisecond, do: beat(0, 1, nil), want: []string{"heartbeat a#2/30000ms@0.50:y", "timer beat +1s"}},
			{at: 2600 * time.Millisecond, do: beat(0, 7, nil), want: nil}, // a stale passage
			{at: 2700 * time.Millisecond, do: done(1, "b", "1"), want: []string{"timer resend:b +5s", "yield flush"}},
			{at: 2700 * time.Millisecond, do: beat(1, 2, nil), want: nil}, // b returned
			{at: 3500 * time.Millisecond, do: fired(core.TimerBeat), want: nil},
		}},
		{name: "ADrainLetsJobsFinishWithinItsTimeout", cfg: config(), steps: []step{
			{do: start, want: started},
			{do: bundle(work("a"), work("b")), want: []string{"run 0 a", "run 1 b"}},
			{do: drainWithin(25 * time.Second), want: []string{"timer drain-timeout +25s"}},
			{at: time.Second, do: done(0, "a", "1"), want: []string{"timer resend:a +5s", "yield flush"}},
			{at: time.Second, do: fired(core.YieldFlush), want: []string{"done a=1"}}, // and no request: draining
			{at: 2 * time.Second, do: done(1, "b", "2"), want: []string{"timer resend:b +5s", "yield flush"}},
			{at: 2 * time.Second, do: fired(core.YieldFlush), want: []string{"done b=2"}},
			{at: 2 * time.Second, do: ack("a", "b"), want: []string{"stop resend:a", "stop resend:b", "deregister", "drained"}},
		}},
		{name: "ADrainResendsTheResultsAwaitingTheirAckAtOnce", cfg: config(), steps: []step{
			{do: start, want: started},
			{do: offer(work("a")), want: []string{"run 0 a"}},
			{do: done(0, "a", "1"), want: []string{"timer resend:a +5s", "yield flush"}},
			{do: fired(core.YieldFlush), want: []string{"done a=1", "request 2"}},
			{at: time.Second, do: drainWithin(25 * time.Second), want: []string{"timer drain-timeout +25s", "done a=1", "timer resend:a +5s"}},
			{at: time.Second, do: ack("a"), want: []string{"stop resend:a", "deregister", "drained"}},
		}},
		{name: "ADrainTimeoutCancelsAndHandsBackWhatStillRuns", cfg: config(), steps: []step{
			{do: start, want: started},
			{do: bundle(work("a"), work("b"), work("c")), want: []string{"run 0 a", "run 1 b"}},
			{do: drainWithin(25 * time.Second), want: []string{"timer drain-timeout +25s", "failed c handed-back"}, err: "worker stopping"},
			{at: time.Second, do: done(0, "a", "1"), want: []string{"timer resend:a +5s", "yield flush"}},
			{at: time.Second, do: fired(core.YieldFlush), want: []string{"done a=1"}},
			{at: 2 * time.Second, do: ack("a"), want: []string{"stop resend:a"}},
			{at: 25 * time.Second, do: fired(core.TimerDrain),
				want: []string{"failed b handed-back", "cancel jobs: " + core.ErrDrainTimeout.Error(), "deregister", "drained"},
				err:  "drain timeout"},
			{at: 26 * time.Second, do: doneErr(1, "b", core.ErrDrainTimeout), want: nil}, // stale: handed back already
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := core.New(tt.cfg)
			for i, s := range tt.steps {
				at := t0.Add(s.at)
				effs := s.do(w, at)
				got := render(at, effs)
				if len(s.want) == 0 {
					require.Empty(t, got, "step %d", i)
				} else {
					require.Equal(t, s.want, got, "step %d", i)
				}
				if s.err != "" {
					require.Contains(t, failure(effs), s.err, "step %d", i)
				}
			}
		})
	}
}
