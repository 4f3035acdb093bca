package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
	base := config{mailbox: "all", duration: time.Second, interval: time.Second, maxBatch: 1, queuedLimit: 4, prime: 7, policy: "default"}
	tests := []struct {
		name string
		edit func(*config)
		want string
	}{
		{name: "UnknownMailbox", edit: func(c *config) { c.mailbox = "fast" }, want: `-mailbox "fast"`},
		{name: "UnknownPolicy", edit: func(c *config) { c.policy = "magic" }, want: "unknown policy"},
		{name: "SmallPrime", edit: func(c *config) { c.prime = 1 }, want: "-prime 1"},
		{name: "NoInterval", edit: func(c *config) { c.interval = 0 }, want: "-interval"},
		{name: "NegativeBatch", edit: func(c *config) { c.maxBatch = -1 }, want: "-max-batch"},
		{name: "QueuedLimitZero", edit: func(c *config) { c.queuedLimit = 0 }, want: "fixed level 0"},
		{name: "BadLearningRate", edit: func(c *config) { c.learning = 3 }, want: "LearningRate 3"},
		{name: "PNGPlot", edit: func(c *config) { c.plotPath = filepath.Join(t.TempDir(), "x.png") }, want: "only .svg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := base
			tt.edit(&c)
			var out bytes.Buffer
			err := run(context.Background(), &out, c)
			require.ErrorContains(t, err, tt.want)
			require.Empty(t, out.String(), "nothing ran")
		})
	}
}

func TestSelected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     []string
	}{
		{name: "All", in: "all", want: []string{"parallel", "queued", "santa"}},
		{name: "One", in: " Queued ", want: []string{"queued"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := selected(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	require.Equal(t, "/tmp/s-queued.svg", plotPath("/tmp/s.svg", "queued", true))
	require.Equal(t, "/tmp/s.svg", plotPath("/tmp/s.svg", "queued", false))
}

// A real-time run of the three mailboxes with quick jobs on the same
// producer: the seed's log lines appear, each mailbox behaves as the seed
// describes (parallel never queues, queued never exceeds its limit), the
// table compares them and one plot per mailbox is written on the same axes.
func TestRunAllMailboxes(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	dir := t.TempDir()
	err := run(context.Background(), &out, config{
		mailbox: "all", duration: 1200 * time.Millisecond, interval: 100 * time.Millisecond, maxBatch: 8,
		queuedLimit: 2, prime: 1000003, policy: "default", plotPath: filepath.Join(dir, "santa.svg"), seed: 1,
	})
	require.NoError(t, err)
	log := out.String()
	for _, line := range []string{
		"|=== Mailbox: parallel", "|=== Mailbox: queued", "|=== Mailbox: santa",
		"|New jobs arriving: batch 0, ", "|Started batch 0 job 0\n", "|Completed batch 0 job 0 in 0 secs (total ",
		"|Queue: 0, In Flight: ", ", Parallelism: ", "|Stopped after ",
	} {
		require.Contains(t, log, line)
	}
	// The same producer: the same first batch in each run.
	first := regexp.MustCompile(`New jobs arriving: batch 0, (\d+) jobs`).FindAllStringSubmatch(log, -1)
	require.Len(t, first, 3)
	require.Equal(t, first[0][1], first[1][1])
	require.Equal(t, first[0][1], first[2][1])

	parallel := log[strings.Index(log, "=== Mailbox: parallel"):strings.Index(log, "=== Mailbox: queued")]
	queued := log[strings.Index(log, "=== Mailbox: queued"):strings.Index(log, "=== Mailbox: santa")]
	for _, m := range regexp.MustCompile(`Queue: (\d+), In Flight: (\d+)`).FindAllStringSubmatch(parallel, -1) {
		require.Equal(t, "0", m[1], "the parallel mailbox never queues")
	}
	for _, m := range regexp.MustCompile(`Queue: \d+, In Flight: (\d+)`).FindAllStringSubmatch(queued, -1) {
		n, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		require.LessOrEqual(t, n, 2, "the queued mailbox keeps to its limit")
	}

	require.Contains(t, log, "| mailbox | jobs completed | unfinished at the end | median time in system (s) |")
	rows := regexp.MustCompile(`(?m)^\| (parallel|queued \(2\)|santa \(default\)) \| (\d+) \|.*\| (∞|\d+)/\d+ .*\|$`).FindAllStringSubmatch(log, -1)
	require.Len(t, rows, 3, log)
	require.Equal(t, "∞", rows[0][3], "parallel has no limit")
	require.Equal(t, "2", rows[1][3])
	for _, r := range rows {
		require.NotEqual(t, "0", r[2], "%s completed jobs", r[1])
	}

	var xmax []string
	for _, m := range []string{"parallel", "queued", "santa"} {
		svg, err := os.ReadFile(filepath.Join(dir, "santa-"+m+".svg"))
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(svg), "<svg"))
		require.Contains(t, string(svg), "Queue over time")
		want := 5
		if m == "parallel" {
			want = 4 // no limit to draw
		}
		require.Equal(t, want, strings.Count(string(svg), "<polyline"), m)
		// The last x tick is the run's duration in every plot: same axes.
		ticks := regexp.MustCompile(`text-anchor="middle">([\d.]+)</text>`).FindAllStringSubmatch(string(svg), -1)
		xmax = append(xmax, ticks[len(ticks)-1][1])
	}
	require.Equal(t, []string{"1.2", "1.2", "1.2"}, xmax)
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	v := []float64{5, 1, 4, 2, 3}
	require.InDelta(t, 3, percentile(v, 50), 0)
	require.InDelta(t, 5, percentile(v, 95), 0)
	require.True(t, math.IsNaN(percentile(nil, 50)))
}

func BenchmarkFactorizeSeedPrime(b *testing.B) {
	if testing.Short() {
		b.Skip("seconds per op")
	}
	for b.Loop() {
		_, _ = factorize(context.Background(), SeedPrime)
	}
}
