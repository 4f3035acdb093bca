package sim

import (
	"time"

	"google.golang.org/protobuf/proto"

	schedcore "github.com/foreman-actors/foreman/actors/schedule/core"
	"github.com/foreman-actors/foreman/actors/schedule/cronexpr"
	"github.com/foreman-actors/foreman/messages"
)

// The invariants of periodic schedules (issue 37 item 2), judged on runs
// with Config.Schedules (schedule.go hosts the scheduler): each tick's job
// runs at most once, the ticks due are fired as the schedule's missed-tick
// policy says, and none is fired before its time.

// tickKey is one tick of one schedule.
type tickKey struct {
	name string
	tick int64 // Unix seconds
}

// tickSub is one submission of a tick's job by a scheduler activation, at
// now on its node's clock.
type tickSub struct {
	key    tickKey
	id     string
	now    time.Time
	holder string
}

// schedWorld is what the history knows of the schedules: the ticks
// submitted and accepted, and the schedules' durable records.
type schedWorld struct {
	w     *world
	specs map[string]*schedRun // by name; looked up, never iterated
	// tickOf maps a submitted work id to its tick; accepted maps a tick to
	// the first of its work ids whose acceptance is durable at a master.
	tickOf   map[string]tickKey
	accepted map[tickKey]string
	// acceptedTicks is, per schedule, the ticks with an accepted job.
	acceptedTicks map[string][]int64
	// stints are the scheduler activations' stretches of service, from
	// their Serve to when they halt, stop or recover again.
	stints []stint
}

// stint is one activation's stretch of service, in true time (to < 0:
// still serving).
type stint struct {
	act      *schedAct
	from, to time.Duration
}

func (sw *schedWorld) stintStarts(act *schedAct) {
	sw.stintEnds(act)
	sw.stints = append(sw.stints, stint{act: act, from: sw.w.e.now, to: -1})
}

func (sw *schedWorld) stintEnds(act *schedAct) {
	for k := range sw.stints {
		if s := &sw.stints[k]; s.act == act && s.to < 0 {
			s.to = sw.w.e.now
		}
	}
}

// schedRun is one schedule of the workload and its durable records in
// the journal stream "schedules".
type schedRun struct {
	sp      schedSpec
	cron    *cronexpr.Schedule
	from    int64 // the durable ScheduleSet's FromUnixNano; 0: not created
	resumed int64 // the durable resume's instant; 0: none
	paused  bool
	removed bool
	// fired is the greatest tick of a durable ScheduleTickFired.
	fired int64
}

func newSchedWorld(w *world) *schedWorld {
	sw := &schedWorld{w: w, specs: map[string]*schedRun{}, tickOf: map[string]tickKey{},
		accepted: map[tickKey]string{}, acceptedTicks: map[string][]int64{}}
	for _, sp := range schedWorkload {
		c, err := cronexpr.Parse(sp.spec, nil)
		if err != nil {
			panic(err) // the workload's own specs
		}
		sw.specs[sp.name] = &schedRun{sp: sp, cron: c}
	}
	prev := w.jr.onDurable
	w.jr.onDurable = func(s *stream, seq int64, ev jevent) {
		prev(s, seq, ev)
		sw.durable(s, ev.msg)
	}
	return sw
}

// submitted records a scheduler activation's Submit and checks it.
func (sw *schedWorld) submitted(act *schedAct, e schedcore.Submit) {
	h := sw.w.hist
	sub := tickSub{key: tickKey{e.Name, e.Tick}, id: e.Work.GetWorkId(), now: act.a.now(), holder: act.holder}
	sw.tickOf[sub.id] = sub.key
	if sw.w.e.tracing() {
		sw.w.e.tracef(act.a.node.name, "%s submits tick %s:%d as %s", act.holder, e.Name, e.Tick, sub.id)
	}
	for _, inv := range h.inv {
		if c, ok := inv.(tickSubmitChecker); ok {
			c.tickSubmit(h, sw, sub)
		}
	}
}

// durable records a durable journal event: a tick's job accepted by a
// master, or a record of the scheduler's.
func (sw *schedWorld) durable(s *stream, ev proto.Message) {
	var works []*messages.Work
	switch m := ev.(type) {
	case *messages.WorkAccepted:
		works = append(works, m.GetWork())
	case *messages.WorksAccepted:
		works = m.GetWorks()
	case *messages.ScheduleSet:
		if r := sw.specs[m.GetSchedule().GetName()]; r != nil && r.from == 0 {
			r.from = m.GetSchedule().GetFromUnixNano()
		}
	case *messages.SchedulePaused:
		if r := sw.specs[m.GetName()]; r != nil {
			r.paused = m.GetPaused()
			if !m.GetPaused() {
				r.resumed = m.GetAtUnixNano()
			}
		}
	case *messages.ScheduleRemoved:
		if r := sw.specs[m.GetName()]; r != nil {
			r.removed = true
		}
	case *messages.ScheduleTickFired:
		if r := sw.specs[m.GetName()]; r != nil && s.name == schedStream {
			r.fired = max(r.fired, m.GetTickUnix())
		}
	}
	h := sw.w.hist
	for _, wk := range works {
		k, ok := sw.tickOf[wk.GetWorkId()]
		if !ok {
			continue
		}
		for _, inv := range h.inv {
			if c, ok := inv.(tickAcceptChecker); ok {
				c.tickAccepted(h, sw, k, wk.GetWorkId())
			}
		}
		if _, ok := sw.accepted[k]; !ok {
			sw.accepted[k] = wk.GetWorkId()
			sw.acceptedTicks[k.name] = append(sw.acceptedTicks[k.name], k.tick)
		}
	}
}

// The checker interfaces of the schedule invariants.
type (
	// tickSubmitChecker sees each Submit of a tick's job by a scheduler.
	tickSubmitChecker interface {
		tickSubmit(h *history, sw *schedWorld, sub tickSub)
	}
	// tickAcceptChecker sees each durable acceptance of a tick's job,
	// before the schedule world records it.
	tickAcceptChecker interface {
		tickAccepted(h *history, sw *schedWorld, k tickKey, id string)
	}
)

// TickAtMostOnce checks that no tick of a schedule produces two jobs that
// both run, across failovers and restarts: the masters durably accept at
// most one work id per (schedule, tick), and that id only once as new,
// even after it died (a tick is submitted with Work.once, which the master
// does not run again; seed 6000457);
// and a scheduler never submits a tick again once a ScheduleTickFired of
// it (or of a later tick) is durable (a re-fire is for the window between
// the master's ack and that record only, and is then a duplicate).
type TickAtMostOnce struct{}

// Name identifies the invariant.
func (TickAtMostOnce) Name() string { return "tick_at_most_once" }

func (i TickAtMostOnce) tickAccepted(h *history, sw *schedWorld, k tickKey, id string) {
	if other, ok := sw.accepted[k]; ok && other != id {
		h.violate(i, id, schedStream, "tick %s:%d accepted as %s, though %s was accepted for it before: two jobs of one tick", k.name, k.tick, id, other)
		return
	}
	j := h.job(id)
	if j.accepts < 2 {
		return
	}
	h.violate(i, id, schedStream, "tick %s:%d's job accepted as new %d times", k.name, k.tick, j.accepts)
}

func (i TickAtMostOnce) tickSubmit(h *history, sw *schedWorld, sub tickSub) {
	if r := sw.specs[sub.key.name]; r != nil && r.fired >= sub.key.tick {
		h.violate(i, sub.id, schedStream, "%s submitted tick %s:%d again after tick %d was durably recorded fired",
			sub.holder, sub.key.name, sub.key.tick, r.fired)
	}
}

// TickNeverEarly checks that no tick's job is submitted before the tick's
// time on the clock of the scheduler that submits it.
type TickNeverEarly struct{}

// Name identifies the invariant.
func (TickNeverEarly) Name() string { return "tick_never_early" }

func (i TickNeverEarly) tickSubmit(h *history, _ *schedWorld, sub tickSub) {
	if t := time.Unix(sub.key.tick, 0); sub.now.Before(t) {
		h.violate(i, sub.id, schedStream, "%s submitted tick %s:%d %v before its time on its clock", sub.holder, sub.key.name, sub.key.tick, t.Sub(sub.now))
	}
}

// Settle times of TickFired's end check: a tick is required once the
// cluster has healed for tickSettle, and when it fell due at least
// tickSettleEnd before the admin paused the schedules for the end.
const (
	tickSettle    = 1500 * time.Millisecond
	tickSettleEnd = 500 * time.Millisecond
)

// TickFired checks that the ticks due are fired, as each schedule's
// missed-tick policy says. At each submission of tick T at instant now (on
// the scheduler's clock; a tick found more than MissedAfter late was
// missed): skip fires no missed tick (now - T < MissedAfter); once fires
// the latest tick due (no later tick is due at now); catch_up(n) fires a
// tick among the latest n missed (fewer than n ticks in (T, now -
// MissedAfter]), and it skips ticks only when the bound forces it (when
// ticks lie between T and the last accepted tick before it, or the
// schedule's creation, exactly n-1 missed ticks follow T). At the end, one
// activation must have served from tickSettle after the faults stopped to
// the end, and every tick of every schedule not removed that fell due on
// its clock from then to tickSettleEnd before the admin paused the
// schedules for the end has a job durably accepted by a master.
type TickFired struct{}

// Name identifies the invariant.
func (TickFired) Name() string { return "tick_fired" }

func (i TickFired) tickSubmit(h *history, sw *schedWorld, sub tickSub) {
	r := sw.specs[sub.key.name]
	if r == nil {
		return
	}
	t := time.Unix(sub.key.tick, 0)
	cut := sub.now.Add(-schedcore.MissedAfter)
	switch r.sp.missed {
	case messages.MissedPolicy_MISSED_POLICY_SKIP:
		if !t.After(cut) {
			h.violate(i, sub.id, schedStream, "%s fired the missed tick %s:%d (%v late) under skip", sub.holder, r.sp.name, sub.key.tick, sub.now.Sub(t))
		}
	case messages.MissedPolicy_MISSED_POLICY_ONCE:
		if next := r.cron.Next(t); !next.IsZero() && !next.After(sub.now) {
			h.violate(i, sub.id, schedStream, "%s fired tick %s:%d under once though the later tick %d was due", sub.holder, r.sp.name, sub.key.tick, next.Unix())
		}
	case messages.MissedPolicy_MISSED_POLICY_CATCH_UP:
		n := int(r.sp.catchUp)
		after := 0
		for x := r.cron.Next(t); !x.IsZero() && !x.After(cut) && after < n+1; x = r.cron.Next(x) {
			after++
		}
		if after >= n {
			h.violate(i, sub.id, schedStream, "%s fired tick %s:%d under catch_up %d with %d missed ticks after it", sub.holder, r.sp.name, sub.key.tick, n, after)
			return
		}
		if r.sp.pauseAt > 0 || r.from == 0 {
			return // a resume starts afresh without catching up
		}
		last := time.Unix(0, r.from)
		for _, a := range sw.acceptedTicks[r.sp.name] {
			if at := time.Unix(a, 0); a < sub.key.tick && at.After(last) {
				last = at
			}
		}
		if gap := r.cron.Next(last); gap.Before(t) && after != n-1 {
			h.violate(i, sub.id, schedStream, "%s fired tick %s:%d under catch_up %d, passing over tick %d (after the last accepted %d) with only %d missed ticks after it",
				sub.holder, r.sp.name, sub.key.tick, n, gap.Unix(), last.Unix(), after)
		}
	}
}

func (i TickFired) end(h *history) {
	sw := h.w.sched
	if sw == nil {
		return
	}
	healed := h.w.cfg.Duration + tickSettle
	var steady *stint
	for k := range sw.stints {
		if s := &sw.stints[k]; s.to < 0 && s.from <= healed && s.act.live() && !s.act.halted {
			steady = s
		}
	}
	if steady == nil {
		h.violate(i, "", schedStream, "no scheduler activation served steadily from %v after the faults stopped to the end", tickSettle)
		return
	}
	n := steady.act.a.node
	lo, hi := n.local(healed), n.local(h.w.cfg.Duration+h.w.cfg.Heal-tickAckSettle-tickSettleEnd)
	for _, sp := range schedWorkload {
		r := sw.specs[sp.name]
		switch {
		case sp.removeAt > 0:
			continue
		case r.from == 0:
			h.violate(i, "", schedStream, "schedule %s was never durably created", sp.name)
			return
		case sp.pauseAt > 0 && r.resumed == 0:
			h.violate(i, "", schedStream, "schedule %s was never durably resumed", sp.name)
			return
		}
		from := lo
		for _, t := range []time.Time{time.Unix(0, r.from), time.Unix(0, r.resumed).Add(schedcore.MissedAfter)} {
			if t.After(from) {
				from = t
			}
		}
		for t := r.cron.Next(from.Add(-time.Nanosecond)); !t.IsZero() && !t.After(hi); t = r.cron.Next(t) {
			if _, ok := sw.accepted[tickKey{sp.name, t.Unix()}]; !ok {
				h.violate(i, "", schedStream, "tick %s:%d, due after the cluster healed, has no accepted job by the end", sp.name, t.Unix())
				return
			}
		}
	}
}
