package core

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	routecore "github.com/foreman-actors/foreman/actors/route/core"
	throttle "github.com/foreman-actors/foreman/actors/throttler/core"
	"github.com/foreman-actors/foreman/messages"
)

// Unique and concurrency keys (issue 37 items 5 and 6; docs/scheduling.md).
//
// Both are derived from the works the state holds, so replay rebuilds them
// with no event of their own: a WorkAccepted with a unique key makes its
// work the key's holder, and a work's start and end count it in and out of
// its concurrency key. What the works no longer imply (a forgotten holder
// still inside its period, a run a recovery requeued) is kept in keyIndex
// and in the snapshot's KeysState; it too changes only through Apply.
//
// With several shards every work of a key lives on the key's shard
// (Config.Check rejects one whose id falls elsewhere; route.KeyedID picks
// an id there), so one master sees all of a key's works, and a limit or a
// uniqueness is the cluster's.

// MaxKeyLen bounds a unique or concurrency key, in bytes.
const MaxKeyLen = 256

// ConcurrencyLimits are the running limits per concurrency key.
type ConcurrencyLimits struct {
	// Default is the limit of a key without its own; < 1 means 1.
	Default int
	// PerKey are keys' own limits.
	PerKey map[string]int
}

// Limit returns key's limit.
func (c ConcurrencyLimits) Limit(key string) int {
	if n, ok := c.PerKey[key]; ok && n > 0 {
		return n
	}
	return max(c.Default, 1)
}

// workKeys are an entry's keys, decoded once from its extra fields.
type workKeys struct {
	unique      string
	uniqueFor   int64
	concurrency string
}

// keysOfExtra decodes the keys of an entry's extra fields (nil: none).
func keysOfExtra(extra []byte) *workKeys {
	if extra == nil {
		return nil
	}
	var w messages.Work
	if proto.Unmarshal(extra, &w) != nil {
		return nil
	}
	if w.GetUniqueKey() == "" && w.GetConcurrencyKey() == "" {
		return nil
	}
	return &workKeys{unique: w.GetUniqueKey(), uniqueFor: w.GetUniqueForNanos(), concurrency: w.GetConcurrencyKey()}
}

func (e *entry) keys() *workKeys {
	if r := e.rareFields(); r != nil {
		return r.keys
	}
	return nil
}

func (e *entry) concurrencyKey() string {
	if k := e.keys(); k != nil {
		return k.concurrency
	}
	return ""
}

// parkedIdx is an entry's heapIdx while it is parked: pending, out of its
// queue because its concurrency key is at its limit.
const parkedIdx = -2

// keyIndex is WorkState's key state.
type keyIndex struct {
	// holders maps a unique key to the newest work accepted with it.
	holders map[string]*entry
	// forgotten are unique keys whose holder was forgotten inside its
	// period.
	forgotten map[string]*messages.UniqueHold
	// running counts the running works per concurrency key.
	running map[string]int
	// slots are runs a recovery requeued, in requeue order (HeldSlot).
	slots []*messages.HeldSlot
	// parked are pending works out of their queue, per concurrency key,
	// in the order they were parked (their hand-out order).
	parked map[string][]*entry
	// freed are keys with parked works that lost a running work since the
	// last dispatch, in order, once each.
	freed []string

	// limits and timeout are the master's configuration, set before each
	// dispatch (Master.dispatch): not state.
	limits  ConcurrencyLimits
	timeout time.Duration

	// windows are the hand-out windows of keys with a rate: the
	// throttler's Limiter, holding the newest hand-out times, at most the
	// rate's count (keyrate.go); rates are the master's, set before replay
	// (SetKeyRates).
	windows map[string]*throttle.Limiter
	// overrides are the keys' run-time limits (limits.go: KeyLimitSet),
	// state like the windows; limitHeld counts the hand-outs held back by
	// a key's concurrency limit.
	overrides map[string]*messages.KeyLimitSet
	limitHeld uint64
	// restored are a snapshot's windows restored before the rates were
	// set, recorded by SetKeyRates (restoreStarts).
	restored []*messages.KeyStarts
	rates    KeyRates
	// rateWait are keys with works parked by their rate, once each;
	// rateHeld counts the hand-outs their rate held back.
	rateWait []string
	rateHeld uint64
}

// mayStart reports whether e may start at now: it has no concurrency key,
// or its key has a free slot. When not, e is parked, and wake is when a
// held slot of its key expires (zero: when a run of the key ends).
func (s *WorkState) mayStart(e *entry, now time.Time) (ok bool, wake time.Time) {
	key := e.concurrencyKey()
	if key == "" || s.planted == ConcurrencyLimitIgnored {
		return true, time.Time{}
	}
	used, expires := s.keys.occupied(key, now, s.keys.timeout)
	if used >= s.keys.limitOf(key) {
		s.park(e)
		s.keys.limitHeld++
		return false, expires
	}
	if blocked, open := s.keys.rateBlocked(key, now); blocked && s.planted != KeyRateIgnored {
		s.park(e)
		s.keys.rateParked(key)
		return false, open
	}
	return true, time.Time{}
}

// beforeDispatch returns parked works whose key has free slots again to
// their queues.
func (s *WorkState) beforeDispatch(now time.Time) {
	if len(s.keys.parked) == 0 {
		return
	}
	if len(s.keys.slots) > 0 {
		s.unparkHeld(now, s.keys.timeout)
	}
	if len(s.keys.rateWait) > 0 {
		s.keys.unparkRated(now)
	}
	if len(s.keys.freed) > 0 {
		s.unparkFreed(s.keys.limits, now, s.keys.timeout)
	}
}

func (k *keyIndex) init() {
	if k.holders == nil {
		k.holders = make(map[string]*entry)
		k.forgotten = make(map[string]*messages.UniqueHold)
		k.running = make(map[string]int)
		k.parked = make(map[string][]*entry)
	}
}

// accepted indexes e, just accepted (or restored): the holder of its
// unique key.
func (k *keyIndex) accepted(e *entry) {
	ks := e.keys()
	if ks == nil || ks.unique == "" {
		return
	}
	k.init()
	k.holders[ks.unique] = e
	delete(k.forgotten, ks.unique)
}

// runs counts e in (+1) or out (-1) of its concurrency key.
func (k *keyIndex) runs(e *entry, d int) {
	key := e.concurrencyKey()
	if key == "" {
		return
	}
	k.init()
	n := k.running[key] + d
	if n <= 0 {
		delete(k.running, key)
	} else {
		k.running[key] = n
	}
	if d < 0 && len(k.parked[key]) > 0 && !slices.Contains(k.freed, key) {
		k.freed = append(k.freed, key)
	}
}

// requeued keeps the slot of e's run, which may go on executing while
// the master no longer tracks it: a recovery requeues it, or another
// run's result finishes e. The slot lasts a work timeout from the later of
// the run's start and from (a recovery's own stamp; 0: none): a start
// another master stamped is on that master's clock, and a successor whose
// clock runs ahead would free the slot early, letting a failover double
// the key's limit (the simulator's seed 3002231 with --keys --fair). The
// held slot's StartedAtUnixNano is that later time.
func (k *keyIndex) requeued(e *entry, from int64) {
	if key := e.concurrencyKey(); key != "" {
		k.slots = append(k.slots, &messages.HeldSlot{Key: key, WorkId: e.id, StartedAtUnixNano: max(e.startedAt, from), WorkerId: e.workerID})
	}
}

// ended frees the held slot of work id's run on worker, whose result
// arrived.
func (k *keyIndex) ended(id, worker string) {
	k.slots = slices.DeleteFunc(k.slots, func(s *messages.HeldSlot) bool {
		if s.GetWorkId() != id || s.GetWorkerId() != worker {
			return false
		}
		if key := s.GetKey(); len(k.parked[key]) > 0 && !slices.Contains(k.freed, key) {
			k.freed = append(k.freed, key)
		}
		return true
	})
}

// forget records e's unique key, e being forgotten at cut, when its period
// outlasts the cut; and drops what expired before it.
func (k *keyIndex) forget(e *entry, cut int64) {
	ks := e.keys()
	if ks == nil || ks.unique == "" || k.holders[ks.unique] != e {
		return
	}
	delete(k.holders, ks.unique)
	if until := e.finishedAt + ks.uniqueFor; e.status != statusCancelled && until > cut {
		k.forgotten[ks.unique] = &messages.UniqueHold{Key: ks.unique, WorkId: e.id, Status: e.status, UntilUnixNano: until}
	}
}

// expire drops forgotten unique keys and held slots older than cut (the
// retention's): deterministic, as FinishedForgotten applies it.
func (k *keyIndex) expire(cut int64) {
	for key, h := range k.forgotten { // deletes only: order does not matter
		if h.GetUntilUnixNano() <= cut {
			delete(k.forgotten, key)
		}
	}
	k.slots = slices.DeleteFunc(k.slots, func(s *messages.HeldSlot) bool { return s.GetStartedAtUnixNano() < cut })
	k.expireRates(cut)
}

// UniqueHolder returns the work that holds unique key at now, with its
// status: a pending or running one, or one done or dead less than its
// period ago. ok is false when none does (a cancelled one frees its key).
func (s *WorkState) UniqueHolder(key string, now int64) (id string, status messages.WorkStatus, ok bool) {
	if key == "" {
		return "", 0, false
	}
	if e := s.keys.holders[key]; e != nil && !e.gone {
		switch {
		case !e.finished():
			return e.id, e.status, true
		case e.status == statusCancelled:
			return "", 0, false
		case now < e.finishedAt+e.keys().uniqueFor:
			return e.id, e.status, true
		}
		return "", 0, false
	}
	if h := s.keys.forgotten[key]; h != nil && now < h.GetUntilUnixNano() {
		return h.GetWorkId(), h.GetStatus(), true
	}
	return "", 0, false
}

// KeyRunning returns the running works per concurrency key, by key, and
// the slots held for runs a recovery requeued: for metrics and the
// dashboard. A new slice, sorted by key.
func (s *WorkState) KeyRunning() []KeyCount {
	out := make([]KeyCount, 0, len(s.keys.running))
	for k, n := range s.keys.running {
		out = append(out, KeyCount{Key: k, Running: n})
	}
	for _, h := range s.keys.slots {
		i := slices.IndexFunc(out, func(c KeyCount) bool { return c.Key == h.GetKey() })
		if i < 0 {
			out = append(out, KeyCount{Key: h.GetKey()})
			i = len(out) - 1
		}
		out[i].Held++
	}
	for k, es := range s.keys.parked {
		i := slices.IndexFunc(out, func(c KeyCount) bool { return c.Key == k })
		if i < 0 {
			out = append(out, KeyCount{Key: k})
			i = len(out) - 1
		}
		out[i].Waiting += len(es)
	}
	slices.SortFunc(out, func(a, b KeyCount) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// KeyCount is one concurrency key's counts.
type KeyCount struct {
	Key string
	// Running works, Held slots of runs a recovery requeued, and Waiting
	// works parked because the key was at its limit.
	Running, Held, Waiting int
}

// occupied returns the slots of key in use at now, and when the earliest
// held slot expires (zero: none does).
func (k *keyIndex) occupied(key string, now time.Time, timeout time.Duration) (n int, expires time.Time) {
	n = k.running[key]
	for _, h := range k.slots {
		if h.GetKey() != key {
			continue
		}
		at := time.Unix(0, h.GetStartedAtUnixNano()).Add(timeout)
		if !at.After(now) {
			continue // its run was timed out by now: the slot is free
		}
		n++
		if expires.IsZero() || at.Before(expires) {
			expires = at
		}
	}
	return n, expires
}

// park takes pending e out of its queue: its concurrency key is full.
func (s *WorkState) park(e *entry) {
	s.unqueue(e)
	s.counts.Pending++ // still pending
	key := e.concurrencyKey()
	s.keys.parked[key] = append(s.keys.parked[key], e)
	e.heapIdx = parkedIdx
}

// unpark takes parked e out of the parked works (it starts, expires or
// leaves).
func (s *WorkState) unpark(e *entry) {
	key := e.concurrencyKey()
	ps := s.keys.parked[key]
	if i := slices.Index(ps, e); i >= 0 {
		ps = slices.Delete(ps, i, i+1)
	}
	if len(ps) == 0 {
		delete(s.keys.parked, key)
	} else {
		s.keys.parked[key] = ps
	}
	e.heapIdx = -1
	s.counts.Pending--
}

// unparkFreed returns parked works to their queues, as many per freed key
// as it has free slots: they keep their ready time and arrival order.
func (s *WorkState) unparkFreed(limits ConcurrencyLimits, now time.Time, timeout time.Duration) {
	freed := s.keys.freed
	s.keys.freed = s.keys.freed[:0]
	for _, key := range freed {
		used, _ := s.keys.occupied(key, now, timeout)
		slots, rate := s.keys.limitOf(key)-used, s.keys.rateAllowance(key, now)
		for free := min(slots, rate); free > 0 && len(s.keys.parked[key]) > 0; free-- {
			e := s.keys.parked[key][0]
			s.unpark(e)
			s.push(e)
		}
		if rate < slots && len(s.keys.parked[key]) > 0 {
			// A slot is free but the rate's window is full: look again
			// when it opens (nextRateOpen arms the wake).
			s.keys.waitRate(key)
		}
	}
}

// unparkHeld returns the parked works of keys whose held slots expired
// by now (the runs a recovery requeued timed out): scanned only while
// there are held slots.
func (s *WorkState) unparkHeld(now time.Time, timeout time.Duration) {
	for _, h := range s.keys.slots {
		if key := h.GetKey(); len(s.keys.parked[key]) > 0 && !slices.Contains(s.keys.freed, key) {
			if at := time.Unix(0, h.GetStartedAtUnixNano()).Add(timeout); !at.After(now) {
				s.keys.freed = append(s.keys.freed, key)
			}
		}
	}
}

// keysState returns what a snapshot keeps of the key state (nil: none),
// sorted so that the snapshot is deterministic.
func (k *keyIndex) keysState() *messages.KeysState {
	if len(k.forgotten) == 0 && len(k.slots) == 0 && len(k.windows) == 0 && len(k.restored) == 0 && len(k.overrides) == 0 {
		return nil
	}
	ks := &messages.KeysState{Slots: slices.Clone(k.slots), Starts: k.startsState(), Limits: k.limitsState()}
	for _, h := range k.forgotten {
		ks.Uniques = append(ks.Uniques, h)
	}
	slices.SortFunc(ks.Uniques, func(a, b *messages.UniqueHold) int { return strings.Compare(a.GetKey(), b.GetKey()) })
	return ks
}

// restoreKeys adds a snapshot's key state.
func (k *keyIndex) restoreKeys(ks *messages.KeysState) {
	if ks == nil {
		return
	}
	k.init()
	for _, h := range ks.GetUniques() {
		if _, held := k.holders[h.GetKey()]; !held {
			k.forgotten[h.GetKey()] = h
		}
	}
	k.slots = append(k.slots, ks.GetSlots()...)
	for _, l := range ks.GetLimits() {
		k.applyKeyLimitSet(l)
	}
	k.restored = append(k.restored, ks.GetStarts()...) // recorded by SetKeyRates

}

// checkKeys validates w's keys against the shard layout: "" when fine.
func (c *Config) checkKeys(w *messages.Work) string {
	uk, ck := w.GetUniqueKey(), w.GetConcurrencyKey()
	switch {
	case len(uk) > MaxKeyLen:
		return fmt.Sprintf("master: unique_key is %d bytes, over %d; use a shorter key (e.g. a hash of it)", len(uk), MaxKeyLen)
	case len(ck) > MaxKeyLen:
		return fmt.Sprintf("master: concurrency_key is %d bytes, over %d; use a shorter key", len(ck), MaxKeyLen)
	case w.GetUniqueForNanos() < 0:
		return "master: unique_for is negative; give a duration such as 1h, or 0 to hold the key only while the job is pending or running"
	case w.GetUniqueForNanos() > 0 && uk == "":
		return "master: unique_for without unique_key; set unique_key too (e.g. \"invoice-42\")"
	case c.Shards < 2 || (uk == "" && ck == ""):
		return ""
	}
	key := RouteKey(w)
	if uk != "" && ck != "" && routecore.ShardOf(uk, c.Shards) != routecore.ShardOf(ck, c.Shards) {
		return fmt.Sprintf("master: unique_key %q and concurrency_key %q fall on different shards of %d; use the same key for both, or only one", uk, ck, c.Shards)
	}
	if k := routecore.ShardOf(key, c.Shards); k != routecore.ShardOf(w.GetWorkId(), c.Shards) {
		return fmt.Sprintf("master: work %q is not on the shard of its key %q (shard %d of %d); omit the work id and the frontend picks one there, or pick one with route.KeyedID",
			w.GetWorkId(), key, k, c.Shards)
	}
	return ""
}

// RouteKey returns the key whose shard a keyed work lives on: its
// concurrency key, else its unique key; "" for a work without keys.
func RouteKey(w *messages.Work) string {
	if k := w.GetConcurrencyKey(); k != "" {
		return k
	}
	return w.GetUniqueKey()
}
