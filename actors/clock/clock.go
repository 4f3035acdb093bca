// Package clock is the time source that Foreman's actors take as a dependency.
//
// Production code uses [Real], which is the time package. Tests use [Manual],
// a clock that only moves when the test calls [Manual.Advance], so timer logic
// (throttler periods, master timeouts, tuner samples) is tested without
// sleeping and without flakiness on a loaded machine.
package clock

import "time"

// Clock tells the time and schedules work in the future.
//
// Implementations are safe for concurrent use.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Since returns the time elapsed since t.
	Since(t time.Time) time.Duration
	// AfterFunc calls f in its own goroutine (Real) or in the goroutine that
	// advances the clock (Manual) once d has elapsed.
	AfterFunc(d time.Duration, f func()) Timer
	// NewTimer returns a timer that sends the time on its channel once d has
	// elapsed.
	NewTimer(d time.Duration) Timer
	// NewTicker returns a ticker that sends the time on its channel every d.
	// d must be positive.
	NewTicker(d time.Duration) Ticker
}

// Timer is a single event in the future. It mirrors *time.Timer.
type Timer interface {
	// C is the channel the time is delivered on; nil for AfterFunc timers.
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether the call
	// stopped the timer (false if it had already fired or been stopped).
	Stop() bool
	// Reset changes the timer to fire after d. It reports whether the timer
	// had been active.
	Reset(d time.Duration) bool
}

// Ticker delivers ticks at intervals. It mirrors *time.Ticker.
type Ticker interface {
	// C is the channel the ticks are delivered on.
	C() <-chan time.Time
	// Stop turns the ticker off; no more ticks are sent.
	Stop()
	// Reset stops the ticker and restarts it with period d.
	Reset(d time.Duration)
}

// Real is the wall clock, backed by the time package.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time                  { return time.Now() }
func (realClock) Since(t time.Time) time.Duration { return time.Since(t) }

func (realClock) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{t: time.AfterFunc(d, f)}
}

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{t: time.NewTimer(d)} }

func (realClock) NewTicker(d time.Duration) Ticker { return realTicker{t: time.NewTicker(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time   { return r.t.C }
func (r realTicker) Stop()                 { r.t.Stop() }
func (r realTicker) Reset(d time.Duration) { r.t.Reset(d) }

// OrReal returns c, or Real when c is nil. Constructors use it so that a
// zero-valued option means "the wall clock".
func OrReal(c Clock) Clock {
	if c == nil {
		return Real
	}
	return c
}
