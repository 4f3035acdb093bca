package core

import (
	"fmt"
	"time"
)

// Limiter is the strict rate limit as a plain value, usable without an
// actor: the throttler's strict modes use it, and so can any code that hands
// out work (for example a master limiting hand-outs per job type).
//
// A Limiter guarantees that the times it grants, taken together, never put
// more than Rate.Calls grants in any half-open window [s, s+Per), wherever s
// lies. In ModeTokenBucket it also paces grants: at most Burst at once, then
// one per Rate.Interval.
//
// A Limiter reads no clock: callers pass now. A now earlier than the last
// grant is treated as the time of the last grant, so a clock that steps back
// cannot break the guarantee. A Limiter is not safe for concurrent use; keep
// it inside one actor (or guard it).
type Limiter struct {
	rate  Rate
	mode  Mode
	burst int
	// log is a ring of the times of the most recent grants, at most
	// rate.Calls of them; head is the oldest once the ring is full.
	log  []time.Time
	head int
	// tat is the token bucket's theoretical arrival time (GCRA): a grant
	// conforms when now >= tat - tolerance.
	tat       time.Time
	interval  time.Duration // rate.Interval(), cached
	tolerance time.Duration // (Burst()-1) * interval, cached
	last      time.Time     // time of the latest grant
	// seq counts the grants recorded (the newest entry's number), and
	// floor is the latest time of an entry that left the ring: the
	// sliding window counts from max(oldest entry, floor), so an entry
	// amended to an earlier time (amend) cannot let a grant in before an
	// older entry's window ended. Without amends floor never exceeds the
	// oldest entry.
	seq   uint64
	floor time.Time
	// hold is added to each grant's time as it is recorded: the strict
	// permit throttler records a permit at the latest instant it may be
	// spent (its start plus its validity) until its pool reports.
	hold time.Duration
	// slices paces ModeSlidingWindow (WithSlices): besides Calls per Per,
	// at most sliceCalls grants in any window of slicePer =
	// Per*sliceCalls/Calls, counted over the grants' own times (sliceLog,
	// a ring of the last sliceCalls of them; hold does not apply), so a
	// backlog goes out a slice at a time rather than in one burst a window.
	slices     int
	sliceCalls int
	slicePer   time.Duration
	sliceLog   []time.Time
	sliceHead  int
}

// NewLimiter returns a strict limiter for rate. Options: WithMode
// (ModeSlidingWindow, the default, or ModeTokenBucket) and WithBurst; other
// options are ignored. ModeTimer is refused: the timer mode needs a timer and
// lives in the throttler actor.
func NewLimiter(rate Rate, opts ...Option) (*Limiter, error) {
	base := defaultConfig()
	base.mode = ModeSlidingWindow
	cfg, err := newConfig(base, opts)
	if err != nil {
		return nil, err
	}
	if !cfg.mode.strict() {
		return nil, fmt.Errorf("%w: NewLimiter needs ModeSlidingWindow or ModeTokenBucket, got %s", ErrInvalidOption, cfg.mode)
	}
	l := &Limiter{mode: cfg.mode, burst: cfg.burst, slices: cfg.slices}
	if err := l.SetRate(rate); err != nil {
		return nil, err
	}
	return l, nil
}

// Rate returns the limiter's current rate.
func (l *Limiter) Rate() Rate { return l.rate }

// Mode returns the limiter's mode.
func (l *Limiter) Mode() Mode { return l.mode }

// Burst returns how many grants ModeTokenBucket may make at once (capped at
// Rate.Calls); 0 for ModeSlidingWindow.
func (l *Limiter) Burst() int {
	if l.mode != ModeTokenBucket {
		return 0
	}
	return min(l.burst, l.rate.Calls)
}

// SetRate changes the rate at once. The times of past grants are kept, so a
// window that starts at or after the change holds at most the new Calls, and
// a window that straddles the change holds at most the larger of the old and
// the new Calls. An invalid rate is refused and the old one kept.
func (l *Limiter) SetRate(rate Rate) error {
	if err := rate.validateStrict(); err != nil {
		return err
	}
	if rate.Calls != l.rate.Calls {
		// Keep the newest min(len, Calls) grant times, oldest first.
		kept := l.ordered()
		if len(kept) > rate.Calls {
			for _, t := range kept[:len(kept)-rate.Calls] {
				if t.After(l.floor) {
					l.floor = t
				}
			}
			kept = kept[len(kept)-rate.Calls:]
		}
		l.log = append(make([]time.Time, 0, min(rate.Calls, max(len(kept), 16))), kept...)
		l.head = 0
	}
	if l.mode == ModeTokenBucket && l.tat.After(l.last) {
		// Re-express the bucket's debt (tokens owed after the last grant)
		// in the new interval.
		oldIv := l.rate.Interval()
		owed := (l.tat.Sub(l.last) + oldIv - 1) / oldIv
		l.tat = l.last.Add(owed * rate.Interval())
	}
	l.rate = rate
	l.interval = rate.Interval()
	l.tolerance = time.Duration(l.Burst()-1) * l.interval
	l.setSlices()
	return nil
}

// setSlices derives the slice window from the rate (see slices): a slice of
// ceil(Calls/slices) grants per the matching share of Per, or none when a
// slice would be the whole window. The newest grant times that fit the new
// slice are kept.
func (l *Limiter) setSlices() {
	n := 0
	if l.slices > 1 && l.mode == ModeSlidingWindow {
		n = (l.rate.Calls + l.slices - 1) / l.slices
		if n >= l.rate.Calls {
			n = 0
		}
	}
	kept := append(l.sliceLog[l.sliceHead:len(l.sliceLog):len(l.sliceLog)], l.sliceLog[:l.sliceHead]...)
	if len(kept) > n {
		kept = kept[len(kept)-n:]
	}
	l.sliceCalls, l.sliceLog, l.sliceHead = n, kept, 0
	l.slicePer = 0
	if n > 0 {
		l.slicePer = time.Duration(int64(l.rate.Per) * int64(n) / int64(l.rate.Calls))
	}
}

// Slice returns how many grants a slice of the window allows at once and
// how long a slice lasts (WithSlices); 0 and 0 when the limiter does not
// slice.
func (l *Limiter) Slice() (calls int, per time.Duration) { return l.sliceCalls, l.slicePer }

// ordered returns the grant log oldest first.
func (l *Limiter) ordered() []time.Time {
	out := make([]time.Time, 0, len(l.log))
	out = append(out, l.log[l.head:]...)
	return append(out, l.log[:l.head]...)
}

// clamp makes now no earlier than the last grant.
func (l *Limiter) clamp(now time.Time) time.Time {
	if now.Before(l.last) {
		return l.last
	}
	return now
}

// Delay returns how long after now the next grant could be made: 0 if one
// could be made now. It records nothing.
func (l *Limiter) Delay(now time.Time) time.Duration {
	now = l.clamp(now)
	var wait time.Duration
	if len(l.log) == l.rate.Calls {
		// The grant Calls places back must be at least Per old.
		from := l.log[l.head]
		if l.floor.After(from) {
			from = l.floor
		}
		if w := from.Add(l.rate.Per).Sub(now); w > wait {
			wait = w
		}
	}
	if l.sliceCalls > 0 && len(l.sliceLog) == l.sliceCalls {
		if w := l.sliceLog[l.sliceHead].Add(l.slicePer).Sub(now); w > wait {
			wait = w
		}
	}
	if l.mode == ModeTokenBucket && !l.tat.IsZero() {
		if w := l.tat.Add(-l.tolerance).Sub(now); w > wait {
			wait = w
		}
	}
	return wait
}

// Allow reports whether a grant can be made at now and, if so, records it.
func (l *Limiter) Allow(now time.Time) bool {
	ok, _ := l.Reserve(now)
	return ok
}

// Reserve makes a grant at now if the rate allows it and reports true, or
// reports false and how long to wait before asking again (always positive).
// A grant is recorded only when ok is true.
func (l *Limiter) Reserve(now time.Time) (ok bool, wait time.Duration) {
	now = l.clamp(now)
	if wait := l.Delay(now); wait > 0 {
		return false, wait
	}
	l.record(now)
	return true, 0
}

func (l *Limiter) record(now time.Time) {
	at := now.Add(l.hold)
	if len(l.log) < l.rate.Calls {
		l.log = append(l.log, at)
	} else {
		if old := l.log[l.head]; old.After(l.floor) {
			l.floor = old
		}
		l.log[l.head] = at
		l.head++
		if l.head == len(l.log) {
			l.head = 0
		}
	}
	if l.sliceCalls > 0 {
		if len(l.sliceLog) < l.sliceCalls {
			l.sliceLog = append(l.sliceLog, now)
		} else {
			l.sliceLog[l.sliceHead] = now
			l.sliceHead = (l.sliceHead + 1) % l.sliceCalls
		}
	}
	l.last = now
	l.seq++
	if l.mode == ModeTokenBucket {
		// A grant less than one interval behind schedule keeps the
		// schedule, so timer latency under a backlog does not add up (the
		// spacing may shrink by that latency, never to zero); a grant
		// further behind (the bucket was idle) starts a new schedule.
		if now.Sub(l.tat) >= l.interval {
			l.tat = now
		}
		l.tat = l.tat.Add(l.interval)
	}
}

// amend sets the time of the grant numbered seq (the count of grants
// recorded when it was, see seq) to t, if it is still in the ring: the
// strict permit throttler records a permit at the latest instant it may be
// spent and amends it to the real spend time once its pool reports it (or
// to the zero time, which counts as no grant, when it expired unspent). It
// reports whether the entry was found.
func (l *Limiter) amend(seq uint64, t time.Time) bool {
	n := uint64(len(l.log))
	if seq == 0 || seq > l.seq || l.seq-seq >= n {
		return false
	}
	pos := (uint64(l.head) + n - 1 - (l.seq - seq)) % n
	if t.Before(l.log[pos]) {
		l.log[pos] = t // only ever earlier: a report cannot widen a grant
	}
	return true
}

// Record records a grant at now whether or not the rate allows it: a grant
// decided before, for example one a master replays from its journal. A now
// earlier than the last grant is recorded at the last grant's time, so the
// window only ever errs towards holding back.
func (l *Limiter) Record(now time.Time) { l.record(l.clamp(now)) }

// Next returns when a grant could next be made: now if one could be made
// now, otherwise the instant the rate allows one (now plus Delay, counted
// from the last grant when now is earlier than it).
func (l *Limiter) Next(now time.Time) time.Time {
	wait := l.Delay(now)
	if wait <= 0 {
		return now
	}
	return l.clamp(now).Add(wait)
}

// Allowance returns how many grants in a row Reserve would make at now. In
// ModeSlidingWindow without slices it is exact: the free places of the
// window plus the recorded grants at least Per old. Otherwise it is 1 when
// a grant could be made now (0 when not): a caller asks again after each.
func (l *Limiter) Allowance(now time.Time) int {
	if l.Delay(now) > 0 {
		return 0
	}
	if l.mode != ModeSlidingWindow || l.sliceCalls > 0 {
		return 1
	}
	now = l.clamp(now)
	free := l.rate.Calls - len(l.log)
	if l.floor.Add(l.rate.Per).After(now) {
		return free // a grant that left the ring still holds the window
	}
	for _, t := range l.ordered() {
		if t.Add(l.rate.Per).After(now) {
			break
		}
		free++
	}
	return free
}

// Last returns the time of the latest grant (the zero time: none yet).
func (l *Limiter) Last() time.Time { return l.last }

// Grants returns the times of the grants the window still holds (at most
// Rate.Calls), oldest first: what a snapshot keeps to rebuild the limiter
// with Record.
func (l *Limiter) Grants() []time.Time { return l.ordered() }

// Shift moves every recorded time by d: the grants were stamped on a clock
// d behind the one the limiter is used with from now on (a master that
// took over from another).
func (l *Limiter) Shift(d time.Duration) {
	for i := range l.log {
		l.log[i] = l.log[i].Add(d)
	}
	for i := range l.sliceLog {
		l.sliceLog[i] = l.sliceLog[i].Add(d)
	}
	for _, t := range []*time.Time{&l.last, &l.floor, &l.tat} {
		if !t.IsZero() {
			*t = t.Add(d)
		}
	}
}
