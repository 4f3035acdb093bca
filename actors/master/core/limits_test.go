package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/messages"
)

// setLimit steps a SetKeyLimit from frontend, makes it durable and returns
// the effects and the list the master answered with.
func setLimit(h *harness, key string, conc int64, rate KeyRate) ([]effect.Effect, *messages.KeyLimitList) {
	effs := h.step(SetKeyLimit{From: frontend, Msg: &messages.SetKeyLimit{Limit: &messages.KeyLimitSet{
		Key: key, Concurrency: conc, RateCalls: int64(rate.Calls), RatePerNanos: int64(rate.Per)}}})
	all := append(effs, h.durable(effs)...)
	for _, msg := range sentTo(all, frontend, true) {
		if l, ok := msg.(*messages.KeyLimitList); ok {
			return all, l
		}
	}
	h.t.Fatalf("no KeyLimitList answered")
	return nil, nil
}

// TestKeyLimitsAtRunTime: a key's limits set at run time win over the
// flags, take effect at the next hand-out, preempt nothing when lowered,
// fall back to the flags when removed, and are kept by replay and
// snapshots; bad ones are refused with what is wrong and an example.
func TestKeyLimitsAtRunTime(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Concurrency = ConcurrencyLimits{Default: 1}
	submit := func(h *harness, ws ...*messages.Work) (journal []proto.Message) {
		for _, w := range ws {
			effs := h.step(Submit{From: frontend, Work: w})
			journal = append(journal, events(effs)...)
			h.durable(effs)
		}
		return journal
	}
	a := func(ids ...string) []*messages.Work {
		out := make([]*messages.Work, len(ids))
		for i, id := range ids {
			out[i] = keyedWork(id, "a")
		}
		return out
	}

	tests := []struct {
		name string
		run  func(t *testing.T, h *harness)
	}{
		{"RaisingTheLimitLetsParkedWorksGo", func(t *testing.T, h *harness) {
			submit(h, a("a1", "a2", "a3")...)
			require.Equal(t, []string{"a1"}, h.handOut(request(worker1, 10), worker1), "the flags' default of 1")
			require.Equal(t, uint64(2), h.m.State().KeyLimitHeld())
			require.Equal(t, 1, h.m.State().KeysHeld())
			effs, l := setLimit(h, "a", 3, KeyRate{})
			require.Empty(t, l.GetReason())
			require.Equal(t, []string{"a2", "a3"}, handedOut(append(effs, h.durable(h.step(request(worker1, 10)))...), worker1))
			require.Zero(t, h.m.State().KeysHeld())
		}},
		{"LoweringPreemptsNothingAndHoldsUntilUnder", func(t *testing.T, h *harness) {
			setLimit(h, "a", 3, KeyRate{})
			submit(h, a("a1", "a2", "a3", "a4")...)
			require.Equal(t, []string{"a1", "a2", "a3"}, h.handOut(request(worker1, 10), worker1))
			setLimit(h, "a", 1, KeyRate{})
			require.Empty(t, h.handOut(request(worker1, 10), worker1), "3 run, over the new limit of 1: none preempted, none more")
			h.durable(h.step(done(worker1, "a1")))
			require.Empty(t, h.handOut(request(worker1, 10), worker1), "2 run")
			h.durable(h.step(done(worker1, "a2")))
			require.Empty(t, h.handOut(request(worker1, 10), worker1), "1 runs: at the limit")
			h.durable(h.step(done(worker1, "a3")))
			require.Equal(t, []string{"a4"}, h.handOut(request(worker1, 10), worker1), "under the limit")
		}},
		{"ARateAtRunTime", func(t *testing.T, h *harness) {
			setLimit(h, "a", 10, KeyRate{Calls: 2, Per: time.Second})
			submit(h, a("a1", "a2", "a3")...)
			t0 := h.now
			require.Equal(t, []string{"a1", "a2"}, h.handOut(request(worker1, 10), worker1))
			h.now = t0.Add(time.Second - time.Nanosecond)
			require.Empty(t, h.handOut(request(worker1, 10), worker1))
			h.now = t0.Add(time.Second)
			require.Equal(t, []string{"a3"}, h.handOut(request(worker1, 10), worker1))
		}},
		{"RemovingFallsBackToTheFlags", func(t *testing.T, h *harness) {
			setLimit(h, "a", 5, KeyRate{Calls: 1, Per: time.Hour})
			_, l := setLimit(h, "a", 0, KeyRate{})
			require.Equal(t, []*messages.KeyLimitState{{Concurrency: 1, ConcurrencySource: LimitDefault}}, l.GetLimits())
			submit(h, a("a1", "a2")...)
			require.Equal(t, []string{"a1"}, h.handOut(request(worker1, 10), worker1), "the default of 1, no rate")
			h.durable(h.step(done(worker1, "a1")))
			require.Equal(t, []string{"a2"}, h.handOut(request(worker1, 10), worker1), "the hour's rate is gone")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := serving(t, cfg)
			h.step(register(worker1))
			tt.run(t, h)
		})
	}

	t.Run("SourcesAreMarked", func(t *testing.T) {
		t.Parallel()
		c := cfg
		c.Concurrency = ConcurrencyLimits{Default: 2, PerKey: map[string]int{"b": 4}}
		c.KeyRates = KeyRates{PerKey: map[string]KeyRate{"b": {Calls: 5, Per: time.Second}}}
		h := serving(t, c)
		_, l := setLimit(h, "a", 0, KeyRate{Calls: 3, Per: time.Minute})
		require.Equal(t, []*messages.KeyLimitState{
			{Concurrency: 2, ConcurrencySource: LimitDefault},
			{Key: "a", Concurrency: 2, ConcurrencySource: LimitDefault, RateCalls: 3, RatePerNanos: int64(time.Minute), RateSource: LimitRuntime},
			{Key: "b", Concurrency: 4, ConcurrencySource: LimitFlag, RateCalls: 5, RatePerNanos: int64(time.Second), RateSource: LimitFlag},
		}, l.GetLimits())
		_, l = setLimit(h, "b", 1, KeyRate{})
		require.Equal(t, &messages.KeyLimitState{Key: "b", Concurrency: 1, ConcurrencySource: LimitRuntime,
			RateCalls: 5, RatePerNanos: int64(time.Second), RateSource: LimitFlag}, l.GetLimits()[2], "run-time concurrency wins, the flag's rate stays")
	})

	t.Run("ReplayAndSnapshotsKeepThem", func(t *testing.T) {
		t.Parallel()
		h := serving(t, cfg)
		h.step(register(worker1))
		effs, _ := setLimit(h, "a", 2, KeyRate{Calls: 2, Per: time.Second})
		journal := events(effs)
		journal = append(journal, submit(h, a("a1", "a2", "a3")...)...)
		effs = h.step(request(worker1, 10))
		require.Equal(t, []string{"a1", "a2"}, handedOut(h.durable(effs), worker1))
		journal = append(journal, events(effs)...)
		fin := h.step(done(worker1, "a1"))
		journal = append(journal, events(fin)...)
		h.durable(fin)
		journal = append(journal, &messages.MasterRecovered{AtUnixNano: h.now.UnixNano()})
		for name, st := range replayedWithRates(t, KeyRates{}, journal) {
			n := &harness{t: t, m: New(cfg), now: h.now}
			n.m.Reset(st)
			n.step(Serving{Until: forever})
			n.step(Recovered{})
			n.step(register(worker2))
			lim := n.m.State().KeyLimits(cfg.Concurrency)
			require.Len(t, lim, 2, name)
			require.Equal(t, int64(2), lim[1].GetConcurrency(), name)
			require.Equal(t, LimitRuntime, lim[1].GetRateSource(), name)
			require.Empty(t, n.handOut(request(worker2, 10), worker2), "%s: the run-time rate's window is full", name)
			n.now = n.now.Add(time.Second)
			// a2's requeued run keeps its slot (its worker may still run
			// it), so with the run-time limit of 2 only a2 goes again.
			require.Equal(t, []string{"a2"}, n.handOut(request(worker2, 10), worker2), "%s: the run-time limit of 2 holds", name)
		}
	})

	t.Run("BadLimitsAreRefused", func(t *testing.T) {
		t.Parallel()
		h := serving(t, cfg)
		for _, tt := range []struct {
			set  *messages.KeyLimitSet
			want string
		}{
			{&messages.KeyLimitSet{Concurrency: 1}, "the key must be 1-256 bytes, e.g. tenant-a"},
			{&messages.KeyLimitSet{Key: "a", Concurrency: -1}, "concurrency -1 is not in 0..1000000 (0: the flags'); give e.g. 10"},
			{&messages.KeyLimitSet{Key: "a", RateCalls: 0, RatePerNanos: int64(time.Second)}, "master: key rate count 0 is not in 1..100000; give e.g. 10/s"},
			{&messages.KeyLimitSet{Key: "a", RateCalls: 5}, "master: key rate period 0s is not positive; give e.g. 10/s"},
		} {
			effs := h.step(SetKeyLimit{From: frontend, Msg: &messages.SetKeyLimit{Limit: tt.set}})
			require.Empty(t, events(effs))
			l, ok := sentTo(effs, frontend, true)[0].(*messages.KeyLimitList)
			require.True(t, ok)
			require.Equal(t, tt.want, l.GetReason())
		}
	})
}
