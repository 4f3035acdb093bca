package core

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

// PermitCore is the pure core of a job type's throttler in a Foreman
// cluster (--rate): seed 002's FSM throttles permit requests. Each master
// shard's permit pool asks for permits; every permit it asks for is one
// message in the FSM's queue, kept with its sender; the FSM delivers them
// at the rate (the vouchers of each timer period, or the strict sliding
// window) to its target, which grants each to its original sender. The
// target is set once the activation serves (it holds the lease and has
// replayed the journal) and unset before, so requests that arrive earlier
// wait in the queue, as the seed's messages wait for SetTarget.
//
// What the bound needs survives the activation: every grant is an event
// (ThrottleGranted: when, how many, and the timer period's start and
// deliveries) that the shell makes durable before it sends the permits,
// and the rate is an event too (ThrottleRateSet). A successor replays them
// (Replay) and, at Serve, continues the predecessor's timer period (its
// vouchers left, its end) or its sliding window: no burst above the bound,
// and no pause of a whole period.
//
// S identifies a permit pool (the original sender); it must be comparable.
// A PermitCore reads no clock and starts no goroutine: every method takes
// now and returns what to do (PermitStep). It is not safe for concurrent
// use.
type PermitCore[S comparable] struct {
	jobType    string
	configured Rate // the --rate of this activation's node
	confStrict bool
	maxQueue   int
	slices     int // strict mode's slices a window (PermitSlices)

	// The state the journal records.
	rate      Rate
	strict    bool
	recorded  bool // a ThrottleRateSet was replayed
	recConf   Rate // the configured rate of the last ThrottleRateSet
	recConfSt bool
	period    time.Time   // timer mode: start of the last period that granted
	used      int         // timer mode: grants in that period
	recent    []grantMark // strict mode: grants of the last window (and validity), oldest first
	recentN   int         // the grants in recent
	total     uint64      // permits the stream ever granted: the last strict permit's Seq

	fsm *FSM[bool, permitUnit[S]]
	// Strict mode: the FSM's last time and when its one-shot timer is due
	// (FSM time, zero: none), so a late tick delivers at the time it was
	// due (see Tick).
	last, due time.Time
	shift     time.Duration // the step's FSM time is this much behind now+StrictLead
	serving   bool
	asked     map[S]int // permits each pool has waiting in the queue

	granted, refused uint64
	pending          int // grants of the step under way (see end)

	step PermitStep[S]
	idx  map[S]int // step.Grants index of a pool, during one step
}

// permitUnit is one permit asked for: the FSM's message.
type permitUnit[S comparable] struct{ from S }

// grantMark is n grants at one time.
type grantMark struct {
	at time.Time
	n  int
}

// PermitGrantTo is the permits granted to one pool in one step.
type PermitGrantTo[S comparable] struct {
	To      S
	Permits []Permit
}

// PermitStep is what one PermitCore step asks its shell to do, in this
// order: make Events durable, then send Grants (a grant leaves only once the
// events recording it are in the journal), send the pools of Refused a
// refusal, and apply Timer as FSM's Effects say (TimerFirst included).
// Its slices are reused by the next step.
type PermitStep[S comparable] struct {
	Events  []proto.Message
	Grants  []PermitGrantTo[S]
	Refused []S
	// Timer, TimerAfter and TimerFirst are the FSM's timer operation.
	Timer      TimerOp
	TimerAfter time.Duration
	TimerFirst time.Duration
}

// PermitStatus is a throttler's shape and counters.
type PermitStatus struct {
	JobType string
	Rate    Rate
	Strict  bool
	// Serving: the activation holds the lease and grants.
	Serving bool
	State   State
	// Queued is the number of permits waiting in the queue.
	Queued int
	// Granted counts the permits granted and Refused the permits refused
	// (queue full) since this activation started.
	Granted, Refused uint64
}

// DefaultPermitQueue bounds a PermitCore's queue; each pool has at most
// Calls permits waiting, so it is reached only by many pools.
const DefaultPermitQueue = 1 << 16

// StrictValidity is how long a strict-mode permit stays valid after its
// start: Per/20 (at least 1 ns). It does not enter the bound: the strict
// throttler anchors each permit on the real spend time of the permit Calls
// grants earlier (see Used), and takes an unreported permit as spent at the
// end of its validity. It bounds how late a master may spend (a master that
// looks later loses the permit, which its report then frees), and how long
// an unreported permit holds its place in the window.
func StrictValidity(r Rate) time.Duration { return max(time.Nanosecond, r.Per/20) }

// StrictSlices is how many slices a strict-mode window is granted in (see
// WithSlices): at 100/s, 10 permits every 100 ms. Each slice's permits start
// together, so a master spends them in one worker round trip, and each
// slice's place moves on by its own spends, window after window, so the
// pattern keeps. Without slices a backlog went out as one burst of Calls a
// window, and a failover, or any pause of the throttler, stopped dispatch
// for most of a window (the SIGKILL figure of issue 36: about 1.09 s at
// 100/s, against about 0.6 s with slices).
const StrictSlices = 10

// PermitCoreOption configures NewPermitCore.
type PermitCoreOption func(slices *int) error

// PermitSlices sets how many slices a strict-mode window is granted in
// (default StrictSlices; 0 or 1 grants a window's permits as one burst).
func PermitSlices(n int) PermitCoreOption {
	return func(slices *int) error {
		if n < 0 {
			return fmt.Errorf("%w: PermitSlices(%d), want 0 (no slices) or more", ErrInvalidOption, n)
		}
		*slices = n
		return nil
	}
}

// StrictLead is how far ahead of now a strict-mode permit starts: min(Per/4,
// 1 s), so that it reaches its pool (the journal's write, the trip) before
// it may be spent; the pool then tells the master when to hand out. The
// strict FSM runs on the permits' start times.
func StrictLead(r Rate) time.Duration { return min(r.Per/4, time.Second) }

// at is the time the FSM runs at: now, and in strict mode now+StrictLead,
// never earlier than a previous step's.
func (c *PermitCore[S]) at(now time.Time) time.Time {
	if !c.strict {
		return now
	}
	t := now.Add(StrictLead(c.rate))
	if t.Before(c.last) {
		t = c.last
	}
	c.last = t
	return t
}

// NewPermitCore returns the core of jobType's throttler, configured (the
// node's --rate) with rate and strict. It grants nothing before Serve.
func NewPermitCore[S comparable](jobType string, rate Rate, strict bool, opts ...PermitCoreOption) (*PermitCore[S], error) {
	if jobType == "" {
		return nil, fmt.Errorf("%w: a throttler needs a job type", ErrInvalidOption)
	}
	if err := rate.validateStrict(); err != nil {
		return nil, err
	}
	c := &PermitCore[S]{
		jobType: jobType, configured: rate, confStrict: strict, maxQueue: DefaultPermitQueue,
		rate: rate, strict: strict, asked: map[S]int{}, idx: map[S]int{}, slices: StrictSlices,
	}
	for _, o := range opts {
		if err := o(&c.slices); err != nil {
			return nil, err
		}
	}
	if err := c.rebuild(time.Time{}); err != nil {
		return nil, err
	}
	return c, nil
}

// JobType returns the limited job type.
func (c *PermitCore[S]) JobType() string { return c.jobType }

// Status returns the throttler's shape and counters.
func (c *PermitCore[S]) Status() PermitStatus {
	return PermitStatus{
		JobType: c.jobType, Rate: c.rate, Strict: c.strict, Serving: c.serving, State: c.fsm.State(),
		Queued: c.fsm.Len(), Granted: c.granted, Refused: c.refused,
	}
}

// fsmRate is the rate the FSM delivers at: the rate. (Kept as a function:
// the strict FSM's window is the rate's, over the permits' spend times.)
func fsmRate(r Rate, _ bool) Rate { return r }

// rebuild makes a new FSM for the current rate and mode, keeping the queue
// and feeding it the recorded grants that still count at now.
func (c *PermitCore[S]) rebuild(now time.Time) error {
	mode, slices := ModeTimer, 0
	if c.strict {
		mode, slices = ModeSlidingWindow, c.slices
	}
	f, err := NewFSM[bool, permitUnit[S]](fsmRate(c.rate, c.strict), WithMode(mode), WithSlices(slices), WithMaxQueue(c.maxQueue))
	if err != nil {
		return err
	}
	if old := c.fsm; old != nil {
		for old.queue.len() > 0 {
			f.queue.push(old.queue.pop())
		}
	}
	c.fsm = f
	if c.strict {
		// Every recorded grant is taken as spent at the end of its
		// validity (reports are not journaled): a successor's first
		// window starts at most StrictValidity later than it might.
		// The FSM's window holds each permit at the latest instant it
		// may be spent (see Used) until its pool reports the spend.
		f.limiter.hold = StrictValidity(c.rate)
		var ts []time.Time
		for _, g := range c.recent {
			for range g.n {
				ts = append(ts, g.at)
			}
		}
		f.restoreGrants(ts, c.total)
		return nil
	}
	if !c.period.IsZero() {
		f.resume(c.period, c.used)
	}
	return nil
}

// Replay applies one event of the throttler's stream (recovery).
func (c *PermitCore[S]) Replay(ev proto.Message) error {
	switch e := ev.(type) {
	case *messages.ThrottleRateSet:
		r := Rate{Calls: int(e.GetCalls()), Per: time.Duration(e.GetPerNanos())}
		if err := r.validateStrict(); err != nil {
			return fmt.Errorf("throttler %s: a recorded rate: %w", c.jobType, err)
		}
		c.rate, c.strict, c.recorded = r, e.GetStrict(), true
		c.recConf = Rate{Calls: int(e.GetConfiguredCalls()), Per: time.Duration(e.GetConfiguredPerNanos())}
		c.recConfSt = e.GetConfiguredStrict()
	case *messages.ThrottleGranted:
		c.total += uint64(e.GetN())
		c.noteGrant(time.Unix(0, e.GetAtUnixNano()), int(e.GetN()), time.Unix(0, e.GetPeriodUnixNano()), int(e.GetPeriodUsed()))
	case *messages.ThrottleSnapshot:
		if rs := e.GetRate(); rs != nil {
			if err := c.Replay(rs); err != nil {
				return err
			}
		}
		for _, g := range e.GetRecent() {
			if err := c.Replay(g); err != nil {
				return err
			}
		}
		if t := e.GetGrantedTotal(); t != 0 {
			c.total = t
		}
	default:
		return fmt.Errorf("throttler %s: unknown event %T in the journal", c.jobType, ev)
	}
	return nil
}

// noteGrant records grants in the state the journal holds.
func (c *PermitCore[S]) noteGrant(at time.Time, n int, period time.Time, used int) {
	if c.strict {
		// Keep what a window ending now can hold: the grants of the FSM's
		// last window, and no more of them than its Calls needs.
		c.recent = append(c.recent, grantMark{at: at, n: n})
		c.recentN += n
		keep := c.rate.Per + StrictValidity(c.rate)
		i := 0
		for i < len(c.recent)-1 && (at.Sub(c.recent[i].at) >= keep || c.recentN-c.recent[i].n >= c.rate.Calls) {
			c.recentN -= c.recent[i].n
			i++
		}
		c.recent = c.recent[i:]
		return
	}
	c.period, c.used = period, used
}

// Snapshot returns the recorded state as one message.
func (c *PermitCore[S]) Snapshot() *messages.ThrottleSnapshot {
	s := &messages.ThrottleSnapshot{Rate: c.rateEvent(), GrantedTotal: c.total}
	if c.strict {
		for _, g := range c.recent {
			s.Recent = append(s.Recent, &messages.ThrottleGranted{AtUnixNano: g.at.UnixNano(), N: int64(g.n)})
		}
	} else if !c.period.IsZero() {
		s.Recent = append(s.Recent, &messages.ThrottleGranted{
			AtUnixNano: c.period.UnixNano(), PeriodUnixNano: c.period.UnixNano(), PeriodUsed: int64(c.used),
		})
	}
	return s
}

// Reset forgets the recorded state (a recovery starts over).
func (c *PermitCore[S]) Reset() {
	c.rate, c.strict, c.recorded = c.configured, c.confStrict, false
	c.recConf, c.recConfSt = Rate{}, false
	c.period, c.used, c.recent, c.recentN, c.total = time.Time{}, 0, nil, 0, 0
	c.last, c.due = time.Time{}, time.Time{}
	c.serving = false
}

func (c *PermitCore[S]) rateEvent() *messages.ThrottleRateSet {
	return &messages.ThrottleRateSet{
		Calls: int64(c.rate.Calls), PerNanos: int64(c.rate.Per), Strict: c.strict,
		ConfiguredCalls: int64(c.configured.Calls), ConfiguredPerNanos: int64(c.configured.Per), ConfiguredStrict: c.confStrict,
	}
}

func (c *PermitCore[S]) begin() {
	c.step.Events = c.step.Events[:0]
	c.step.Grants = c.step.Grants[:0]
	c.step.Refused = c.step.Refused[:0]
	c.step.Timer, c.step.TimerAfter, c.step.TimerFirst = TimerNone, 0, 0
	c.shift = 0
	clear(c.idx)
}

// Serve is the activation taking over (it holds the lease and replayed the
// journal): the recorded rate holds unless this node's configured rate is
// not the one recorded (the cluster's --rate was changed), the recorded
// grants count against the bound, and the FSM gets its target, delivering
// what waits.
func (c *PermitCore[S]) Serve(now time.Time) PermitStep[S] {
	c.begin()
	if !c.recorded || c.recConf != c.configured || c.recConfSt != c.confStrict {
		c.rate, c.strict, c.recorded = c.configured, c.confStrict, true
		c.recConf, c.recConfSt = c.configured, c.confStrict
		c.step.Events = append(c.step.Events, c.rateEvent())
	}
	now = c.at(now)
	_ = c.rebuild(now) // the rate was validated when it was recorded or configured
	c.serving = true
	c.take(now, c.fsm.SetTarget(true, now))
	return c.end(now)
}

// Request is a pool asking for want permits: the pool's permits waiting in
// the queue are topped up to min(want, Calls), so a pool that asks again
// (its ask timed out, or the throttler moved) does not queue twice.
func (c *PermitCore[S]) Request(now time.Time, from S, want int) PermitStep[S] {
	c.begin()
	now = c.at(now)
	want = min(want, c.rate.Calls)
	for add := want - c.asked[from]; add > 0; add-- {
		c.asked[from]++
		c.take(now, c.fsm.Enqueue(permitUnit[S]{from: from}, now))
	}
	return c.end(now)
}

// Tick is the FSM's timer firing. In strict mode a tick that fires late
// delivers at the FSM time it was due, not at now+StrictLead: the permits
// start StrictLead ahead, so the due time still lies ahead of now, and a
// timer's lateness (a millisecond or more on a loaded machine) would
// otherwise be added to the places of the permits it delivers, window after
// window.
func (c *PermitCore[S]) Tick(now time.Time) PermitStep[S] {
	c.begin()
	late := now
	if c.strict && !c.due.IsZero() && c.due.Before(now.Add(StrictLead(c.rate))) && c.due.After(now) {
		now = c.due.Add(-StrictLead(c.rate))
	}
	now = c.at(now)
	if c.strict {
		c.shift = max(0, late.Add(StrictLead(c.rate)).Sub(now))
	}
	c.interleave()
	c.take(now, c.fsm.Tick(now))
	if !c.strict {
		c.forgetRest()
	}
	return c.end(now)
}

// interleave orders the queue one permit per pool in turn (pools in the
// order of their oldest permit), so that a timer period's vouchers, or a
// strict slice, are shared among the pools that ask rather than going to
// the oldest ask whole: shards with equal work then finish it together, the
// last period is not spent on one shard's last few works while the others
// wait, and a pool whose master ran out of work wastes its share of a slice,
// not the whole slice (its expiry report then drops the rest of its ask).
func (c *PermitCore[S]) interleave() {
	q := &c.fsm.queue
	if q.len() < 2 {
		return
	}
	var lanes [][]permitUnit[S]
	lane := map[S]int{}
	for q.len() > 0 {
		u := q.pop()
		k, ok := lane[u.from]
		if !ok {
			k = len(lanes)
			lane[u.from] = k
			lanes = append(lanes, nil)
		}
		lanes[k] = append(lanes[k], u)
	}
	for i := 0; ; i++ {
		pushed := false
		for _, l := range lanes {
			if i < len(l) {
				q.push(l[i])
				pushed = true
			}
		}
		if !pushed {
			return
		}
	}
}

// forgetRest drops what the pools granted in this timer-mode tick still
// have waiting: a tick's grant answers a pool's ask. A pool asks again
// while its master has work (when it runs low, and every ask timeout while
// dry), but a pool whose master ran out of work asks no more, and the rest
// of its ask would take a share of every following period's vouchers for
// permits that expire unspent, while the shards that still have work wait
// (at the end of a backlog, 2-3 extra periods; issue 36).
func (c *PermitCore[S]) forgetRest() {
	var rest int
	for _, g := range c.step.Grants {
		rest += c.asked[g.To]
	}
	if rest == 0 {
		return
	}
	c.fsm.queue.removeIf(func(u permitUnit[S]) bool {
		_, ok := c.idx[u.from]
		return ok
	})
	for _, g := range c.step.Grants {
		delete(c.asked, g.To)
	}
}

// SetRate changes the rate and mode from now on; the change is an event, so
// it outlives the activation. In timer mode the current period keeps its
// grants (see FSM.SetRate); switching modes carries the recorded grants
// over. An invalid rate is refused and nothing changes.
func (c *PermitCore[S]) SetRate(now time.Time, r Rate, strict bool) (PermitStep[S], error) {
	c.begin()
	if err := r.validateStrict(); err != nil {
		return c.step, err
	}
	c.step.Events = append(c.step.Events, nil) // the rate event, filled below
	if strict != c.strict {
		c.rate, c.strict = r, strict
		c.period, c.used, c.recent, c.recentN = time.Time{}, 0, nil, 0
		c.step.Events[0] = c.rateEvent()
		now = c.at(now)
		if err := c.rebuild(now); err != nil {
			return c.step, err
		}
		c.step.Timer = TimerStop
		if c.serving {
			c.take(now, c.fsm.SetTarget(true, now))
		}
		return c.end(now), nil
	}
	c.rate = r
	c.step.Events[0] = c.rateEvent()
	now = c.at(now)
	if c.strict {
		c.fsm.limiter.hold = StrictValidity(r) // permits granted from now on
	}
	eff, err := c.fsm.SetRate(fsmRate(r, strict), now)
	if err != nil {
		return c.step, err
	}
	c.take(now, eff)
	return c.end(now), nil
}

// take turns an FSM step's effects into the core's: deliveries become
// permits for their senders (and one event), rejections refusals.
func (c *PermitCore[S]) take(now time.Time, eff Effects[bool, permitUnit[S]]) {
	if eff.Timer != TimerNone {
		c.step.Timer, c.step.TimerAfter, c.step.TimerFirst = eff.Timer, eff.TimerAfter, eff.TimerFirst
		c.due = time.Time{}
		if eff.Timer == TimerStartOnce {
			// The shell arms the timer from its clock's now, which a late
			// tick's FSM time is behind by shift.
			c.due = now.Add(eff.TimerAfter)
			c.step.TimerAfter = max(0, eff.TimerAfter-c.shift)
		}
	}
	for _, u := range eff.Rejected {
		c.asked[u.from]--
		c.refused++
		c.step.Refused = append(c.step.Refused, u.from)
	}
	if len(eff.Deliver) == 0 {
		return
	}
	p := Permit{NotBefore: now, NotAfter: now.Add(StrictValidity(c.rate))}
	if !c.strict {
		p.NotAfter = c.fsm.periodEnd().Add(-1)
	}
	for _, u := range eff.Deliver {
		c.total++
		if c.strict {
			p.Seq = c.total
		}
		if c.asked[u.from]--; c.asked[u.from] <= 0 {
			delete(c.asked, u.from)
		}
		k, ok := c.idx[u.from]
		if !ok {
			k = len(c.step.Grants)
			c.idx[u.from] = k
			if k < cap(c.step.Grants) {
				c.step.Grants = c.step.Grants[:k+1]
				c.step.Grants[k].To, c.step.Grants[k].Permits = u.from, c.step.Grants[k].Permits[:0]
			} else {
				c.step.Grants = append(c.step.Grants, PermitGrantTo[S]{To: u.from})
			}
		}
		c.step.Grants[k].Permits = append(c.step.Grants[k].Permits, p)
	}
	c.pending += len(eff.Deliver)
	c.granted += uint64(len(eff.Deliver))
}

// end closes a step: the grants of the step, all made at now, are one
// event.
func (c *PermitCore[S]) end(now time.Time) PermitStep[S] {
	if n := c.pending; n > 0 {
		c.pending = 0
		period, used := c.fsm.periodUsed()
		ev := &messages.ThrottleGranted{AtUnixNano: now.UnixNano(), N: int64(n)}
		if !c.strict {
			ev.PeriodUnixNano, ev.PeriodUsed = period.UnixNano(), int64(used)
		}
		c.noteGrant(now, n, period, used)
		c.step.Events = append(c.step.Events, ev)
	}
	return c.step
}

// Waiting returns the pools that have permits waiting in the queue, in the
// order of their oldest: a throttler that stops tells them to ask again,
// since their asks end with it.
func (c *PermitCore[S]) Waiting() []S {
	q := &c.fsm.queue
	var out []S
	seen := map[S]bool{}
	for range q.len() {
		u := q.pop()
		q.push(u) // a full turn leaves the queue as it was
		if !seen[u.from] {
			seen[u.from] = true
			out = append(out, u.from)
		}
	}
	return out
}

// Pause is the activation no longer serving (its lease lapsed): the FSM
// loses its target, so it grants nothing, and what waits stays queued.
func (c *PermitCore[S]) Pause(now time.Time) PermitStep[S] {
	c.begin()
	now = c.at(now)
	c.serving = false
	c.take(now, c.fsm.SetTarget(false, now))
	return c.end(now)
}

// Used is pools reporting what became of strict permits: each spent at
// its Spent time, or expired unspent (zero Spent). The FSM's window holds
// each permit at the latest instant it may be spent until then; a report
// moves it to the real spend time (or out of the window), and the FSM
// delivers what that frees. So permit k starts no earlier than Per after
// the latest spend among permits 1..k-Calls (the Limiter's floor and its
// oldest entry), and any Calls+1 spends span at least Per, while a master
// that spends a few ms after a permit's start loses only those ms of the
// window, not the permit's whole validity. Reports for permits no longer in
// the window, or in timer mode, change nothing.
func (c *PermitCore[S]) Used(now time.Time, from S, uses []PermitUse) PermitStep[S] {
	c.begin()
	if !c.strict || c.fsm.limiter == nil {
		return c.end(now)
	}
	changed, expired := false, false
	for _, u := range uses {
		if c.fsm.limiter.amend(u.Seq, u.Spent) {
			changed = true
		}
		expired = expired || u.Spent.IsZero()
	}
	if expired && c.asked[from] > 0 {
		// The pool let a permit expire: it has more asked for than its
		// master spends (at the end of its backlog, all of them), and the
		// permits it has waiting would go to waste while other pools wait.
		// It asks again when it runs dry.
		c.fsm.queue.removeIf(func(u permitUnit[S]) bool { return u.from == from })
		delete(c.asked, from)
	}
	now = c.at(now)
	if changed && c.serving && c.fsm.Len() > 0 {
		c.interleave()
		c.take(now, c.fsm.Tick(now))
	}
	return c.end(now)
}
