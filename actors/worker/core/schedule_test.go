package core_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/actors/worker/core"
	"github.com/foreman-actors/foreman/messages"
)

// schedule drives one core through a seeded random schedule of inputs (work
// and bundles, some waited, duplicates; jobs ending or failing; waiters
// answering, leaving or gone; timers firing; Acks; a Drain) and checks the
// protocol's invariants after every step. It returns the rendered effects.
func schedule(t *testing.T, seed uint64) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	window := 1 + rng.IntN(4)
	w := core.New(config(func(c *core.Config) {
		c.Window, c.Prefetch, c.ResultHold = window, rng.IntN(3), time.Duration(rng.IntN(2))*time.Millisecond
		c.NodeGone = func(string) bool { return seed%3 == 0 }
	}))
	at := t0
	var (
		trace   []string
		running = map[int]*core.Run{}    // slot -> its Run, until RunDone
		asking  = map[int]core.Ask{}     // slot -> the passage being watched
		armed   = map[string]time.Time{} // timers
		yields  []string
		offered = map[string]bool{}
		ended   = map[string]bool{} // reported done or failed
		unacked []string
		stopped bool
	)
	apply := func(effs []effect.Effect) {
		trace = append(trace, render(at, effs)...)
		for _, e := range effs {
			switch e := e.(type) {
			case *core.Run:
				require.NotContains(t, running, e.Slot, "seed %d: a Run into a busy slot", seed)
				for _, r := range running {
					require.NotEqual(t, r.Work.GetWorkId(), e.Work.GetWorkId(), "seed %d: %s runs twice", seed, r.Work.GetWorkId())
				}
				require.Less(t, e.Slot, window)
				require.False(t, stopped, "seed %d: a Run after Stop", seed)
				r := *e
				running[e.Slot] = &r
			case core.Ask:
				asking[e.Slot] = e
			case core.Unwatch:
				if a, ok := asking[e.Slot]; ok && a.Seq == e.Seq {
					delete(asking, e.Slot)
				}
			case core.Cancel:
				require.Contains(t, running, e.Slot, "seed %d: Cancel of an idle slot", seed)
				require.ErrorIs(t, e.Cause, core.ErrCallerGone)
			case effect.Timer:
				require.False(t, e.At.Before(at), "seed %d: timer %s in the past", seed, e.Name)
				armed[e.Name] = e.At
			case effect.StopTimer:
				delete(armed, e.Name)
			case core.Yield:
				yields = append(yields, e.Name)
			case effect.Send:
				switch m := e.Msg.(type) {
				case *messages.WorkIsDone:
					ended[m.GetWorkId()] = true
					if !slices.Contains(unacked, m.GetWorkId()) {
						unacked = append(unacked, m.GetWorkId())
					}
				case *messages.WorkIsDoneBatch:
					for _, d := range m.GetDone() {
						ended[d.GetWorkId()] = true
						if !slices.Contains(unacked, d.GetWorkId()) {
							unacked = append(unacked, d.GetWorkId())
						}
					}
				case *messages.WorkFailed:
					ended[m.GetWorkId()] = true
				}
			case core.Halt:
				stopped = true
			}
		}
	}
	apply(w.Start(at))
	next := 0
	newWork := func() *messages.Work {
		id := fmt.Sprintf("w%03d", next)
		if next > 0 && rng.IntN(10) == 0 {
			id = fmt.Sprintf("w%03d", rng.IntN(next)) // a duplicate
		} else {
			next++
		}
		m := &messages.Work{WorkId: id, JobType: "echo"}
		if rng.IntN(3) == 0 {
			m.Waiter = waiterPID
		}
		offered[id] = true
		return m
	}
	for range 300 {
		at = at.Add(time.Duration(rng.IntN(400)) * time.Millisecond)
		switch k := rng.IntN(10); {
		case k == 0 && len(yields) > 0:
			name := yields[0]
			yields = yields[1:]
			apply(w.Fired(at, name))
		case k == 1:
			apply(w.Work(at, newWork()))
		case k == 2:
			apply(w.Bundle(at, []*messages.Work{newWork(), newWork()}))
		case k == 3 && len(running) > 0:
			slots := sortedKeys(running)
			s := slots[rng.IntN(len(slots))]
			r := running[s]
			delete(running, s)
			var err error
			if rng.IntN(4) == 0 {
				err = fmt.Errorf("job failed")
			}
			apply(w.RunDone(at, s, r.Work.GetWorkId(), []byte("r"), err))
		case k == 4 && len(asking) > 0:
			slots := sortedKeys(asking)
			a := asking[slots[rng.IntN(len(slots))]]
			kind := []core.AnswerKind{core.StillInterested, core.NoLongerInterested, core.DeadLetter}[rng.IntN(3)]
			apply(w.Interest(at, core.Answer{Slot: a.Slot, Seq: a.Seq, WorkID: a.WorkID, Kind: kind, Gone: rng.IntN(2) == 0}))
		case k == 5 && len(armed) > 0:
			names := sortedKeys(armed)
			name := names[rng.IntN(len(names))]
			if armed[name].After(at) {
				at = armed[name]
			}
			delete(armed, name)
			apply(w.Fired(at, name))
		case k == 6 && len(unacked) > 0:
			i := rng.IntN(len(unacked))
			id := unacked[i]
			unacked = append(unacked[:i], unacked[i+1:]...)
			apply(w.Ack(at, id))
		case k == 7 && rng.IntN(20) == 0:
			apply(w.Drain(at))
		case k == 8:
			apply(w.WorkIsReady(at, masterPID))
		}
	}
	apply(w.Stop(at))
	// Every work offered was reported, done or failed (Stop hands back what
	// had not ended), and nothing runs into a stopped worker.
	for id := range offered {
		require.True(t, ended[id], "seed %d: work %s was never reported", seed, id)
	}
	require.Empty(t, render(at, w.Work(at, newWork()))[1:], "seed %d: a stopped worker only hands work back", seed)
	return trace
}

func sortedKeys[K int | string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestWorkerCoreRandomSchedules runs 300 seeded schedules; the same seed
// gives the same effects.
func TestWorkerCoreRandomSchedules(t *testing.T) {
	t.Parallel()
	for seed := range uint64(300) {
		first := schedule(t, seed)
		if seed%50 == 0 {
			require.Equal(t, strings.Join(first, "\n"), strings.Join(schedule(t, seed), "\n"), "seed %d replays differently", seed)
		}
	}
}
