package sim

import (
	"slices"
	"time"

	mcore "github.com/foreman-actors/foreman/actors/master/core"
	routecore "github.com/foreman-actors/foreman/actors/route/core"
	"github.com/foreman-actors/foreman/messages"
)

// The per-key rate invariant (issue 37 item 5): with Config.Keys the
// concurrency key simRateKey has the rate simKeyRate, and no window of its
// period holds more of its hand-outs than the rate allows, across shards
// and failovers.

// simRateKey is the concurrency key with a rate in the simulated cluster
// (keysOf draws k0, k1, k2).
const simRateKey = "k0"

// simKeyRate is simRateKey's rate.
var simKeyRate = mcore.KeyRate{Calls: 5, Per: time.Second}

// keyRates are the masters' key rates in the simulated cluster.
func keyRates(keys bool) mcore.KeyRates {
	if !keys {
		return mcore.KeyRates{}
	}
	return mcore.KeyRates{PerKey: map[string]mcore.KeyRate{simRateKey: simKeyRate}}
}

// sendChecker sees each work a master sends to a worker, when it is sent
// (a hand-out is the master's decision: network delays that bunch up
// deliveries are not the master's).
type sendChecker interface {
	sendWork(h *history, w *messages.Work)
}

// KeyRateHeld checks that the hand-outs of simRateKey never put more than
// simKeyRate.Calls in a window shorter than simKeyRate.Per less the
// clocks' rate allowance (two MaxDrift: each master measures the period
// on its own clock, which may run fast). A hand-out counts at the true
// time its master decided it (the WorkStarted stamp, on the master's
// clock, turned into true time), and only once it is sent to a worker
// (a keyed hand-out goes out once its record is durable, a journal round
// trip later; a decision never sent ran nowhere). A hand-out is a (job,
// attempt) pair: the same attempt sent again is not a second one.
type KeyRateHeld struct {
	decided []time.Duration // sorted
	seen    map[handOutKey]bool
}

type handOutKey struct {
	id      string
	attempt int32
}

// Name identifies the invariant.
func (*KeyRateHeld) Name() string { return "key_rate_held" }

func (i *KeyRateHeld) sendWork(h *history, w *messages.Work) {
	if w.GetConcurrencyKey() != simRateKey || !h.w.cfg.Keys {
		return
	}
	k := handOutKey{w.GetWorkId(), w.GetAttempt()}
	if i.seen[k] {
		return
	}
	if i.seen == nil {
		i.seen = make(map[handOutKey]bool)
	}
	i.seen[k] = true
	at, ok := decidedAt(h, w)
	if !ok {
		at = h.w.e.now // not found: the send's time, which is later
	}
	pos, _ := slices.BinarySearch(i.decided, at)
	i.decided = slices.Insert(i.decided, pos, at)
	n := simKeyRate.Calls
	window := time.Duration(float64(simKeyRate.Per) * (1 - 2*h.w.cfg.Faults.MaxDrift))
	// The windows of n+1 consecutive hand-outs that hold the new one.
	for lo := max(pos-n, 0); lo <= pos && lo+n < len(i.decided); lo++ {
		if span := i.decided[lo+n] - i.decided[lo]; span < window {
			h.violate(i, w.GetWorkId(), "", "%d hand-outs of key %q within %v (rate %s)", n+1, simRateKey, span, simKeyRate)
			return
		}
	}
}

// decidedAt returns the true time at which the master that sends w (the
// newest live activation of its shard that holds w's attempt as running)
// decided the hand-out.
func decidedAt(h *history, w *messages.Work) (time.Duration, bool) {
	s := routecore.ShardOf(w.GetWorkId(), h.w.cfg.Shards)
	var best *activation
	var stamp int64
	for _, hs := range h.w.hosts {
		mh, ok := hs.(mastersHost) // a schedHost too (Config.Schedules)
		if !ok {
			continue
		}
		b := mh.masters()
		if s >= len(b.acts) || b.acts[s] == nil || !b.acts[s].live() {
			continue
		}
		act := b.acts[s]
		st := act.m.State().Status(w.GetWorkId())
		if st.GetStatus() != messages.WorkStatus_WORK_STATUS_RUNNING || st.GetAttempts() != w.GetAttempt() {
			continue
		}
		var at int64
		for _, e := range st.GetHistory() {
			if e.GetKind() == messages.WorkHistoryKind_WORK_HISTORY_KIND_STARTED {
				at = e.GetAtUnixNano()
			}
		}
		if at != 0 && (best == nil || act.epoch > best.epoch) {
			best, stamp = act, at
		}
	}
	if best == nil {
		return 0, false
	}
	return best.a.node.trueAt(time.Unix(0, stamp)), true
}
