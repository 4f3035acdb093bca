package pulling

import (
	"encoding/binary"
	"slices"
	"testing"
	"testing/quick"

	"github.com/stretchr/testify/require"
)

func cur(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

func TestPositionTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		finish     []uint64
		wantPrefix uint64
		wantBeyond []uint64
		wantCount  uint64
	}{
		{name: "nothing", wantPrefix: 0, wantBeyond: nil},
		{name: "in order", finish: []uint64{1, 2, 3}, wantPrefix: 3, wantBeyond: nil, wantCount: 3},
		{name: "a gap", finish: []uint64{1, 3, 4}, wantPrefix: 1, wantBeyond: []uint64{3, 4}, wantCount: 3},
		{name: "the gap closes", finish: []uint64{1, 3, 4, 2}, wantPrefix: 4, wantBeyond: nil, wantCount: 4},
		{name: "first item last", finish: []uint64{5, 4, 3, 2, 1}, wantPrefix: 5, wantBeyond: nil, wantCount: 5},
		{name: "duplicates and zero ignored", finish: []uint64{0, 2, 2, 1, 1}, wantPrefix: 2, wantBeyond: nil, wantCount: 2},
		{name: "only beyond", finish: []uint64{7, 9}, wantPrefix: 0, wantBeyond: []uint64{7, 9}, wantCount: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var p Position
			for _, s := range tt.finish {
				p.Finish(s, cur(s))
			}
			n, c := p.Prefix()
			require.Equal(t, tt.wantPrefix, n)
			if n > 0 {
				require.Equal(t, cur(n), c, "the cursor is the one after the prefix's last item")
			} else {
				require.Nil(t, c)
			}
			require.Equal(t, tt.wantBeyond, p.Beyond())
			require.Equal(t, tt.wantCount, p.Count())
			back := RestorePosition(n, c, p.Items())
			require.Equal(t, p.Beyond(), back.Beyond(), "a snapshot restores the same position")
			require.Equal(t, p.Count(), back.Count())
		})
	}
}

func TestPositionFinishReportsNews(t *testing.T) {
	t.Parallel()
	var p Position
	require.True(t, p.Finish(2, cur(2)))
	require.False(t, p.Finish(2, cur(2)))
	require.True(t, p.Finish(1, cur(1)))
	require.False(t, p.Finish(1, cur(1)), "inside the prefix")
	require.False(t, p.Finish(0, nil))
}

// TestPositionQuick checks Position against a model, the set of finished
// items, for random finishing orders: the prefix is the longest run 1..n in
// the set, the cursor is item n's, the rest of the set is beyond it.
func TestPositionQuick(t *testing.T) {
	t.Parallel()
	check := func(raw []uint8) bool {
		var p Position
		model := map[uint64]bool{}
		for _, r := range raw {
			s := uint64(r%40) + 1
			news := p.Finish(s, cur(s))
			if news == model[s] {
				return false
			}
			model[s] = true
			var want uint64
			for model[want+1] {
				want++
			}
			n, c := p.Prefix()
			if n != want || (n > 0 && !slices.Equal(c, cur(n))) {
				return false
			}
			var beyond []uint64
			for k := range model {
				if k > want {
					beyond = append(beyond, k)
				}
			}
			slices.Sort(beyond)
			if !slices.Equal(beyond, p.Beyond()) || p.Count() != uint64(len(model)) {
				return false
			}
			for k := uint64(1); k <= 41; k++ {
				if p.Finished(k) != model[k] {
					return false
				}
			}
		}
		return true
	}
	require.NoError(t, quick.Check(check, &quick.Config{MaxCount: 500}))
}

func TestStateMidEpicJoinIsToldWorkAvailable(t *testing.T) {
	t.Parallel()
	s := newTestState(t, testConfig())
	eff := s.Register("early", 1, t0)
	require.Empty(t, eff.Announce, "no Epic yet: nothing to tell")
	eff, err := s.StartEpic(-1, t0)
	require.NoError(t, err)
	require.Equal(t, []WorkerID{"early"}, eff.Announce)
	eff = s.Register("late", 1, t0)
	require.Equal(t, []WorkerID{"late"}, eff.Announce, "a worker that joins mid-Epic starts pulling")
	eff = s.Register("late", 2, t0)
	require.Empty(t, eff.Announce, "a known worker's re-registration tells it nothing")
}

func TestStateCompletedAndFetchedAt(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.MaxAttempts = 1
	s := newTestState(t, cfg)
	s.Register("w", 2, t0)
	eff, err := s.StartEpic(-1, t0)
	require.NoError(t, err)
	require.Positive(t, eff.Fetch)
	// Items numbered by their place in the Epic; 11 was finished before.
	s.FetchedAt(1, []string{"a", "c"}, []ItemID{10, 12}, nil, t0)
	eff = s.Request("w", 2, t0)
	require.Len(t, eff.Deliver, 2)
	require.Equal(t, ItemID(10), eff.Deliver[0].ID)
	require.Equal(t, ItemID(12), eff.Deliver[1].ID)
	eff = s.Done("w", 12, "", 0, t0)
	require.Equal(t, []ItemID{12}, eff.Completed)
	eff = s.Done("w", 10, "boom", 0, t0)
	require.Equal(t, []ItemID{10}, eff.Completed, "an item given up leaves the state too")
	require.Equal(t, []ItemID{10}, eff.Dropped)
	eff = s.SkipFetched(1, t0)
	require.Empty(t, eff.Completed)
	s.Fetched(1, nil, nil, t0)
	require.False(t, s.Running())
}
