package core

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	routecore "github.com/foreman-actors/foreman/actors/route/core"
	"github.com/foreman-actors/foreman/messages"
)

// Run-time limits (issue 37 item 5; docs/scheduling-keys.md, "Run-time
// limits"): PUT /limits/{key} sets a concurrency key's running limit and
// hand-out rate without a restart. They are state, not configuration: a
// KeyLimitSet event in the journal of the key's shard master, applied
// here, so replay and failover keep them, and a snapshot too
// (KeysState.limits). A run-time part wins over the flags
// (--concurrency-limit, --key-rate, Config.Concurrency and KeyRates),
// which stay the defaults. Lowering a limit preempts nothing: mayStart
// parks the key's works until it is under the new limit.

// MaxConcurrencyLimit bounds a run-time concurrency limit.
const MaxConcurrencyLimit = 1_000_000

// Sources of a part of a key's effective limits (KeyLimitState).
const (
	LimitRuntime = "runtime"
	LimitFlag    = "flag"
	LimitDefault = "default"
)

// Inputs of the run-time limits.
type (
	// SetKeyLimit is a SetKeyLimit: replace a key's run-time limits.
	SetKeyLimit struct {
		From *messages.PID
		Msg  *messages.SetKeyLimit
	}
	// GetKeyLimits is a GetKeyLimits: the effective limits.
	GetKeyLimits struct {
		From *messages.PID
		Msg  *messages.GetKeyLimits
	}
)

// limitRate is l's rate part (zero: none).
func limitRate(l *messages.KeyLimitSet) KeyRate {
	return KeyRate{Calls: int(l.GetRateCalls()), Per: time.Duration(l.GetRatePerNanos())}
}

// CheckKeyLimit says why l cannot be set ("" when it can): the key's
// length, the concurrency's range, the rate.
func CheckKeyLimit(l *messages.KeyLimitSet) string {
	switch key := l.GetKey(); {
	case key == "" || len(key) > MaxKeyLen:
		return fmt.Sprintf("the key must be 1-%d bytes, e.g. tenant-a", MaxKeyLen)
	case l.GetConcurrency() < 0 || l.GetConcurrency() > MaxConcurrencyLimit:
		return fmt.Sprintf("concurrency %d is not in 0..%d (0: the flags'); give e.g. 10", l.GetConcurrency(), MaxConcurrencyLimit)
	}
	if err := limitRate(l).Validate(); err != nil {
		return err.Error()
	}
	return ""
}

// limitOf returns key's running limit: its run-time one, else the flags'.
func (k *keyIndex) limitOf(key string) int {
	if o := k.overrides[key]; o != nil && o.GetConcurrency() > 0 {
		return int(o.GetConcurrency())
	}
	return k.limits.Limit(key)
}

// rateOf returns key's rate: its run-time one, else the flags'; ok is
// false when it has none.
func (k *keyIndex) rateOf(key string) (KeyRate, bool) {
	if o := k.overrides[key]; o != nil && o.GetRateCalls() > 0 {
		return limitRate(o), true
	}
	return k.rates.Rate(key)
}

// applyKeyLimitSet replaces the key's run-time limits (both parts zero:
// removes them). The key's window follows its new rate (kept under a
// changed one, forgotten without one); its parked works are looked at
// again at the next dispatch, so a raised limit or rate lets them go.
func (k *keyIndex) applyKeyLimitSet(ev *messages.KeyLimitSet) {
	key := ev.GetKey()
	if ev.GetConcurrency() == 0 && ev.GetRateCalls() == 0 {
		delete(k.overrides, key)
	} else {
		if k.overrides == nil {
			k.overrides = make(map[string]*messages.KeyLimitSet)
		}
		k.overrides[key] = ev
	}
	k.syncWindow(key)
	if len(k.parked[key]) > 0 && !slices.Contains(k.freed, key) {
		k.freed = append(k.freed, key)
	}
}

// limitsState returns the run-time limits for a snapshot, sorted by key.
func (k *keyIndex) limitsState() []*messages.KeyLimitSet {
	out := make([]*messages.KeyLimitSet, 0, len(k.overrides))
	for _, o := range k.overrides { // sorted below
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b *messages.KeyLimitSet) int { return strings.Compare(a.GetKey(), b.GetKey()) })
	return out
}

// KeyLimits returns the effective limits: the default (key ""), then every
// key with limits of its own, run-time or flag, sorted by key.
func (s *WorkState) KeyLimits(conc ConcurrencyLimits) []*messages.KeyLimitState {
	k := &s.keys
	k.limits = conc
	def := &messages.KeyLimitState{Concurrency: int64(max(conc.Default, 1)), ConcurrencySource: LimitDefault}
	if r := k.rates.Default; !r.IsZero() {
		def.RateCalls, def.RatePerNanos, def.RateSource = int64(r.Calls), int64(r.Per), LimitDefault
	}
	keys := make([]string, 0, len(conc.PerKey)+len(k.rates.PerKey)+len(k.overrides))
	for key := range conc.PerKey { // sorted below
		keys = append(keys, key)
	}
	for key := range k.rates.PerKey { // sorted below
		keys = append(keys, key)
	}
	for key := range k.overrides { // sorted below
		keys = append(keys, key)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	out := []*messages.KeyLimitState{def}
	for _, key := range keys {
		if key == "" {
			continue
		}
		st := &messages.KeyLimitState{Key: key, Concurrency: int64(k.limitOf(key)), ConcurrencySource: LimitDefault}
		o := k.overrides[key]
		switch {
		case o != nil && o.GetConcurrency() > 0:
			st.ConcurrencySource = LimitRuntime
		case conc.PerKey[key] > 0:
			st.ConcurrencySource = LimitFlag
		}
		if r, ok := k.rateOf(key); ok {
			st.RateCalls, st.RatePerNanos, st.RateSource = int64(r.Calls), int64(r.Per), LimitDefault
			switch {
			case o != nil && o.GetRateCalls() > 0:
				st.RateSource = LimitRuntime
			case !k.rates.PerKey[key].IsZero():
				st.RateSource = LimitFlag
			}
		}
		out = append(out, st)
	}
	return out
}

// onSetKeyLimit journals a key's run-time limits (KeyLimitSet, applied at
// once: a lowered limit holds the next hand-out already) and answers with
// the effective limits once it is durable. The key must fall on this
// master's shard: its works live there (keys.go).
func (m *Master) onSetKeyLimit(now time.Time, in SetKeyLimit) {
	if !m.serving(now) {
		m.reply(in.From, &messages.KeyLimitList{Unavailable: true, Reason: "master: recovering from the journal; retry later"}, false)
		return
	}
	l := in.Msg.GetLimit()
	if why := CheckKeyLimit(l); why != "" {
		m.reply(in.From, &messages.KeyLimitList{Reason: why}, false)
		return
	}
	if m.cfg.Shards > 1 {
		if k := routecore.ShardOf(l.GetKey(), m.cfg.Shards); k != m.cfg.Shard {
			m.reply(in.From, &messages.KeyLimitList{Reason: fmt.Sprintf(
				"master: key %q is on shard %d of %d, this is shard %d; ask that shard's master", l.GetKey(), k, m.cfg.Shards, m.cfg.Shard)}, false)
			return
		}
	}
	ev := &messages.KeyLimitSet{Key: l.GetKey(), Concurrency: l.GetConcurrency(), RateCalls: l.GetRateCalls(),
		RatePerNanos: l.GetRatePerNanos(), AtUnixNano: now.UnixNano()}
	m.persist(ev)
	m.log(slog.LevelInfo, "key limits set", "key", ev.GetKey(), "concurrency", ev.GetConcurrency(),
		"rate", limitRate(ev).String())
	m.notifyWorkers(now)
	m.reply(in.From, &messages.KeyLimitList{Limits: m.state.KeyLimits(m.cfg.Concurrency)}, true)
}

func (m *Master) onGetKeyLimits(now time.Time, in GetKeyLimits) {
	if !m.serving(now) {
		m.reply(in.From, &messages.KeyLimitList{Unavailable: true, Reason: "master: recovering from the journal; retry later"}, false)
		return
	}
	m.reply(in.From, &messages.KeyLimitList{Limits: m.state.KeyLimits(m.cfg.Concurrency)}, true)
}
