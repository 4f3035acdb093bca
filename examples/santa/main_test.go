package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFactorize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		x    int64
		want []int64
	}{
		{name: "Sixty", x: 60, want: []int64{2, 2, 3, 5, 1}},
		{name: "Prime", x: 1000003, want: []int64{1000003, 1}},
		{name: "Two", x: 2, want: []int64{2, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := factorize(context.Background(), tt.x)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := factorize(ctx, SeedPrime)
	require.ErrorIs(t, err, context.Canceled)
}

func TestRunRejectsBadFlags(t *testing.T) {
	t.Parallel()
	base := config{duration: time.Second, interval: time.Second, maxBatch: 1, prime: 7, policy: "default"}
	tests := []struct {
		name string
		edit func(*config)
		want string
	}{
		{name: "UnknownPolicy", edit: func(c *config) { c.policy = "magic" }, want: "unknown policy"},
		{name: "SmallPrime", edit: func(c *config) { c.prime = 1 }, want: "-prime 1"},
		{name: "NoInterval", edit: func(c *config) { c.interval = 0 }, want: "-interval"},
		{name: "NegativeBatch", edit: func(c *config) { c.maxBatch = -1 }, want: "-max-batch"},
		{name: "BadLearningRate", edit: func(c *config) { c.learning = 3 }, want: "LearningRate 3"},
		{name: "PNGPlot", edit: func(c *config) { c.plotPath = filepath.Join(t.TempDir(), "x.png") }, want: "only .svg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := base
			tt.edit(&c)
			err := run(context.Background(), &bytes.Buffer{}, c)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// A real-time run of the whole scenario with quick jobs: the seed's log
// lines appear and the plot is written.
func TestRunWritesLogAndPlot(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	path := filepath.Join(t.TempDir(), "santa.svg")
	err := run(context.Background(), &out, config{
		duration: 1500 * time.Millisecond, interval: 100 * time.Millisecond, maxBatch: 8,
		prime: 1000003, policy: "default", plotPath: path, seed: 1,
	})
	require.NoError(t, err)
	log := out.String()
	require.Contains(t, log, "|New jobs arriving: batch 0, ")
	require.Contains(t, log, ", In Flight: ")
	require.Contains(t, log, "|Completed batch 0 job 0 in 0 secs (total ")
	require.Contains(t, log, "|Stopped after ")
	svg, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(svg), "<svg"))
	require.Contains(t, string(svg), "Queue over time")
	require.Equal(t, 5, strings.Count(string(svg), "<polyline"))
}

func BenchmarkFactorizeSeedPrime(b *testing.B) {
	if testing.Short() {
		b.Skip("seconds per op")
	}
	for b.Loop() {
		_, _ = factorize(context.Background(), SeedPrime)
	}
}
