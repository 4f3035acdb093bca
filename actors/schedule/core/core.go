// Package core is the scheduler's pure core: the periodic schedules, which
// tick is due, what a missed tick becomes, and the one timer to arm. It
// reads no clock (now is an argument), starts no goroutine and keeps its
// schedules in a slice sorted by name, so the same inputs give the same
// effects (the simulator and the tests rely on it).
//
// A tick's job has the work id "sched:<name>:<tick's Unix second>", so a
// tick submitted twice (the scheduler crashed after the master acked it and
// before it journaled ScheduleTickFired, and its successor fires it again)
// is a duplicate the master acknowledges and does not run again.
package core

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/actors/schedule/cronexpr"
	"github.com/foreman-actors/foreman/messages"
)

// Limits and defaults.
const (
	// MissedAfter is how late a tick may be found due and still count as
	// on time; a tick found later was missed, and the schedule's
	// MissedPolicy decides whether it runs.
	MissedAfter = time.Second
	// RetryAfter is how long a schedule waits after a failed submission
	// before it tries again (the same tick, so the same work id).
	RetryAfter = time.Second
	// MaxCatchUp bounds a schedule's catch_up_max.
	MaxCatchUp = 1000
	// DefaultCatchUp is catch_up_max when MISSED_POLICY_CATCH_UP leaves it 0.
	DefaultCatchUp = 10
	// TimerName is the name of the core's one timer.
	TimerName = "schedule-tick"
	// countCap bounds the ticks counted as skipped at one firing.
	countCap = 1_000_000
)

// Reply codes of messages.ScheduleReply.
const (
	CodeInvalid     = "invalid"
	CodeNotFound    = "not_found"
	CodeUnavailable = "unavailable"
)

// nameRE is what a schedule name may be: it is part of work ids.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ErrInvalid is wrapped by Validate's errors.
var ErrInvalid = errors.New("schedule: invalid schedule")

// Submit is the core's own effect: submit Work, the job of tick Tick of
// schedule Name, and step the core with Acked once the master has
// acknowledged it, or with Failed.
type Submit struct {
	Name string
	Tick int64
	Work *messages.Work
}

// IsEffect marks Submit as an effect.
func (Submit) IsEffect() {}

// Input is one of the core's inputs: Recovered, effect.Fired, Acked, Failed.
type Input interface{}

// Recovered is the input once the scheduler has recovered its state: the
// core arms its timer.
type Recovered struct{}

// Acked says the master acknowledged the job of tick Tick of schedule Name.
type Acked struct {
	Name string
	Tick int64
}

// Failed says the submission of tick Tick of schedule Name failed.
type Failed struct {
	Name string
	Tick int64
	Err  error
}

// WorkID returns the work id of tick (Unix seconds) of schedule name.
func WorkID(name string, tick int64) string { return fmt.Sprintf("sched:%s:%d", name, tick) }

type entry struct {
	s        *messages.Schedule
	cron     *cronexpr.Schedule
	inflight int64     // tick submitted and not yet acked, 0 none
	retryAt  time.Time // no submission before this (after a failure)
}

// Core is the scheduler's state. The zero value is empty and ready.
type Core struct {
	entries []*entry // sorted by name
	armed   time.Time
	// Planted is test-only: it reintroduces a known bug so that the
	// simulator's tests can prove its invariants catch it; never set in
	// production (zero: none).
	Planted Bug
}

// Bug is test-only: a known bug a Core can plant back (Core.Planted), so
// that the simulator's tests (actors/sim) prove they catch it.
type Bug int

// The bugs Core.Planted can reintroduce.
const (
	// NoBug is production.
	NoBug Bug = iota
	// IDFromFireTime derives a tick's work id from the instant it fires
	// (in milliseconds) instead of the tick's time: a successor that fires
	// the tick again submits a second job, not a duplicate.
	IDFromFireTime
	// ForgetsFiredAtRecovery forgets the ticks fired at each recovery: the
	// schedule plans again from its creation, as if no tick had fired.
	ForgetsFiredAtRecovery
	// FiresEarly finds a tick due half a second before its time.
	FiresEarly
	// SkipFiresMissed treats the skip policy as once: the latest missed
	// tick fires.
	SkipFiresMissed
)

// plantedEarly is how early FiresEarly fires.
const plantedEarly = 500 * time.Millisecond

// Validate checks s and fills its defaults; the error names the field and
// gives an example.
func Validate(s *messages.Schedule) error {
	switch {
	case !nameRE.MatchString(s.GetName()):
		return fmt.Errorf("%w: name %q must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit (e.g. \"nightly-report\")", ErrInvalid, s.GetName())
	case strings.TrimSpace(s.GetJobType()) == "":
		return fmt.Errorf("%w: job_type is required (e.g. \"square\")", ErrInvalid)
	case s.GetMissed() < messages.MissedPolicy_MISSED_POLICY_UNSPECIFIED || s.GetMissed() > messages.MissedPolicy_MISSED_POLICY_CATCH_UP:
		return fmt.Errorf("%w: missed policy %d is unknown (once, skip or catch_up)", ErrInvalid, s.GetMissed())
	case s.GetCatchUpMax() < 0 || s.GetCatchUpMax() > MaxCatchUp:
		return fmt.Errorf("%w: catch_up_max %d must be 0 to %d (e.g. 10)", ErrInvalid, s.GetCatchUpMax(), MaxCatchUp)
	}
	if _, err := parse(s); err != nil {
		return err
	}
	if s.GetMissed() == messages.MissedPolicy_MISSED_POLICY_UNSPECIFIED {
		s.Missed = messages.MissedPolicy_MISSED_POLICY_ONCE
	}
	if s.GetMissed() == messages.MissedPolicy_MISSED_POLICY_CATCH_UP && s.GetCatchUpMax() == 0 {
		s.CatchUpMax = DefaultCatchUp
	}
	return nil
}

func parse(s *messages.Schedule) (*cronexpr.Schedule, error) {
	var loc *time.Location
	if tz := s.GetTimeZone(); tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil || strings.EqualFold(tz, "local") {
			return nil, &cronexpr.Error{Field: "time zone", Value: tz, Reason: "is not an IANA time zone name such as Europe/Berlin or UTC"}
		}
		loc = l
	}
	c, err := cronexpr.Parse(s.GetSpec(), loc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return c, nil
}

// Schedules returns a copy of every schedule, sorted by name.
func (c *Core) Schedules() []*messages.Schedule {
	out := make([]*messages.Schedule, len(c.entries))
	for i, e := range c.entries {
		out[i] = proto.CloneOf(e.s)
	}
	return out
}

// Snapshot returns the state as a snapshot message.
func (c *Core) Snapshot() *messages.ScheduleSnapshot {
	return &messages.ScheduleSnapshot{Schedules: c.Schedules()}
}

// Reset restores the state from snap (nil: empty). In-flight submissions
// are forgotten: a recovered scheduler fires their ticks again.
func (c *Core) Reset(snap *messages.ScheduleSnapshot) error {
	c.entries, c.armed = nil, time.Time{}
	for _, s := range snap.GetSchedules() {
		if err := c.Apply(&messages.ScheduleSet{Schedule: s}); err != nil {
			return err
		}
	}
	return nil
}

func (c *Core) find(name string) (int, bool) {
	return slices.BinarySearchFunc(c.entries, name, func(e *entry, n string) int { return strings.Compare(e.s.GetName(), n) })
}

// Apply applies one journaled event (live or replayed).
func (c *Core) Apply(ev proto.Message) error {
	switch ev := ev.(type) {
	case *messages.ScheduleSet:
		s := proto.CloneOf(ev.GetSchedule())
		cron, err := parse(s)
		if err != nil {
			return fmt.Errorf("schedule %q: %w", s.GetName(), err)
		}
		i, ok := c.find(s.GetName())
		if ok {
			c.entries[i].s, c.entries[i].cron = s, cron
			return nil
		}
		c.entries = slices.Insert(c.entries, i, &entry{s: s, cron: cron})
	case *messages.ScheduleRemoved:
		if i, ok := c.find(ev.GetName()); ok {
			c.entries = slices.Delete(c.entries, i, i+1)
		}
	case *messages.SchedulePaused:
		if i, ok := c.find(ev.GetName()); ok {
			s := c.entries[i].s
			s.Paused = ev.GetPaused()
			if !ev.GetPaused() {
				s.FromUnixNano = ev.GetAtUnixNano()
			}
		}
	case *messages.ScheduleTickFired:
		if i, ok := c.find(ev.GetName()); ok {
			e := c.entries[i]
			if ev.GetTickUnix() > e.s.GetLastTickUnix() {
				e.s.LastTickUnix = ev.GetTickUnix()
				e.s.Fired++
				e.s.Skipped += ev.GetSkipped()
			}
		}
	case *messages.ScheduleRecovered:
	default:
		return fmt.Errorf("schedule: unknown event %T", ev)
	}
	return nil
}

// Request handles an API request at now: the reply, and the effects (an
// Append of the event that records the change, the timer). The caller
// sends the reply once the Append is durable.
func (c *Core) Request(now time.Time, req *messages.ScheduleRequest) (*messages.ScheduleReply, []effect.Effect) {
	var ev proto.Message
	switch req.GetOp() {
	case "list":
		return &messages.ScheduleReply{Schedules: c.infos(now, "")}, nil
	case "add":
		s := proto.CloneOf(req.GetSchedule())
		if s == nil {
			s = &messages.Schedule{}
		}
		if err := Validate(s); err != nil {
			return &messages.ScheduleReply{Code: CodeInvalid, Error: err.Error()}, nil
		}
		s.LastTickUnix, s.Fired, s.Skipped, s.FromUnixNano = 0, 0, 0, now.UnixNano()
		if i, ok := c.find(s.GetName()); ok {
			// A replacement keeps its history: ticks already fired are not
			// the new schedule's either.
			old := c.entries[i].s
			s.LastTickUnix, s.Fired, s.Skipped, s.FromUnixNano = old.GetLastTickUnix(), old.GetFired(), old.GetSkipped(), old.GetFromUnixNano()
		}
		ev = &messages.ScheduleSet{Schedule: s}
	case "remove", "pause", "resume":
		i, ok := c.find(req.GetName())
		if !ok {
			return &messages.ScheduleReply{Code: CodeNotFound, Error: fmt.Sprintf("no schedule named %q; list them with GET /schedules or foreman schedule list", req.GetName())}, nil
		}
		switch pause := req.GetOp() == "pause"; {
		case req.GetOp() == "remove":
			ev = &messages.ScheduleRemoved{Name: req.GetName()}
		case c.entries[i].s.GetPaused() == pause:
			return &messages.ScheduleReply{Schedules: c.infos(now, req.GetName())}, nil // already so: nothing to record
		default:
			ev = &messages.SchedulePaused{Name: req.GetName(), Paused: pause, AtUnixNano: now.UnixNano()}
		}
	default:
		return &messages.ScheduleReply{Code: CodeInvalid, Error: fmt.Sprintf("unknown operation %q (add, remove, pause, resume or list)", req.GetOp())}, nil
	}
	if err := c.Apply(ev); err != nil {
		return &messages.ScheduleReply{Code: CodeInvalid, Error: err.Error()}, nil
	}
	effs := []effect.Effect{effect.Append{Events: []proto.Message{ev}}}
	name := req.GetName()
	if req.GetOp() == "add" {
		name = req.GetSchedule().GetName()
	}
	var infos []*messages.ScheduleInfo
	if req.GetOp() != "remove" {
		infos = c.infos(now, name)
	}
	effs = append(effs, c.fire(now)...)
	return &messages.ScheduleReply{Schedules: infos}, effs
}

// infos lists the schedules (only name's, unless empty) with their next tick.
func (c *Core) infos(now time.Time, name string) []*messages.ScheduleInfo {
	out := []*messages.ScheduleInfo{}
	for _, e := range c.entries {
		if name != "" && e.s.GetName() != name {
			continue
		}
		info := &messages.ScheduleInfo{Schedule: proto.CloneOf(e.s)}
		if !e.s.GetPaused() {
			if tick, _ := e.plan(now, c.Planted); !tick.IsZero() {
				info.NextTickUnix = tick.Unix()
			}
		}
		out = append(out, info)
	}
	return out
}

// Step handles a timer, an ack or a failure at now.
func (c *Core) Step(now time.Time, in Input) []effect.Effect {
	var effs []effect.Effect
	switch in := in.(type) {
	case Recovered:
		c.armed = time.Time{}
		for _, e := range c.entries {
			e.inflight, e.retryAt = 0, time.Time{}
			if c.Planted == ForgetsFiredAtRecovery {
				e.s.LastTickUnix = 0
			}
		}
	case effect.Fired:
		if in.Name != TimerName {
			return nil
		}
		c.armed = time.Time{}
	case Acked:
		i, ok := c.find(in.Name)
		if !ok || c.entries[i].inflight != in.Tick {
			break // removed, or replaced meanwhile: the ack is stale
		}
		e := c.entries[i]
		e.inflight = 0
		ev := &messages.ScheduleTickFired{Name: in.Name, TickUnix: in.Tick, Skipped: e.between(in.Tick)}
		if err := c.Apply(ev); err == nil {
			effs = append(effs, effect.Append{Events: []proto.Message{ev}})
		}
	case Failed:
		i, ok := c.find(in.Name)
		if !ok || c.entries[i].inflight != in.Tick {
			break
		}
		e := c.entries[i]
		e.inflight, e.retryAt = 0, now.Add(RetryAfter)
		effs = append(effs, effect.Log{Level: slog.LevelWarn, Msg: "submitting a scheduled tick failed; retrying",
			Attrs: []any{"schedule", in.Name, "tick", in.Tick, "retry_in", RetryAfter, "error", in.Err}})
	}
	return append(effs, c.fire(now)...)
}

// fire submits every due tick (one per schedule at a time) and arms the
// timer for the earliest next one.
func (c *Core) fire(now time.Time) []effect.Effect {
	var effs []effect.Effect
	var wake time.Time
	for _, e := range c.entries {
		if e.s.GetPaused() || e.inflight != 0 {
			continue
		}
		if now.Before(e.retryAt) {
			wake = earliest(wake, e.retryAt)
			continue
		}
		at, due := e.plan(c.planNow(now), c.Planted)
		if !due {
			if !at.IsZero() && c.Planted == FiresEarly {
				at = at.Add(-plantedEarly)
			}
			wake = earliest(wake, at)
			continue
		}
		tick := at.Unix()
		e.inflight = tick
		id := WorkID(e.s.GetName(), tick)
		if c.Planted == IDFromFireTime {
			id = fmt.Sprintf("sched:%s:%d", e.s.GetName(), now.UnixMilli())
		}
		effs = append(effs, Submit{Name: e.s.GetName(), Tick: tick, Work: &messages.Work{
			// Once: a retried submission of the tick (or a re-fire)
			// that reaches the master after the tick's job died is
			// the same fire, not a new run (simulator seed 6000457).
			WorkId: id, JobType: e.s.GetJobType(), Payload: e.s.GetPayload(), Once: true,
		}})
	}
	switch {
	case wake.IsZero() && !c.armed.IsZero():
		c.armed = time.Time{}
		effs = append(effs, effect.StopTimer{Name: TimerName})
	case !wake.IsZero() && !wake.Equal(c.armed):
		c.armed = wake
		effs = append(effs, effect.Timer{Name: TimerName, At: wake})
	}
	return effs
}

// planNow is the instant fire plans at: now, or later with FiresEarly.
func (c *Core) planNow(now time.Time) time.Time {
	if c.Planted == FiresEarly {
		return now.Add(plantedEarly)
	}
	return now
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// from is the instant after which the schedule's ticks are still to come.
func (e *entry) from() time.Time {
	f := time.Unix(0, e.s.GetFromUnixNano())
	if last := time.Unix(e.s.GetLastTickUnix(), 0); e.s.GetLastTickUnix() != 0 && last.After(f) {
		f = last
	}
	return f
}

// plan decides the schedule's next tick at now: due reports it is to fire
// now (at is the tick); otherwise at is when to look again (zero: never).
//
// On-time ticks (found due at most MissedAfter late) always fire. Missed
// ones: ONCE fires the latest of them unless an on-time tick covers them,
// SKIP fires none, CATCH_UP fires the latest catch_up_max of them, oldest
// first. The ticks passed over are counted as skipped when the next one
// fires (between).
func (e *entry) plan(now time.Time, planted Bug) (at time.Time, due bool) {
	from := e.from()
	first := e.cron.Next(from)
	if first.IsZero() || first.After(now) {
		return first, false
	}
	cut := now.Add(-MissedAfter) // ticks at or before cut were missed
	if first.After(cut) {
		return first, true // the oldest due tick is on time: nothing missed
	}
	onTime := e.cron.Next(cut) // the first tick after cut
	hasOnTime := !onTime.IsZero() && !onTime.After(now)
	missed := e.s.GetMissed()
	if planted == SkipFiresMissed && missed == messages.MissedPolicy_MISSED_POLICY_SKIP {
		missed = messages.MissedPolicy_MISSED_POLICY_ONCE
	}
	switch missed {
	case messages.MissedPolicy_MISSED_POLICY_SKIP:
		if hasOnTime {
			return onTime, true
		}
		return onTime, false
	case messages.MissedPolicy_MISSED_POLICY_CATCH_UP:
		n := int(max(e.s.GetCatchUpMax(), 1))
		if last := e.lastTicks(from, cut, n); len(last) > 0 {
			return last[0], true
		}
		return first, true
	default: // ONCE
		if hasOnTime {
			return onTime, true
		}
		if last := e.lastTicks(from, cut, 1); len(last) > 0 {
			return last[0], true
		}
		return first, true
	}
}

// lastTicks returns the last n ticks in (from, upto], oldest first, looking
// back from upto in growing windows so that a long outage costs little.
func (e *entry) lastTicks(from, upto time.Time, n int) []time.Time {
	for w := time.Minute; ; w *= 8 {
		start := upto.Add(-w)
		whole := !start.After(from)
		if whole {
			start = from
		}
		var ring []time.Time
		for t := e.cron.Next(start); !t.IsZero() && !t.After(upto); t = e.cron.Next(t) {
			ring = append(ring, t)
			if len(ring) > n {
				ring = ring[1:]
			}
		}
		if len(ring) >= n || whole {
			return ring
		}
	}
}

// between counts the schedule's ticks strictly between from and tick: the
// ones passed over (capped at countCap).
func (e *entry) between(tick int64) int64 {
	from := e.from()
	if d := e.cron.Every(); d > 0 {
		step := int64(d / time.Second)
		lo := from.Unix()/step + 1 // first multiple after from
		hi := (tick - 1) / step    // last multiple before tick
		return max(hi-lo+1, 0)
	}
	var n int64
	for t := e.cron.Next(from); !t.IsZero() && t.Unix() < tick && n < countCap; t = e.cron.Next(t) {
		n++
	}
	return n
}
