package clock

import (
	"sort"
	"sync"
	"time"
)

// Manual is a clock that moves only when told to. Timers and tickers fire
// during Advance or Set, in the order of their due time, in the goroutine that
// moves the clock. A channel timer or ticker whose buffered channel is full
// drops the tick, as time.Ticker does.
//
// The zero value is not usable; create one with NewManual.
type Manual struct {
	mu      sync.Mutex // guards every field below
	now     time.Time
	seq     uint64         // tie-breaker so timers due at one instant fire in creation order
	waiters []*manualTimer // pending timers and tickers, unordered
	changed chan struct{}  // closed and replaced whenever waiters changes
}

// NewManual returns a manual clock that reads start.
func NewManual(start time.Time) *Manual {
	return &Manual{now: start, changed: make(chan struct{})}
}

var _ Clock = (*Manual)(nil)

// Now returns the clock's current time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Since returns the manual time elapsed since t.
func (m *Manual) Since(t time.Time) time.Duration { return m.Now().Sub(t) }

// AfterFunc schedules f to run when the clock has been advanced by d.
func (m *Manual) AfterFunc(d time.Duration, f func()) Timer {
	return m.add(&manualTimer{clock: m, fn: f}, d)
}

// NewTimer returns a timer that fires when the clock has been advanced by d.
func (m *Manual) NewTimer(d time.Duration) Timer {
	return m.add(&manualTimer{clock: m, ch: make(chan time.Time, 1)}, d)
}

// NewTicker returns a ticker that fires every d of manual time.
func (m *Manual) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	return manualTicker{m.add(&manualTimer{clock: m, ch: make(chan time.Time, 1), period: d}, d)}
}

func (m *Manual) add(t *manualTimer, d time.Duration) *manualTimer {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.scheduleLocked(t, d)
	return t
}

func (m *Manual) scheduleLocked(t *manualTimer, d time.Duration) {
	m.seq++
	t.due = m.now.Add(d)
	t.order = m.seq
	if !t.active {
		t.active = true
		m.waiters = append(m.waiters, t)
	}
	m.notifyLocked()
}

func (m *Manual) removeLocked(t *manualTimer) bool {
	if !t.active {
		return false
	}
	t.active = false
	for i, w := range m.waiters {
		if w == t {
			m.waiters = append(m.waiters[:i], m.waiters[i+1:]...)
			break
		}
	}
	m.notifyLocked()
	return true
}

func (m *Manual) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// Advance moves the clock forward by d, firing every timer and tick that
// falls due on the way, each at its own due time (Now, read from a callback,
// returns that due time).
func (m *Manual) Advance(d time.Duration) {
	m.mu.Lock()
	target := m.now.Add(d)
	m.mu.Unlock()
	m.Set(target)
}

// Set moves the clock to t, firing what falls due on the way. Moving the
// clock backwards only changes Now.
func (m *Manual) Set(t time.Time) {
	for {
		m.mu.Lock()
		next := m.nextDueLocked(t)
		if next == nil {
			m.now = t
			m.mu.Unlock()
			return
		}
		if next.due.After(m.now) {
			m.now = next.due
		}
		now := m.now
		fn, ch := next.fn, next.ch
		if next.period > 0 {
			m.scheduleLocked(next, next.period)
		} else {
			m.removeLocked(next)
		}
		m.mu.Unlock()
		if fn != nil {
			fn()
		} else {
			select {
			case ch <- now:
			default:
			}
		}
	}
}

func (m *Manual) nextDueLocked(limit time.Time) *manualTimer {
	var best *manualTimer
	for _, w := range m.waiters {
		if w.due.After(limit) {
			continue
		}
		if best == nil || w.due.Before(best.due) || (w.due.Equal(best.due) && w.order < best.order) {
			best = w
		}
	}
	return best
}

// Pending returns how many timers and tickers are scheduled.
func (m *Manual) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.waiters)
}

// NextDue returns the due times of the scheduled timers, earliest first.
func (m *Manual) NextDue() []time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]time.Time, 0, len(m.waiters))
	for _, w := range m.waiters {
		out = append(out, w.due)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// WaitForPending blocks until at least n timers or tickers are scheduled, or
// until done is closed; it reports whether n was reached. Tests use it to
// know that an actor has armed its timer before they advance the clock.
func (m *Manual) WaitForPending(done <-chan struct{}, n int) bool {
	for {
		m.mu.Lock()
		if len(m.waiters) >= n {
			m.mu.Unlock()
			return true
		}
		changed := m.changed
		m.mu.Unlock()
		select {
		case <-changed:
		case <-done:
			return false
		}
	}
}

type manualTimer struct {
	clock  *Manual
	fn     func()
	ch     chan time.Time
	period time.Duration
	// The fields below are guarded by clock.mu.
	due    time.Time
	order  uint64
	active bool
}

func (t *manualTimer) C() <-chan time.Time { return t.ch }

func (t *manualTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	return t.clock.removeLocked(t)
}

func (t *manualTimer) Reset(d time.Duration) bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := t.active
	if t.period > 0 {
		t.period = d
	}
	t.clock.scheduleLocked(t, d)
	return was
}

// manualTicker adapts manualTimer to Ticker, whose Stop and Reset return nothing.
type manualTicker struct{ *manualTimer }

func (t manualTicker) Stop()                 { t.manualTimer.Stop() }
func (t manualTicker) Reset(d time.Duration) { t.manualTimer.Reset(d) }
