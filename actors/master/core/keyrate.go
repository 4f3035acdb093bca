package core

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/foreman-actors/foreman/messages"
)

// Per-key rates (issue 37 item 5; docs/scheduling-keys.md, "Per-key
// rates"): at most Calls hand-outs of a concurrency key in any window of
// Per, on the key's shard master.
//
// The rule is the throttler's strict sliding window (actors/throttler
// Limiter, ModeSlidingWindow): a hand-out at now is allowed when the
// Calls-th newest hand-out is at least Per before now, so no half-open
// window [s, s+Per) ever holds more than Calls. It is a few lines here,
// not an import: the throttler package is protoactor's, and the cores are
// protoactor-free.
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
func (s *WorkState) SetKeyRates(r KeyRates) { s.keys.rates = r }

// KeyRateHeld counts the hand-outs held back by their key's rate (a work
// parked because its key's window was full), since the state was built.
func (s *WorkState) KeyRateHeld() uint64 { return s.keys.rateHeld }

// startedKey records a hand-out of key at at in the key's window.
func (k *keyIndex) startedKey(key string, at int64) {
	rate, ok := k.rates.Rate(key)
	if key == "" || !ok {
		return
	}
	if k.starts == nil {
		k.starts = make(map[string][]int64)
	}
	w := k.starts[key]
	if n := len(w); n > 0 && w[n-1] > at {
		// A clock behind the one that stamped the newest time: count the
		// hand-out at that time, later than it was, so the window only
		// ever errs towards holding back.
		at = w[n-1]
	}
	w = append(w, at)
	if len(w) > rate.Calls {
		w = slices.Delete(w, 0, len(w)-rate.Calls)
	}
	k.starts[key] = w
}

// rateOpen returns when key's rate next allows a hand-out: at or before
// now when it allows one now (zero: the key has no rate).
func (k *keyIndex) rateOpen(key string) (open time.Time, limited bool) {
	rate, ok := k.rates.Rate(key)
	if !ok {
		return time.Time{}, false
	}
	w := k.starts[key]
	if len(w) < rate.Calls {
		return time.Time{}, true
	}
	// The Calls-th newest hand-out must be at least Per before a new one.
	return time.Unix(0, w[len(w)-rate.Calls]).Add(rate.Per), true
}

// rateAllowance is how many hand-outs key's rate allows at now.
func (k *keyIndex) rateAllowance(key string, now time.Time) int {
	rate, ok := k.rates.Rate(key)
	if !ok {
		return int(^uint(0) >> 1)
	}
	w := k.starts[key]
	from := now.Add(-rate.Per).UnixNano()
	i, _ := slices.BinarySearch(w, from+1) // the first time inside (now-Per, now]
	return max(rate.Calls-(len(w)-i), 0)
}

// rateBlocked reports whether key's rate forbids a hand-out at now, and
// when it next allows one.
func (k *keyIndex) rateBlocked(key string, now time.Time) (blocked bool, open time.Time) {
	open, limited := k.rateOpen(key)
	if !limited || !open.After(now) {
		return false, time.Time{}
	}
	return true, open
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
		if open, _ := k.rateOpen(key); open.After(now) {
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
		if open, _ := k.rateOpen(key); open.After(now) && (next.IsZero() || open.Before(next)) {
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
		k.starts = nil
		return
	}
	var newest int64
	for _, w := range k.starts { // a maximum: order does not matter
		if n := len(w); n > 0 && w[n-1] > newest {
			newest = w[n-1]
		}
	}
	if shift := at - newest; newest > 0 && shift > 0 {
		for _, w := range k.starts { // shifts each in place: order does not matter
			for i := range w {
				w[i] += shift
			}
		}
	}
}

// expireRates drops the windows that can no longer hold a hand-out back at
// or after cut (the retention's; deterministic, as FinishedForgotten
// applies it): a key whose newest hand-out is a period or more before it,
// or that has no rate any more.
func (k *keyIndex) expireRates(cut int64) {
	for key, w := range k.starts { // deletes only: order does not matter
		rate, ok := k.rates.Rate(key)
		if !ok || len(w) == 0 || w[len(w)-1]+int64(rate.Per) <= cut {
			delete(k.starts, key)
		}
	}
}

// startsState returns the windows for a snapshot, sorted by key.
func (k *keyIndex) startsState() []*messages.KeyStarts {
	if len(k.starts) == 0 {
		return nil
	}
	out := make([]*messages.KeyStarts, 0, len(k.starts))
	for key, w := range k.starts {
		out = append(out, &messages.KeyStarts{Key: key, AtUnixNano: slices.Clone(w)})
	}
	slices.SortFunc(out, func(a, b *messages.KeyStarts) int { return strings.Compare(a.GetKey(), b.GetKey()) })
	return out
}

// restoreStarts adds a snapshot's windows.
func (k *keyIndex) restoreStarts(starts []*messages.KeyStarts) {
	if len(starts) == 0 {
		return
	}
	if k.starts == nil {
		k.starts = make(map[string][]int64, len(starts))
	}
	for _, ks := range starts {
		k.starts[ks.GetKey()] = slices.Clone(ks.GetAtUnixNano())
	}
}
