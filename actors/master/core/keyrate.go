package core

import (
	"fmt"
	"slices"
	"strings"
	"time"

	throttle "github.com/foreman-actors/foreman/actors/throttler/core"
	"github.com/foreman-actors/foreman/messages"
)

// Per-key rates (issue 37 item 5; docs/scheduling-keys.md, "Per-key
// rates"): at most Calls hand-outs of a concurrency key in any window of
// Per, on the key's shard master.
//
// The rule is the throttler's strict sliding window, and literally its
// code: each key with a rate has a Limiter of actors/throttler/core in
// ModeSlidingWindow (the one the throttler actor's strict modes use): a
// hand-out at now is allowed when the Calls-th newest hand-out is at least
// Per before now, so no half-open window [s, s+Per) ever holds more than
// Calls.
//
// The window is state, not configuration: each key's newest hand-out
// times are recorded by applying WorkStarted (and WorksStarted), so replay
// rebuilds them, and a snapshot keeps them (KeysState.starts). A new
// master's clock may run ahead of the old one's; a recovery therefore
// shifts every recorded time by how far its own stamp is past the newest
// recorded one (see recoveredRates), so a failover never lets a burst
// through: at worst it holds a key back up to one period longer.

// MaxKeyRateCalls bounds a key rate's count: the master keeps one time
// per allowed hand-out and key.
const MaxKeyRateCalls = 100_000

// KeyRate is a concurrency key's hand-out rate: at most Calls hand-outs in
// any window of Per. The zero value is no rate.
type KeyRate struct {
	Calls int
	Per   time.Duration
}

// IsZero reports whether r is no rate.
func (r KeyRate) IsZero() bool { return r.Calls == 0 && r.Per == 0 }

// Validate reports why r cannot be used (nil: it can; the zero rate can).
func (r KeyRate) Validate() error {
	switch {
	case r.IsZero():
		return nil
	case r.Calls < 1 || r.Calls > MaxKeyRateCalls:
		return fmt.Errorf("master: key rate count %d is not in 1..%d; give e.g. 10/s", r.Calls, MaxKeyRateCalls)
	case r.Per <= 0:
		return fmt.Errorf("master: key rate period %s is not positive; give e.g. 10/s", r.Per)
	}
	return nil
}

// String formats r as "10/1s".
func (r KeyRate) String() string { return fmt.Sprintf("%d/%s", r.Calls, r.Per) }

// KeyRates are the hand-out rates per concurrency key.
type KeyRates struct {
	// Default is the rate of a key without its own (zero: unlimited).
	Default KeyRate
	// PerKey are keys' own rates.
	PerKey map[string]KeyRate
}

// Rate returns key's rate; ok is false when the key has none.
func (r KeyRates) Rate(key string) (rate KeyRate, ok bool) {
	if kr, found := r.PerKey[key]; found && !kr.IsZero() {
		return kr, true
	}
	if !r.Default.IsZero() {
		return r.Default, true
	}
	return KeyRate{}, false
}

// SetKeyRates sets the rates per concurrency key. The master calls it
// before replay (New, Reset), so that replay records the windows the
// rates need.
//
// A key whose rate changed keeps its recorded hand-outs under the new rate
// (Limiter.SetRate: a window that starts after the change holds at most
// the new count); a key that lost its rate forgets them.
func (s *WorkState) SetKeyRates(r KeyRates) {
	k := &s.keys
	k.rates = r
	for key := range k.windows { // per key: order does not matter
		k.syncWindow(key)
	}
	restored := k.restored
	k.restored = nil
	k.restoreStarts(restored)
}

// syncWindow makes key's window follow its rate: kept under a changed rate
// (Limiter.SetRate: a window that starts after the change holds at most
// the new count), forgotten when the key has no rate any more.
func (k *keyIndex) syncWindow(key string) {
	l := k.windows[key]
	if l == nil {
		return
	}
	rate, ok := k.rateOf(key)
	if !ok {
		delete(k.windows, key)
		return
	}
	if want := (throttle.Rate{Calls: rate.Calls, Per: rate.Per}); l.Rate() != want {
		_ = l.SetRate(want) // validated before it was set; a refusal keeps the old rate
	}
}

// KeyRateHeld counts the hand-outs held back by their key's rate (a work
// parked because its key's window was full), since the state was built.
func (s *WorkState) KeyRateHeld() uint64 { return s.keys.rateHeld }

// window returns key's limiter, made for its rate when missing (nil: the
// key has no rate).
func (k *keyIndex) window(key string) *throttle.Limiter {
	rate, ok := k.rateOf(key)
	if key == "" || !ok {
		return nil
	}
	if l := k.windows[key]; l != nil {
		return l
	}
	l, err := throttle.NewLimiter(throttle.Rate{Calls: rate.Calls, Per: rate.Per})
	if err != nil {
		return nil // unreachable: rates are validated before they are set
	}
	if k.windows == nil {
		k.windows = make(map[string]*throttle.Limiter)
	}
	k.windows[key] = l
	return l
}

// startedKey records a hand-out of key at at in the key's window. A time
// behind the newest recorded one counts at that one (Limiter.Record), so
// the window only ever errs towards holding back.
func (k *keyIndex) startedKey(key string, at int64) {
	if l := k.window(key); l != nil {
		l.Record(time.Unix(0, at))
	}
}

// rateAllowance is how many hand-outs key's rate allows at now.
func (k *keyIndex) rateAllowance(key string, now time.Time) int {
	if _, ok := k.rateOf(key); !ok {
		return int(^uint(0) >> 1)
	}
	l := k.windows[key]
	if l == nil {
		rate, _ := k.rateOf(key)
		return rate.Calls
	}
	return l.Allowance(now)
}

// rateBlocked reports whether key's rate forbids a hand-out at now, and
// when it next allows one.
func (k *keyIndex) rateBlocked(key string, now time.Time) (blocked bool, open time.Time) {
	if _, ok := k.rateOf(key); !ok {
		return false, time.Time{}
	}
	l := k.windows[key]
	if l == nil {
		return false, time.Time{}
	}
	if open := l.Next(now); open.After(now) {
		return true, open
	}
	return false, time.Time{}
}

// rateParked notes that key has works parked by its rate: beforeDispatch
// looks at it again once its window opens.
func (k *keyIndex) rateParked(key string) {
	k.rateHeld++
	k.waitRate(key)
}

// waitRate notes that key has parked works that wait for its rate.
func (k *keyIndex) waitRate(key string) {
	if !slices.Contains(k.rateWait, key) {
		k.rateWait = append(k.rateWait, key)
	}
}

// unparkRated marks the keys parked by their rate whose window opened by
// now as freed (unparkFreed returns their works, and notes the key again
// if the rate still binds), and forgets those with no parked works left.
// A key whose window is open but whose slots are full waits for a slot
// like any other: a run's end frees it.
func (k *keyIndex) unparkRated(now time.Time) {
	k.rateWait = slices.DeleteFunc(k.rateWait, func(key string) bool {
		if len(k.parked[key]) == 0 {
			return true
		}
		if blocked, _ := k.rateBlocked(key, now); blocked {
			return false
		}
		if !slices.Contains(k.freed, key) {
			k.freed = append(k.freed, key)
		}
		return true
	})
}

// nextRateOpen returns the earliest time after now that a key parked by
// its rate may hand out again (zero: none waits). A window already open
// is not a wake: beforeDispatch has freed its key.
func (k *keyIndex) nextRateOpen(now time.Time) (next time.Time) {
	for _, key := range k.rateWait {
		if len(k.parked[key]) == 0 {
			continue
		}
		if blocked, open := k.rateBlocked(key, now); blocked && (next.IsZero() || open.Before(next)) {
			next = open
		}
	}
	return next
}

// recoveredRates moves the recorded windows onto the clock of the master
// that recovers at at. The newest recorded hand-out was stamped before the
// recovery in true time, so the new clock runs ahead of the one that
// stamped it by at most at minus that stamp: every time shifts by that
// much (when positive). A key's window is then never shorter in true time
// than its period; a failover may hold a key back up to one period longer.
func (k *keyIndex) recoveredRates(at int64, planted Bug) {
	if planted == KeyRateForgotten {
		k.windows = nil
		return
	}
	var newest int64
	for _, l := range k.windows { // a maximum: order does not matter
		if last := l.Last(); !last.IsZero() && last.UnixNano() > newest {
			newest = last.UnixNano()
		}
	}
	if shift := at - newest; newest > 0 && shift > 0 {
		for _, l := range k.windows { // shifts each in place: order does not matter
			l.Shift(time.Duration(shift))
		}
	}
}

// expireRates drops the windows that can no longer hold a hand-out back at
// or after cut (the retention's; deterministic, as FinishedForgotten
// applies it): a key whose newest hand-out is a period or more before it,
// or that has no rate any more.
func (k *keyIndex) expireRates(cut int64) {
	for key, l := range k.windows { // deletes only: order does not matter
		rate, ok := k.rateOf(key)
		if !ok || l.Last().IsZero() || l.Last().UnixNano()+int64(rate.Per) <= cut {
			delete(k.windows, key)
		}
	}
}

// startsState returns the windows for a snapshot, sorted by key.
func (k *keyIndex) startsState() []*messages.KeyStarts {
	if len(k.windows) == 0 && len(k.restored) == 0 {
		return nil
	}
	out := slices.Clone(k.restored)
	for key, l := range k.windows {
		g := l.Grants()
		at := make([]int64, len(g))
		for i, t := range g {
			at[i] = t.UnixNano()
		}
		out = append(out, &messages.KeyStarts{Key: key, AtUnixNano: at})
	}
	slices.SortFunc(out, func(a, b *messages.KeyStarts) int { return strings.Compare(a.GetKey(), b.GetKey()) })
	return out
}

// restoreStarts records windows (a snapshot's) anew, each in its key's
// limiter; a key without a rate forgets its window. A snapshot is restored
// before the master sets its rates (RestoreWorkState, then Master.Reset):
// restoreKeys keeps its windows as they came (restored), and SetKeyRates
// records them here.
func (k *keyIndex) restoreStarts(starts []*messages.KeyStarts) {
	for _, ks := range starts {
		delete(k.windows, ks.GetKey())
		l := k.window(ks.GetKey())
		if l == nil {
			continue
		}
		for _, at := range ks.GetAtUnixNano() {
			l.Record(time.Unix(0, at))
		}
	}
}

// KeyLimitHeld counts the hand-outs held back by their key's concurrency
// limit (a work parked because its key had no free slot), since the state
// was built.
func (s *WorkState) KeyLimitHeld() uint64 { return s.keys.limitHeld }

// KeysHeld is how many concurrency keys have works parked now, by their
// limit or their rate.
func (s *WorkState) KeysHeld() int { return len(s.keys.parked) }
