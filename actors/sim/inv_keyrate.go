package sim

import (
	"slices"
	"time"

	mcore "github.com/foreman-actors/foreman/actors/master/core"
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
var simKeyRate = mcore.KeyRate{Calls: 3, Per: time.Second}

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

// KeyRateHeld checks that the hand-outs of simRateKey, at the true times
// they are sent, never put more than simKeyRate.Calls in a window
// shorter than simKeyRate.Per less the clocks' rate allowance (two
// MaxDrift: each master measures the period on its own clock, which may
// run fast). A hand-out is a (job, attempt) pair: the same attempt sent
// again is not a second hand-out.
type KeyRateHeld struct {
	sends []time.Duration
	seen  map[handOutKey]bool
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
	now := h.w.e.now
	i.sends = append(i.sends, now)
	n := simKeyRate.Calls
	if len(i.sends) <= n {
		return
	}
	window := time.Duration(float64(simKeyRate.Per) * (1 - 2*h.w.cfg.Faults.MaxDrift))
	if first := i.sends[len(i.sends)-1-n]; now-first < window {
		h.violate(i, w.GetWorkId(), "", "hand-out %d of key %q within %v of the one %d before it (rate %s)",
			len(i.sends), simRateKey, now-first, n, simKeyRate)
	}
	if len(i.sends) > 4*n {
		i.sends = slices.Delete(i.sends, 0, len(i.sends)-n)
	}
}
