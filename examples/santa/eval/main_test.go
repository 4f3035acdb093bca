package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTally(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		scores []score
		want   map[string][]string
	}{
		{
			name: "WinnerPerService",
			scores: []score{
				{"a", "default", 0.9}, {"a", "vegas", 0.5},
				{"b", "default", 0.4}, {"b", "vegas", 0.95},
			},
			want: map[string][]string{"default": {"a"}, "vegas": {"b"}},
		},
		{
			name:   "WithinOnePointTies",
			scores: []score{{"a", "default", 0.905}, {"a", "vegas", 0.91}, {"a", "seed", 0.89}},
			want:   map[string][]string{"default": {"a"}, "vegas": {"a"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tally(tt.scores))
		})
	}
}
