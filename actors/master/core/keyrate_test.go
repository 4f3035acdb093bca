package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/messages"
)

// wakeTimers returns the At of the wake timers among effs.
func wakeTimers(effs []effect.Effect) []time.Time {
	var out []time.Time
	for _, e := range effs {
		if t, ok := e.(effect.Timer); ok && len(t.Name) >= len(wakeTimer) && t.Name[:len(wakeTimer)] == wakeTimer {
			out = append(out, t.At.UTC())
		}
	}
	return out
}

// TestKeyRates: a concurrency key's rate holds in every sliding window of
// its period; a key over its rate is parked (it blocks neither its job
// type nor other keys) and woken when its window opens; rate and
// concurrency limits combine; a failover keeps the window, even when the
// new master's clock runs ahead of the old one's.
func TestKeyRates(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Concurrency = ConcurrencyLimits{Default: 100}
	cfg.KeyRates = KeyRates{PerKey: map[string]KeyRate{"a": {Calls: 2, Per: time.Second}}}

	submit := func(h *harness, ws ...*messages.Work) (journal []proto.Message) {
		for _, w := range ws {
			effs := h.step(Submit{From: frontend, Work: w})
			journal = append(journal, events(effs)...)
			h.durable(effs)
		}
		return journal
	}

	t.Run("TheWindowHoldsAndParkedWorksWakeWhenItOpens", func(t *testing.T) {
		t.Parallel()
		h := serving(t, cfg)
		h.step(register(worker1))
		submit(h, keyedWork("a1", "a"), keyedWork("a2", "a"), keyedWork("a3", "a"), keyedWork("a4", "a"),
			keyedWork("a5", "a"), keyedWork("b1", "b"), work("plain", nil))
		t0 := h.now
		effs := h.step(request(worker1, 10))
		got := append(handedOut(effs, worker1), handedOut(h.durable(effs), worker1)...)
		require.Equal(t, []string{"a1", "a2", "b1", "plain"}, got, "two of a, and the others pass the parked ones")
		require.Contains(t, wakeTimers(effs), t0.Add(time.Second), "woken when the window opens")
		require.Equal(t, uint64(3), h.m.State().KeyRateHeld(), "a3, a4 and a5 held back")
		require.Equal(t, []KeyCount{{Key: "a", Running: 2, Waiting: 3}, {Key: "b", Running: 1}}, h.m.State().KeyRunning())

		h.now = t0.Add(time.Second - time.Nanosecond)
		require.Empty(t, h.handOut(request(worker1, 10), worker1), "a nanosecond before the window opens")
		h.now = t0.Add(time.Second)
		require.Equal(t, []string{"a3", "a4"}, h.handOut(request(worker1, 10), worker1), "at the second, two more")
		h.now = t0.Add(1500 * time.Millisecond)
		require.Empty(t, h.handOut(request(worker1, 10), worker1))
		h.now = t0.Add(2 * time.Second)
		require.Equal(t, []string{"a5"}, h.handOut(request(worker1, 10), worker1))
	})

	t.Run("ASpreadWindowSlides", func(t *testing.T) {
		t.Parallel()
		h := serving(t, cfg)
		h.step(register(worker1))
		submit(h, keyedWork("a1", "a"), keyedWork("a2", "a"), keyedWork("a3", "a"))
		t0 := h.now
		require.Equal(t, []string{"a1"}, h.handOut(request(worker1, 1), worker1))
		h.now = t0.Add(600 * time.Millisecond)
		require.Equal(t, []string{"a2"}, h.handOut(request(worker1, 1), worker1))
		h.now = t0.Add(999 * time.Millisecond)
		effs := h.step(request(worker1, 1))
		require.Empty(t, handedOut(h.durable(effs), worker1), "[t0, t0+1s) holds a1 and a2")
		require.Contains(t, wakeTimers(effs), t0.Add(time.Second))
		h.now = t0.Add(time.Second)
		require.Equal(t, []string{"a3"}, h.handOut(request(worker1, 1), worker1), "the window slid past a1")
	})

	t.Run("RateAndConcurrencyCombine", func(t *testing.T) {
		t.Parallel()
		c := cfg
		c.Concurrency = ConcurrencyLimits{Default: 1}
		h := serving(t, c)
		h.step(register(worker1))
		submit(h, keyedWork("a1", "a"), keyedWork("a2", "a"), keyedWork("a3", "a"))
		require.Equal(t, []string{"a1"}, h.handOut(request(worker1, 10), worker1), "the limit of 1 holds first")
		h.durable(h.step(done(worker1, "a1")))
		require.Equal(t, []string{"a2"}, h.handOut(request(worker1, 10), worker1))
		h.durable(h.step(done(worker1, "a2")))
		require.Empty(t, h.handOut(request(worker1, 10), worker1), "a free slot, but the rate's window is full")
		h.now = h.now.Add(time.Second)
		require.Equal(t, []string{"a3"}, h.handOut(request(worker1, 10), worker1))
	})

	t.Run("AFailoverKeepsTheWindow", func(t *testing.T) {
		t.Parallel()
		for _, ahead := range []time.Duration{0, 700 * time.Millisecond, -700 * time.Millisecond} {
			t.Run(fmt.Sprint("ahead", ahead), func(t *testing.T) {
				t.Parallel()
				h := serving(t, cfg)
				h.step(register(worker1))
				journal := submit(h, keyedWork("a1", "a"), keyedWork("a2", "a"), keyedWork("a3", "a"))
				t0 := h.now
				effs := h.step(request(worker1, 10))
				require.Equal(t, []string{"a1", "a2"}, handedOut(h.durable(effs), worker1))
				journal = append(journal, events(effs)...)
				fin := h.step(done(worker1, "a1"))
				journal = append(journal, events(fin)...)
				h.durable(fin)
				// A new master takes over 100 ms later on true time; its
				// clock reads ahead of the old one's by ahead.
				rec := t0.Add(100*time.Millisecond + ahead)
				journal = append(journal, &messages.MasterRecovered{AtUnixNano: rec.UnixNano()})
				for name, st := range replayedWithRates(t, cfg.KeyRates, journal) {
					n := &harness{t: t, m: New(cfg), now: rec}
					n.m.Reset(st)
					n.step(Serving{Until: forever})
					n.step(Recovered{})
					n.step(register(worker2))
					effs := n.step(request(worker2, 10))
					require.Empty(t, handedOut(n.durable(effs), worker2), "%s: the window is still full", name)
					// The new master cannot tell the 100 ms that passed
					// from its clock's lead: it shifts the window by both
					// (the newest hand-out counts as at the recovery), so
					// it opens a second after the recovery. A clock behind
					// shifts nothing and only waits longer.
					open := t0.Add(time.Second + max(100*time.Millisecond+ahead, 0))
					if ahead >= 0 {
						require.Contains(t, wakeTimers(effs), open, name)
					}
					n.now = open.Add(-time.Nanosecond)
					require.Empty(t, n.handOut(request(worker2, 10), worker2), name)
					n.now = open
					require.Len(t, n.handOut(request(worker2, 10), worker2), 2, "%s: a2 (requeued) and a3", name)
				}
			})
		}
	})

	t.Run("APlantedForgettingLetsABurstThrough", func(t *testing.T) {
		t.Parallel()
		c := cfg
		c.Planted = KeyRateForgotten
		h := serving(t, c)
		h.step(register(worker1))
		journal := submit(h, keyedWork("a1", "a"), keyedWork("a2", "a"), keyedWork("a3", "a"))
		effs := h.step(request(worker1, 10))
		require.Len(t, handedOut(h.durable(effs), worker1), 2)
		journal = append(journal, events(effs)...)
		st := NewWorkState()
		st.SetKeyRates(c.KeyRates)
		st.plant(c.Planted)
		for _, ev := range append(journal, &messages.MasterRecovered{AtUnixNano: h.now.UnixNano()}) {
			require.NoError(t, st.Apply(ev))
		}
		require.Nil(t, st.Snapshot().GetKeys().GetStarts(), "the window is gone")
	})

	t.Run("OldWindowsAreDropped", func(t *testing.T) {
		t.Parallel()
		s := NewWorkState()
		s.SetKeyRates(cfg.KeyRates)
		for _, ev := range []proto.Message{
			&messages.WorkAccepted{Work: keyedWork("a1", "a"), AtUnixNano: 1},
			&messages.WorkStarted{WorkId: "a1", WorkerId: "w", AtUnixNano: 2},
			&messages.FinishedForgotten{BeforeUnixNano: 2 + int64(time.Second) - 1},
		} {
			require.NoError(t, s.Apply(ev))
		}
		require.Len(t, s.Snapshot().GetKeys().GetStarts(), 1, "still inside its period")
		require.NoError(t, s.Apply(&messages.FinishedForgotten{BeforeUnixNano: 2 + int64(time.Second)}))
		require.Nil(t, s.Snapshot().GetKeys().GetStarts())
	})
}

func TestKeyRateValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, KeyRate{}.Validate())
	require.NoError(t, KeyRate{Calls: 10, Per: time.Second}.Validate())
	require.Error(t, KeyRate{Calls: 0, Per: time.Second}.Validate())
	require.Error(t, KeyRate{Calls: 1}.Validate())
	require.Error(t, KeyRate{Calls: MaxKeyRateCalls + 1, Per: time.Second}.Validate())
}

// replayedWithRates is replayed with the master's key rates set before the
// replay, as a master's Reset does.
func replayedWithRates(t *testing.T, rates KeyRates, evs []proto.Message) map[string]*WorkState {
	t.Helper()
	s := NewWorkState()
	s.SetKeyRates(rates)
	for _, ev := range evs {
		require.NoError(t, s.Apply(ev))
	}
	snap, err := RestoreWorkState(s.Snapshot())
	require.NoError(t, err)
	wire, _ := s.PackedWire(SnapshotSize{})
	var packed messages.PackedMasterSnapshot
	require.NoError(t, proto.Unmarshal(wire, &packed))
	fromWire, err := RestoreSnapshot(&packed)
	require.NoError(t, err)
	return map[string]*WorkState{"replay": s, "snapshot": snap, "packed": fromWire}
}
