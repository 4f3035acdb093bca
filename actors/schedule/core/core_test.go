package core_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/actors/schedule/core"
	"github.com/foreman-actors/foreman/messages"
)

var t0 = time.Date(2026, 11, 28, 10, 0, 3, 0, time.UTC)

// bundle drives a core on an injected clock and records its journal.
type bundle struct {
	t       *testing.T
	c       *core.Core
	now     time.Time
	journal []proto.Message
	timer   time.Time
}

func setup(t *testing.T) *bundle {
	t.Helper()
	return &bundle{t: t, c: &core.Core{}, now: t0}
}

// run carries out effects: appends go to the journal, the timer is kept;
// it returns the submissions.
func (b *bundle) run(effs []effect.Effect) []core.Submit {
	var subs []core.Submit
	for _, e := range effs {
		switch e := e.(type) {
		case effect.Append:
			b.journal = append(b.journal, e.Events...)
		case effect.Timer:
			if e.Name != core.TimerName {
				b.t.Fatalf("timer %q", e.Name)
			}
			b.timer = e.At
		case effect.StopTimer:
			b.timer = time.Time{}
		case core.Submit:
			subs = append(subs, e)
		case effect.Log:
		default:
			b.t.Fatalf("unexpected effect %T", e)
		}
	}
	return subs
}

func (b *bundle) add(s *messages.Schedule) *messages.ScheduleReply {
	b.t.Helper()
	rep, effs := b.c.Request(b.now, &messages.ScheduleRequest{Op: "add", Schedule: s})
	b.run(effs)
	return rep
}

func (b *bundle) req(op, name string) *messages.ScheduleReply {
	rep, effs := b.c.Request(b.now, &messages.ScheduleRequest{Op: op, Name: name})
	b.run(effs)
	return rep
}

// advance moves the clock to the armed timer (if at or before to) and
// fires it, acking every submission at once; it returns the fired ticks.
func (b *bundle) advance(to time.Time) []string {
	var fired []string
	for !b.timer.IsZero() && !b.timer.After(to) {
		b.now = b.timer
		subs := b.run(b.c.Step(b.now, effect.Fired{Name: core.TimerName}))
		fired = append(fired, b.ack(subs)...)
	}
	b.now = to
	return fired
}

func (b *bundle) ack(subs []core.Submit) []string {
	var fired []string
	for len(subs) > 0 {
		s := subs[0]
		subs = subs[1:]
		fired = append(fired, s.Work.GetWorkId())
		subs = append(subs, b.run(b.c.Step(b.now, core.Acked{Name: s.Name, Tick: s.Tick}))...)
	}
	return fired
}

func ids(name string, ticks ...string) []string {
	out := make([]string, len(ticks))
	for i, tk := range ticks {
		at, err := time.Parse(time.RFC3339, tk)
		if err != nil {
			panic(err)
		}
		out[i] = core.WorkID(name, at.Unix())
	}
	return out
}

func equal(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("fired\n  %v\nwant\n  %v", got, want)
	}
}

func TestCore(t *testing.T) {
	t.Parallel()

	t.Run("EveryFiresEachTickOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		if rep := b.add(&messages.Schedule{Name: "s", Spec: "@every 10s", JobType: "square"}); rep.GetCode() != "" {
			t.Fatal(rep.GetError())
		}
		if !b.timer.Equal(t0.Add(7 * time.Second)) {
			t.Fatalf("timer at %v, want the first tick", b.timer)
		}
		got := b.advance(t0.Add(30 * time.Second))
		equal(t, got, ids("s", "2026-11-28T10:00:10Z", "2026-11-28T10:00:20Z", "2026-11-28T10:00:30Z"))
		if len(b.journal) != 4 { // the ScheduleSet and three ticks
			t.Fatalf("journal has %d events", len(b.journal))
		}
	})

	t.Run("OneTimerForManySchedules", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.add(&messages.Schedule{Name: "b", Spec: "@every 7s", JobType: "x"})
		b.add(&messages.Schedule{Name: "a", Spec: "*/5 * * * * *", JobType: "x"})
		if !b.timer.Equal(t0.Add(2 * time.Second)) {
			t.Fatalf("timer at %v, want the earliest tick 10:00:05", b.timer)
		}
		got := b.advance(t0.Add(11 * time.Second))
		bTick := (t0.Unix()/7 + 1) * 7 // @every ticks at multiples since the epoch: 10:00:10
		equal(t, got, []string{
			core.WorkID("a", t0.Add(2*time.Second).Unix()),
			core.WorkID("a", t0.Add(7*time.Second).Unix()),
			core.WorkID("b", bTick),
		})
	})

	missed := []struct {
		name   string
		policy messages.MissedPolicy
		max    int32
		want   []string
	}{
		// Down from 10:00:03 to 10:01:00.5: ticks 10:00:10 .. 10:00:50 were
		// missed, 10:01:00 is on time.
		{name: "SkipRunsOnlyTheOnTimeTick", policy: messages.MissedPolicy_MISSED_POLICY_SKIP,
			want: []string{"2026-11-28T10:01:00Z"}},
		{name: "OnceIsCoveredByTheOnTimeTick", policy: messages.MissedPolicy_MISSED_POLICY_ONCE,
			want: []string{"2026-11-28T10:01:00Z"}},
		{name: "CatchUpRunsTheLastN", policy: messages.MissedPolicy_MISSED_POLICY_CATCH_UP, max: 3,
			want: []string{"2026-11-28T10:00:30Z", "2026-11-28T10:00:40Z", "2026-11-28T10:00:50Z", "2026-11-28T10:01:00Z"}},
		{name: "CatchUpRunsAllWithinTheBound", policy: messages.MissedPolicy_MISSED_POLICY_CATCH_UP, max: 100,
			want: []string{"2026-11-28T10:00:10Z", "2026-11-28T10:00:20Z", "2026-11-28T10:00:30Z", "2026-11-28T10:00:40Z", "2026-11-28T10:00:50Z", "2026-11-28T10:01:00Z"}},
	}
	for _, tc := range missed {
		t.Run("Missed"+tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.add(&messages.Schedule{Name: "m", Spec: "@every 10s", JobType: "x", Missed: tc.policy, CatchUpMax: tc.max})
			// The cluster is down: no timer fires until a new activation
			// recovers at 10:01:00.5.
			b.now = time.Date(2026, 11, 28, 10, 1, 0, 500_000_000, time.UTC)
			got := b.ack(b.run(b.c.Step(b.now, core.Recovered{})))
			equal(t, got, ids("m", tc.want...))
			s := b.c.Schedules()[0]
			if s.GetFired()+s.GetSkipped() != 6 {
				t.Fatalf("fired %d + skipped %d, want the 6 ticks accounted for", s.GetFired(), s.GetSkipped())
			}
		})
	}

	t.Run("MissedOnceWithoutOnTimeTick", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.add(&messages.Schedule{Name: "m", Spec: "@hourly", JobType: "x"})
		b.now = time.Date(2026, 11, 28, 15, 30, 0, 0, time.UTC)
		got := b.ack(b.run(b.c.Step(b.now, core.Recovered{})))
		equal(t, got, ids("m", "2026-11-28T15:00:00Z"))
		if !b.timer.Equal(time.Date(2026, 11, 28, 16, 0, 0, 0, time.UTC)) {
			t.Fatalf("timer %v", b.timer)
		}
		if s := b.c.Schedules()[0]; s.GetSkipped() != 4 {
			t.Fatalf("skipped %d, want 4 (11:00 to 14:00)", s.GetSkipped())
		}
	})

	t.Run("MissedSkipArmsForTheNextTick", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.add(&messages.Schedule{Name: "m", Spec: "@hourly", JobType: "x", Missed: messages.MissedPolicy_MISSED_POLICY_SKIP})
		b.now = time.Date(2026, 11, 28, 15, 30, 0, 0, time.UTC)
		if got := b.ack(b.run(b.c.Step(b.now, core.Recovered{}))); len(got) != 0 {
			t.Fatalf("fired %v", got)
		}
		equal(t, b.advance(time.Date(2026, 11, 28, 16, 0, 0, 0, time.UTC)), ids("m", "2026-11-28T16:00:00Z"))
	})

	t.Run("CrashBeforeTheRecordFiresTheSameID", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.add(&messages.Schedule{Name: "c", Spec: "@every 10s", JobType: "x", Missed: messages.MissedPolicy_MISSED_POLICY_CATCH_UP})
		b.now = t0.Add(7 * time.Second)
		subs := b.run(b.c.Step(b.now, effect.Fired{Name: core.TimerName}))
		if len(subs) != 1 {
			t.Fatalf("subs %v", subs)
		}
		// The master acks, but the scheduler dies before journaling it: a
		// new core recovers from the journal and fires the same work id.
		r := setup(t)
		for _, ev := range b.journal {
			if err := r.c.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
		r.now = b.now.Add(3 * time.Second)
		again := r.run(r.c.Step(r.now, core.Recovered{}))
		if len(again) != 1 || again[0].Work.GetWorkId() != subs[0].Work.GetWorkId() {
			t.Fatalf("recovered core submitted %v, want %s again", again, subs[0].Work.GetWorkId())
		}
	})

	t.Run("FailedSubmissionRetriesTheSameTick", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.add(&messages.Schedule{Name: "f", Spec: "@every 10s", JobType: "x"})
		b.now = t0.Add(7 * time.Second)
		subs := b.run(b.c.Step(b.now, effect.Fired{Name: core.TimerName}))
		b.run(b.c.Step(b.now, core.Failed{Name: "f", Tick: subs[0].Tick, Err: errors.New("no master")}))
		if !b.timer.Equal(b.now.Add(core.RetryAfter)) {
			t.Fatalf("retry timer %v", b.timer)
		}
		b.now = b.timer
		again := b.run(b.c.Step(b.now, effect.Fired{Name: core.TimerName}))
		if len(again) != 1 || again[0].Tick != subs[0].Tick {
			t.Fatalf("retried %v", again)
		}
	})

	t.Run("PauseAndResumeDoNotCatchUp", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.add(&messages.Schedule{Name: "p", Spec: "@every 10s", JobType: "x", Missed: messages.MissedPolicy_MISSED_POLICY_CATCH_UP, CatchUpMax: 100})
		if rep := b.req("pause", "p"); rep.GetCode() != "" || !rep.GetSchedules()[0].GetSchedule().GetPaused() {
			t.Fatalf("pause: %v", rep)
		}
		if !b.timer.IsZero() {
			t.Fatalf("a paused schedule keeps the timer at %v", b.timer)
		}
		b.now = t0.Add(time.Minute)
		b.req("resume", "p")
		got := b.advance(t0.Add(time.Minute + 10*time.Second))
		equal(t, got, ids("p", "2026-11-28T10:01:10Z"))
		if s := b.c.Schedules()[0]; s.GetSkipped() != 0 {
			t.Fatalf("skipped %d while paused, want 0", s.GetSkipped())
		}
	})

	t.Run("RemoveStopsAndIgnoresALateAck", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.add(&messages.Schedule{Name: "r", Spec: "@every 10s", JobType: "x"})
		b.now = t0.Add(7 * time.Second)
		subs := b.run(b.c.Step(b.now, effect.Fired{Name: core.TimerName}))
		b.req("remove", "r")
		if effs := b.c.Step(b.now, core.Acked{Name: "r", Tick: subs[0].Tick}); len(effs) != 0 {
			t.Fatalf("a removed schedule's ack gave %v", effs)
		}
		if rep := b.req("remove", "r"); rep.GetCode() != core.CodeNotFound {
			t.Fatalf("second remove: %v", rep)
		}
	})

	t.Run("ReplayGivesTheSameState", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.add(&messages.Schedule{Name: "x", Spec: "@every 10s", JobType: "x"})
		b.add(&messages.Schedule{Name: "y", Spec: "TZ=Europe/Berlin 0 0 9 * * MON-FRI", JobType: "x", Payload: []byte("{}")})
		b.advance(t0.Add(45 * time.Second))
		b.req("pause", "x")
		r := &core.Core{}
		for _, ev := range b.journal {
			if err := r.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
		if !proto.Equal(r.Snapshot(), b.c.Snapshot()) {
			t.Fatalf("replayed %v\nlive %v", r.Snapshot(), b.c.Snapshot())
		}
		s := &core.Core{}
		if err := s.Reset(b.c.Snapshot()); err != nil || !proto.Equal(s.Snapshot(), b.c.Snapshot()) {
			t.Fatalf("reset from snapshot: %v", err)
		}
	})

	t.Run("ReplaceKeepsHistory", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.add(&messages.Schedule{Name: "h", Spec: "@every 10s", JobType: "x"})
		b.advance(t0.Add(17 * time.Second))
		b.add(&messages.Schedule{Name: "h", Spec: "@every 5s", JobType: "y"})
		got := b.advance(t0.Add(22 * time.Second))
		equal(t, got, ids("h", "2026-11-28T10:00:25Z"))
		if s := b.c.Schedules()[0]; s.GetFired() != 3 || s.GetJobType() != "y" {
			t.Fatalf("after replace: %v", s)
		}
	})
}

func TestRequestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, want string
		s          *messages.Schedule
	}{
		{name: "BadName", want: "name", s: &messages.Schedule{Name: "a b", Spec: "@hourly", JobType: "x"}},
		{name: "NoJobType", want: "job_type", s: &messages.Schedule{Name: "a", Spec: "@hourly"}},
		{name: "BadSpecNamesTheField", want: "cron expression: hour \"25\"", s: &messages.Schedule{Name: "a", Spec: "0 0 25 * * *", JobType: "x"}},
		{name: "BadZone", want: "time zone", s: &messages.Schedule{Name: "a", Spec: "@hourly", TimeZone: "Nowhere/City", JobType: "x"}},
		{name: "CatchUpTooLarge", want: "catch_up_max", s: &messages.Schedule{Name: "a", Spec: "@hourly", JobType: "x", CatchUpMax: 5000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &core.Core{}
			rep, effs := c.Request(t0, &messages.ScheduleRequest{Op: "add", Schedule: tc.s})
			if rep.GetCode() != core.CodeInvalid || !strings.Contains(rep.GetError(), tc.want) || len(effs) != 0 {
				t.Fatalf("reply %v effects %v, want invalid naming %q", rep, effs, tc.want)
			}
			if len(c.Schedules()) != 0 {
				t.Fatal("a refused schedule was kept")
			}
		})
	}
}
