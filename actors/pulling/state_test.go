package pulling

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testConfig() StateConfig {
	cfg := DefaultStateConfig()
	cfg.BatchSize = 4
	cfg.AckTimeout = 10 * time.Second
	return cfg
}

func newTestState(t *testing.T, cfg StateConfig) *State[string] {
	t.Helper()
	s, err := NewState[string](cfg)
	require.NoError(t, err)
	return s
}

func items(ds []Delivery[string]) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%s:%s#%d", d.Worker, d.Item, d.Attempt))
	}
	return out
}

func TestNewStateRejectsBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*StateConfig)
	}{
		{name: "BatchSize", change: func(c *StateConfig) { c.BatchSize = 0 }},
		{name: "MaxWindow", change: func(c *StateConfig) { c.MaxWindow = 0 }},
		{name: "AckTimeout", change: func(c *StateConfig) { c.AckTimeout = 0 }},
		{name: "MaxAttempts", change: func(c *StateConfig) { c.MaxAttempts = 0 }},
		{name: "MaxFetchFailures", change: func(c *StateConfig) { c.MaxFetchFailures = -1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := DefaultStateConfig()
			tt.change(&cfg)
			_, err := NewState[int](cfg)
			require.ErrorIs(t, err, ErrInvalidConfig)
		})
	}
}

// Reference: seed 000, "When a master receives a collection of work (we call
// it Epic) it notifies all workers by sending a broadcast message
// WorkAvailable ... The cycle ends when there is no more work available, as
// the master simply doesn't respond any more."
func TestStateSeedProtocol(t *testing.T) {
	t.Parallel()
	s := newTestState(t, testConfig())
	require.Empty(t, s.Register("a", 1, t0).Deliver)
	s.Register("b", 1, t0)

	// Between Epics requests are not answered.
	require.Empty(t, s.Request("a", 1, t0).Deliver)

	eff, err := s.StartEpic(3, t0)
	require.NoError(t, err)
	require.Equal(t, []WorkerID{"a", "b"}, eff.Announce, "WorkAvailable to every worker")
	require.Equal(t, 4, eff.Fetch, "first batch fetched lazily")

	// A second Epic is refused while one runs.
	_, err = s.StartEpic(1, t0)
	require.ErrorIs(t, err, ErrBusy)

	eff = s.Request("a", 1, t0)
	require.Empty(t, eff.Deliver, "nothing fetched yet: the request waits")
	eff = s.Fetched(1, []string{"x", "y", "z"}, nil, t0)
	require.Equal(t, []string{"a:x#1"}, items(eff.Deliver), "one item per GimmeWork")
	require.Zero(t, eff.Fetch, "two items buffered: enough")

	eff = s.Request("b", 1, t0)
	require.Equal(t, []string{"b:y#1"}, items(eff.Deliver))
	require.Equal(t, 4, eff.Fetch, "buffer below half a batch: prefetch")
	eff = s.Done("a", eff.Deliver[0].ID-1, "", 1, t0)
	require.Equal(t, []string{"a:z#1"}, items(eff.Deliver), "confirm + ask again")

	eff = s.Fetched(1, nil, nil, t0)
	require.False(t, eff.Finished, "items still in flight")
	eff = s.Done("b", 2, "", 1, t0)
	require.Empty(t, eff.Deliver, "nothing left: silence")
	eff = s.Done("a", 3, "", 1, t0)
	require.True(t, eff.Finished)
	require.NoError(t, eff.Err)

	st := s.Stats()
	require.Equal(t, Stats{Epic: 1, HandedOut: 3, Confirmed: 3, Remaining: 0, Workers: 2}, st)
	_, err = s.StartEpic(-1, t0)
	require.NoError(t, err, "the next Epic is accepted once the first is done")
}

func TestStateTable(t *testing.T) {
	t.Parallel()
	type run func(t *testing.T, s *State[string])
	// start registers workers a (window 1) and b (window 2), starts an Epic
	// of 3 items and fetches them.
	start := func(t *testing.T, s *State[string]) {
		s.Register("a", 1, t0)
		s.Register("b", 2, t0)
		_, err := s.StartEpic(3, t0)
		require.NoError(t, err)
		s.Fetched(1, []string{"x", "y", "z"}, nil, t0)
	}
	tests := []struct {
		name string
		run  run
	}{
		{name: "WindowCapsCredit", run: func(t *testing.T, s *State[string]) {
			start(t, s)
			eff := s.Request("a", 5, t0)
			require.Equal(t, []string{"a:x#1"}, items(eff.Deliver), "window 1 even if 5 asked")
			eff = s.Request("b", 5, t0)
			require.Equal(t, []string{"b:y#1", "b:z#1"}, items(eff.Deliver))
			require.Equal(t, 3, s.Stats().InFlight)
		}},
		{name: "WorkerGoneRedelivers", run: func(t *testing.T, s *State[string]) {
			start(t, s)
			s.Request("b", 2, t0)
			s.Request("a", 1, t0)
			eff := s.WorkerGone("b", t0)
			require.Empty(t, eff.Deliver, "a is busy")
			require.Equal(t, uint64(2), s.Stats().Redelivered)
			eff = s.Done("a", 3, "", 1, t0)
			require.Equal(t, []string{"a:x#2"}, items(eff.Deliver), "b's first item goes to a")
		}},
		{name: "WorkerGoneAnnouncesToIdle", run: func(t *testing.T, s *State[string]) {
			start(t, s)
			s.Request("b", 1, t0)
			s.Register("c", 1, t0)
			eff := s.WorkerGone("b", t0)
			require.ElementsMatch(t, []WorkerID{"a", "c"}, eff.Announce, "idle workers told WorkAvailable")
		}},
		{name: "WaitingWorkerServedOnRedelivery", run: func(t *testing.T, s *State[string]) {
			start(t, s)
			s.Request("b", 2, t0)
			s.Request("a", 1, t0) // z
			s.Done("a", 3, "", 1, t0)
			// a now waits (silence); b dies: a is served at once.
			eff := s.WorkerGone("b", t0)
			require.Equal(t, []string{"a:x#2"}, items(eff.Deliver))
		}},
		{name: "TimeoutRedelivers", run: func(t *testing.T, s *State[string]) {
			start(t, s)
			s.Request("a", 1, t0)
			dl, ok := s.NextDeadline()
			require.True(t, ok)
			require.Equal(t, t0.Add(10*time.Second), dl)
			require.Empty(t, s.Expire(dl.Add(-time.Nanosecond)).Announce, "not yet due")
			s.Request("b", 1, t0)
			eff := s.Expire(dl)
			require.Empty(t, eff.Deliver, "nobody asks")
			require.Equal(t, []WorkerID{"a", "b"}, eff.Announce, "idle workers told WorkAvailable")
			eff = s.Request("a", 1, dl)
			require.Equal(t, []string{"a:x#2"}, items(eff.Deliver), "re-delivered first")
			require.Equal(t, uint64(2), s.Stats().Redelivered, "x and y were both due")
		}},
		{name: "LateConfirmationAccepted", run: func(t *testing.T, s *State[string]) {
			start(t, s)
			s.Request("a", 1, t0)
			s.Expire(t0.Add(time.Minute))
			s.Request("b", 1, t0.Add(time.Minute)) // x again, to b
			s.Done("a", 1, "", 0, t0.Add(time.Minute))
			require.Equal(t, uint64(1), s.Stats().Confirmed)
			require.Equal(t, 0, s.Stats().InFlight, "b's copy is no longer tracked")
			s.Done("b", 1, "", 0, t0.Add(time.Minute))
			require.Equal(t, uint64(1), s.Stats().Confirmed, "confirmed once")
		}},
		{name: "ErrorRetriedThenDropped", run: func(t *testing.T, s *State[string]) {
			start(t, s)
			s.Request("a", 1, t0)
			var eff Effects[string]
			for range DefaultMaxAttempts - 1 {
				eff = s.Done("a", 1, "boom", 1, t0)
				require.Equal(t, "x", eff.Deliver[0].Item, "retried first")
			}
			eff = s.Done("a", 1, "boom", 1, t0)
			require.Equal(t, []ItemID{1}, eff.Dropped)
			require.Equal(t, uint64(1), s.Stats().Failed)
			require.Equal(t, int64(2), s.Stats().Remaining)
		}},
		{name: "ErrorFromFormerHolderIgnored", run: func(t *testing.T, s *State[string]) {
			start(t, s)
			s.Request("a", 1, t0)
			s.Expire(t0.Add(time.Minute))
			s.Request("b", 1, t0)
			s.Done("a", 1, "late failure", 0, t0)
			require.Equal(t, 1, s.Stats().InFlight, "b keeps working on it")
		}},
		{name: "UnknownWorkerIgnored", run: func(t *testing.T, s *State[string]) {
			start(t, s)
			require.Empty(t, s.Request("ghost", 1, t0).Deliver)
			require.Empty(t, s.WorkerGone("ghost", t0).Deliver)
		}},
		{name: "FetchErrorRetriedThenAborts", run: func(t *testing.T, s *State[string]) {
			s.Register("a", 1, t0)
			_, err := s.StartEpic(-1, t0)
			require.NoError(t, err)
			boom := errors.New("db down")
			for i := range DefaultMaxFetchFailures - 1 {
				eff := s.Fetched(1, nil, boom, t0)
				require.True(t, eff.RetryFetch, "attempt %d", i)
				require.Zero(t, s.Request("a", 1, t0).Fetch, "no fetch during back-off")
				require.Equal(t, 4, s.ResumeFetch(t0).Fetch)
			}
			eff := s.Fetched(1, nil, boom, t0)
			require.True(t, eff.Finished)
			require.ErrorIs(t, eff.Err, ErrEpicFailed)
			require.ErrorIs(t, eff.Err, boom)
			require.False(t, s.Running())
		}},
		{name: "StaleFetchIgnored", run: func(t *testing.T, s *State[string]) {
			s.Register("a", 1, t0)
			_, err := s.StartEpic(-1, t0)
			require.NoError(t, err)
			s.Abort(ErrStopped)
			_, err = s.StartEpic(-1, t0)
			require.NoError(t, err)
			s.Request("a", 1, t0)
			require.Empty(t, s.Fetched(1, []string{"old"}, nil, t0).Deliver, "answer for epic 1")
			require.Equal(t, []string{"a:new#1"}, items(s.Fetched(2, []string{"new"}, nil, t0).Deliver))
		}},
		{name: "UnknownSizeReportsMinusOne", run: func(t *testing.T, s *State[string]) {
			_, err := s.StartEpic(-1, t0)
			require.NoError(t, err)
			require.Equal(t, int64(-1), s.Stats().Remaining)
		}},
		{name: "EmptyEpicFinishes", run: func(t *testing.T, s *State[string]) {
			_, err := s.StartEpic(0, t0)
			require.NoError(t, err)
			eff := s.Fetched(1, nil, nil, t0)
			require.True(t, eff.Finished)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newTestState(t, testConfig()))
		})
	}
}

// simulate drives a State with random workers, deaths, timeouts, errors and
// duplicate confirmations, and checks the invariants against a dumb model:
// every item is confirmed at least once, no worker ever holds more than its
// window, a worker gets nothing it did not ask for, and the Epic ends.
func simulate(t *testing.T, seed uint64, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	cfg := testConfig()
	cfg.BatchSize = 1 + rng.IntN(8)
	cfg.MaxAttempts = 1_000_000 // errors are retried, never dropped, in this model
	s, err := NewState[int](cfg)
	require.NoError(t, err)

	source := make([]int, n)
	for i := range source {
		source[i] = i
	}
	type held struct {
		id   ItemID
		item int
	}
	type worker struct {
		window int
		asked  int // credit asked and not yet served (model of the worker's view)
		held   []held
	}
	workers := map[WorkerID]*worker{}
	nextWorker := 0
	confirmed := map[int]int{}
	now := t0
	pendingFetch := 0
	fetchedSoFar := 0
	timeouts := seed%2 == 1 // half of the runs let confirmations time out
	ids := func() []WorkerID {
		out := make([]WorkerID, 0, len(workers))
		for id := range workers {
			out = append(out, id)
		}
		slices.Sort(out)
		return out
	}

	var check func(eff Effects[int])
	check = func(eff Effects[int]) {
		for _, d := range eff.Deliver {
			w, ok := workers[d.Worker]
			require.True(t, ok, "delivery to unknown worker %s", d.Worker)
			require.Positive(t, w.asked, "worker %s got an item it did not ask for", d.Worker)
			w.asked--
			w.held = append(w.held, held{d.ID, d.Item})
			if !timeouts {
				require.LessOrEqual(t, len(w.held), w.window, "window exceeded")
			}
		}
		if eff.Fetch > 0 {
			require.Zero(t, pendingFetch, "two fetches at once")
			pendingFetch = eff.Fetch
		}
		for _, id := range eff.Announce {
			if w, ok := workers[id]; ok && len(w.held) < w.window {
				c := w.window - len(w.held)
				w.asked += c
				check(s.Request(id, c, now))
			}
		}
	}
	addWorker := func() {
		nextWorker++
		id := WorkerID(fmt.Sprintf("w%d", nextWorker))
		w := &worker{window: 1 + rng.IntN(3)}
		workers[id] = w
		check(s.Register(id, w.window, now))
		w.asked = w.window
		check(s.Request(id, w.window, now))
	}
	for range 1 + rng.IntN(4) {
		addWorker()
	}
	eff, err := s.StartEpic(int64(n), now)
	require.NoError(t, err)
	check(eff)

	done := false
	for step := 0; !done; step++ {
		require.Less(t, step, 200*n+1000, "epic does not end")
		var eff Effects[int]
		switch r := rng.IntN(100); {
		case pendingFetch > 0 && r < 30:
			k := min(pendingFetch, n-fetchedSoFar)
			if rng.IntN(10) == 0 {
				pendingFetch = 0
				eff = s.Fetched(1, nil, errors.New("flaky"), now)
				if eff.RetryFetch {
					check(eff)
					eff = s.ResumeFetch(now)
				}
				break
			}
			batch := source[fetchedSoFar : fetchedSoFar+k]
			fetchedSoFar += k
			pendingFetch = 0
			eff = s.Fetched(1, batch, nil, now)
		case r < 35 && len(workers) > 1:
			all := ids() // a random worker dies
			id := all[rng.IntN(len(all))]
			delete(workers, id)
			eff = s.WorkerGone(id, now)
		case r < 40 && len(workers) < 6:
			addWorker()
		case r < 45 && timeouts:
			now = now.Add(time.Duration(rng.IntN(15)) * time.Second)
			// Items the model still holds past their deadline are lost to it.
			eff = s.Expire(now)
		default:
			for _, id := range ids() {
				w := workers[id]
				if len(w.held) == 0 || rng.IntN(2) == 0 {
					continue
				}
				i := rng.IntN(len(w.held))
				h := w.held[i]
				w.held = append(w.held[:i], w.held[i+1:]...)
				msg := ""
				if rng.IntN(10) == 0 {
					msg = "transient"
				} else {
					confirmed[h.item]++
				}
				w.asked++
				eff = s.Done(id, h.id, msg, 1, now)
				if msg == "" && rng.IntN(10) == 0 { // duplicate confirmation
					check(eff)
					eff = s.Done(id, h.id, "", 0, now)
				}
				break
			}
		}
		check(eff)
		done = eff.Finished || !s.Running()
		if !done && len(workers) == 0 {
			addWorker()
		}
	}
	require.Equal(t, n, fetchedSoFar)
	for i := range n {
		require.GreaterOrEqual(t, confirmed[i], 1, "item %d never confirmed (seed %d)", i, seed)
	}
	st := s.Stats()
	require.Equal(t, uint64(n), st.Confirmed, "each item counted once")
	require.Equal(t, int64(0), st.Remaining)
}

// TestStateEveryItemConfirmed is the property test: under random worker
// deaths, timeouts, transient errors and duplicates, every item is confirmed
// at least once and the Epic ends.
func TestStateEveryItemConfirmed(t *testing.T) {
	t.Parallel()
	for seed := range uint64(300) {
		simulate(t, seed, 1+int(seed%50))
	}
}

func FuzzState(f *testing.F) {
	f.Add(uint64(1), uint8(10))
	f.Add(uint64(42), uint8(200))
	f.Fuzz(func(t *testing.T, seed uint64, n uint8) {
		simulate(t, seed, int(n))
	})
}
