package adaptive_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/adaptive"
)

// recorder is a fixed-level policy that records what it observes.
type recorder struct {
	level int
	obs   []adaptive.Observation
	at    []time.Time
}

func (r *recorder) Observe(o adaptive.Observation, now time.Time) int {
	r.obs = append(r.obs, o)
	r.at = append(r.at, now)
	return r.level
}

func (r *recorder) Limit() int { return r.level }

func jobs(ss []adaptive.Start[string]) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Job)
	}
	return out
}

func TestCore(t *testing.T) {
	t.Parallel()

	t.Run("RunsAtMostTheLimitInOrder", func(t *testing.T) {
		t.Parallel()
		c := adaptive.NewCore[string](adaptive.Fixed(2))
		started := c.PushBatch(epoch, []string{"a", "b", "c", "d"})
		require.Equal(t, []string{"a", "b"}, jobs(started))
		first := started[0].Ticket
		require.Equal(t, adaptive.Stats{Queue: 2, InFlight: 2, Limit: 2}, c.Stats())
		later := epoch.Add(time.Second)
		started = c.Done(later, first, -1)
		require.Equal(t, []string{"c"}, jobs(started))
		require.Equal(t, adaptive.Ticket{Seq: 3, Arrival: epoch, Started: later}, started[0].Ticket)
		require.Equal(t, adaptive.Stats{Queue: 1, InFlight: 2, Limit: 2, Completed: 1}, c.Stats())
	})

	t.Run("ObservationDescribesTheCompletion", func(t *testing.T) {
		t.Parallel()
		r := &recorder{level: 2}
		c := adaptive.NewCore[string](r)
		started := c.PushBatch(epoch, []string{"a", "b", "c"})
		t1 := epoch.Add(3 * time.Second)
		c.Done(t1, started[1].Ticket, 0.5)
		require.Equal(t, []adaptive.Observation{{
			Arrival: epoch, Started: epoch, InFlight: 2, Limit: 2, Queued: 1, CPU: 0.5,
		}}, r.obs, "in flight counts the completing job; queued is before refilling")
		require.Equal(t, []time.Time{t1}, r.at)
	})

	t.Run("LimitFollowsThePolicy", func(t *testing.T) {
		t.Parallel()
		r := &recorder{level: 1}
		c := adaptive.NewCore[string](r)
		started := c.PushBatch(epoch, []string{"a", "b", "c", "d"})
		require.Len(t, started, 1)
		r.level = 3
		require.Equal(t, []string{"b", "c", "d"}, jobs(c.Done(epoch, started[0].Ticket, -1)))
		r.level = 1
		require.Empty(t, c.PushBatch(epoch, []string{"e"}), "3 in flight over a limit of 1: wait")
	})

	t.Run("CancelAbortDrain", func(t *testing.T) {
		t.Parallel()
		r := &recorder{level: 1}
		c := adaptive.NewCore[string](r)
		seqA, started := c.Push(epoch, "a")
		require.Equal(t, []string{"a"}, jobs(started))
		ta := started[0].Ticket
		seqB, started := c.Push(epoch, "b")
		require.Empty(t, started)
		_, _ = c.Push(epoch, "c")
		require.False(t, c.Cancel(seqA), "a has started")
		require.True(t, c.Cancel(seqB))
		require.False(t, c.Cancel(seqB))
		require.Equal(t, []string{"c"}, jobs(c.Abort(epoch, ta)))
		require.Empty(t, r.obs, "an aborted job teaches nothing")
		_, _ = c.Push(epoch, "d")
		_, _ = c.Push(epoch, "e")
		require.Equal(t, []string{"d", "e"}, c.Drain())
		require.Equal(t, 0, c.Len())
	})

	t.Run("SeedDecidesOnArrivalsToo", func(t *testing.T) {
		t.Parallel()
		s, err := adaptive.NewSeed(adaptive.Config{ExplorationRate: 0.99, Seed: 1})
		require.NoError(t, err)
		c := adaptive.NewCore[string](s)
		for range 20 {
			c.PushBatch(epoch, nil)
		}
		require.Greater(t, c.Stats().Limit, 1, "exploration on arrivals moved the level")
	})
}

// FuzzCore checks the queue against a dumb model: every pushed job starts
// once, in push order, never more than the limit run at once (the limit of a
// Fixed policy), and the counts always add up.
func FuzzCore(f *testing.F) {
	f.Add([]byte{3, 0, 1, 1, 0, 2, 4, 4, 4})
	f.Add([]byte{0, 0, 0, 0, 9, 1, 1, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		limit := 1 + int(ops[0]%5)
		c := adaptive.NewCore[int](adaptive.Fixed(limit))
		var running []adaptive.Ticket
		var queued []uint64
		pushed, completed, cancelled := 0, 0, 0
		onStart := func(ss []adaptive.Start[int]) {
			for _, s := range ss {
				require.NotEmpty(t, queued, "started a job that was not queued")
				require.Equal(t, queued[0], s.Ticket.Seq, "jobs start in push order, once")
				require.Equal(t, int(s.Ticket.Seq), s.Job)
				queued = queued[1:]
				running = append(running, s.Ticket)
			}
		}
		now := epoch
		for _, op := range ops[1:] {
			now = now.Add(time.Millisecond)
			switch op % 4 {
			case 0, 1:
				pushed++
				seq, ss := c.Push(now, pushed)
				require.Equal(t, uint64(pushed), seq)
				queued = append(queued, seq)
				onStart(ss)
			case 2:
				if len(running) > 0 {
					i := int(op/4) % len(running)
					tk := running[i]
					running = append(running[:i], running[i+1:]...)
					completed++
					onStart(c.Done(now, tk, -1))
				}
			case 3:
				if len(queued) > 0 {
					i := int(op/4) % len(queued)
					require.True(t, c.Cancel(queued[i]))
					queued = append(queued[:i:i], queued[i+1:]...)
					cancelled++
				}
			}
			st := c.Stats()
			require.LessOrEqual(t, st.InFlight, limit)
			require.Equal(t, len(running), st.InFlight)
			require.Equal(t, len(queued), st.Queue)
			require.Equal(t, pushed, st.Queue+st.InFlight+completed+cancelled)
			require.Equal(t, uint64(completed), st.Completed)
			if st.Queue > 0 {
				require.Equal(t, limit, st.InFlight, "work waits only when every slot is taken")
			}
		}
	})
}
