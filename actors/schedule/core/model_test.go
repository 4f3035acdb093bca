package core_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/actors/schedule/core"
	"github.com/foreman-actors/foreman/messages"
)

// TestExactlyOnceUnderCrashes is a seeded search over crash schedules: a
// scheduler core whose appends become durable late or never (a crash drops
// them), whose submissions reach a master that dedupes by work id (or are
// lost with the crash, before or after the master accepted them), and which
// is recovered from the journal after downtimes of up to five seconds. With
// @every 1s and MISSED_POLICY_CATCH_UP (bound 100), every tick from the
// first to the last before the end must be accepted by the master, none
// twice as a new job, and no id that is not a tick's.
func TestExactlyOnceUnderCrashes(t *testing.T) {
	t.Parallel()
	for seed := range uint64(300) {
		if err := crashRun(seed); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

type inflight struct {
	s core.Submit
}

func crashRun(seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 37))
	now := t0
	var (
		journal  []proto.Message // durable
		unsynced []proto.Message // appended, not yet durable
		flying   []inflight
		timer    time.Time
		accepted = map[string]int{}
		c        = &core.Core{}
	)
	run := func(effs []effect.Effect) {
		for _, e := range effs {
			switch e := e.(type) {
			case effect.Append:
				unsynced = append(unsynced, e.Events...)
			case effect.Timer:
				timer = e.At
			case effect.StopTimer:
				timer = time.Time{}
			case core.Submit:
				flying = append(flying, inflight{s: e})
			}
		}
	}
	_, effs := c.Request(now, &messages.ScheduleRequest{Op: "add", Schedule: &messages.Schedule{
		Name: "s", Spec: "@every 1s", JobType: "x", Missed: messages.MissedPolicy_MISSED_POLICY_CATCH_UP, CatchUpMax: 100}})
	journal = append(journal, effs[0].(effect.Append).Events...) // the add is durable before its reply
	run(effs[1:])
	end := t0.Add(60 * time.Second)
	heal := end.Add(-5 * time.Second) // no crash after this
	for now.Before(end) {
		now = now.Add(time.Duration(rng.IntN(300)) * time.Millisecond)
		switch r := rng.IntN(100); {
		case r < 3 && now.Before(heal): // crash
			for _, f := range flying {
				if rng.IntN(2) == 0 { // reached the master before the crash
					accepted[f.s.Work.GetWorkId()]++
				}
			}
			flying, unsynced, timer = nil, nil, time.Time{}
			now = now.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
			c = &core.Core{}
			for _, ev := range journal {
				if err := c.Apply(ev); err != nil {
					return err
				}
			}
			run(c.Step(now, core.Recovered{}))
		case r < 40: // a group commit
			journal = append(journal, unsynced...)
			unsynced = nil
		case r < 80 && len(flying) > 0: // the master answers one submission
			i := rng.IntN(len(flying))
			f := flying[i]
			flying = append(flying[:i], flying[i+1:]...)
			if rng.IntN(10) == 0 && now.Before(heal) {
				run(c.Step(now, core.Failed{Name: f.s.Name, Tick: f.s.Tick, Err: fmt.Errorf("no master")}))
				continue
			}
			accepted[f.s.Work.GetWorkId()]++
			run(c.Step(now, core.Acked{Name: f.s.Name, Tick: f.s.Tick}))
		}
		if !timer.IsZero() && !timer.After(now) {
			run(c.Step(now, effect.Fired{Name: core.TimerName}))
		}
	}
	// Drain: answer what flies until the last tick before end is in.
	for range 1000 {
		if len(flying) == 0 {
			if timer.IsZero() || timer.After(end) {
				break
			}
			now = timer
			run(c.Step(now, effect.Fired{Name: core.TimerName}))
			continue
		}
		f := flying[0]
		flying = flying[1:]
		accepted[f.s.Work.GetWorkId()]++
		run(c.Step(now, core.Acked{Name: f.s.Name, Tick: f.s.Tick}))
	}
	first, last := t0.Unix()+1, end.Unix()
	seen := 0
	for tick := first; tick <= last; tick++ {
		id := core.WorkID("s", tick)
		if accepted[id] == 0 {
			return fmt.Errorf("tick %d (%s) never reached the master", tick, id)
		}
		seen++
	}
	if len(accepted) != seen {
		return fmt.Errorf("the master saw %d ids, the ticks are %d: ids outside the ticks", len(accepted), seen)
	}
	return nil
}
