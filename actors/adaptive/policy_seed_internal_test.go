package adaptive

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Reference: seed 004, setLevel: "If there is a better throughput one level
// up or down, we move up or down towards that".
func TestSeedSetLevel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		level int
		est   map[int]float64
		want  int
	}{
		{name: "NoEstimateStays", level: 3, est: map[int]float64{2: 5, 4: 9}, want: 3},
		{name: "NoNeighbourStays", level: 3, est: map[int]float64{3: 1}, want: 3},
		{name: "HigherBetterMovesUp", level: 3, est: map[int]float64{3: 3, 4: 4}, want: 4},
		{name: "LowerBetterMovesDown", level: 3, est: map[int]float64{3: 3, 2: 4}, want: 2},
		{name: "LowerBestOfThreeMovesDown", level: 3, est: map[int]float64{2: 5, 3: 3, 4: 4}, want: 2},
		{name: "HigherBetterThanLowerMovesUp", level: 3, est: map[int]float64{2: 4, 3: 3, 4: 5}, want: 4},
		{name: "LowerBetterButNotBestMovesUp", level: 3, est: map[int]float64{2: 4, 3: 3, 4: 4}, want: 4},
		{name: "CurrentBestStays", level: 3, est: map[int]float64{2: 2, 3: 3, 4: 2.5}, want: 3},
		{name: "OnlyLowerWorseStays", level: 3, est: map[int]float64{2: 2, 3: 3}, want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := NewSeed(Config{ExplorationRate: -1, InitialLimit: tt.level})
			require.NoError(t, err)
			s.throughput = tt.est
			require.Equal(t, tt.want, s.setLevel())
		})
	}
}
