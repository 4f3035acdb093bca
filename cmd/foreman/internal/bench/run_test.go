package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/cmd/foreman/internal/bench"
	"github.com/foreman-actors/foreman/cmd/foreman/internal/cpustat"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	t.Parallel()

	t.Run("SmallRun", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := bench.Run(ctx, bench.Config{Jobs: 40, Submitters: 4, Workers: 2, Window: 2, LightJobs: 3, DataDir: t.TempDir(),
			CPU: cpustat.NewMeter(cpustat.Self(bench.ThisProcess))})
		require.NoError(t, err)
		require.Equal(t, 40, res.Jobs)
		require.Positive(t, res.JobsPerSecond)
		require.Positive(t, res.AckP50)
		require.Positive(t, res.LightResultP50)
		require.Zero(t, res.Duplicates)
		require.Contains(t, res.String(), "end to end: 40 jobs")
		require.Contains(t, res.String(), "light load:")
		require.Len(t, res.CPU, 1)
		require.Positive(t, res.CPU[0].CPU, "a run of 40 jobs costs this process some CPU")
		require.Contains(t, res.String(), "CPU per job (µs, over 40 jobs): this-process ")
	})

	t.Run("RejectsBadConfig", func(t *testing.T) {
		t.Parallel()
		for _, cfg := range []bench.Config{
			{Jobs: 0, Submitters: 1, Workers: 1, Window: 1},
			{Jobs: 1, Submitters: 0, Workers: 1, Window: 1},
			{Jobs: 1, Submitters: 1, Workers: 0, Window: 1},
			{Jobs: 1, Submitters: 1, Workers: 1, Window: 0},
			{Jobs: 1, Submitters: 1, Workers: 1, Window: 1, LightJobs: -1},
		} {
			_, err := bench.Run(context.Background(), cfg)
			require.ErrorIs(t, err, node.ErrInvalidConfig)
			require.Contains(t, err.Error(), "bench needs jobs")
		}
	})
}

func TestFsync(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res, err := bench.Fsync(t.Context(), dir, 50*time.Millisecond)
	require.NoError(t, err)
	require.Positive(t, res.Writes)
	require.Positive(t, res.PerSecond)
	require.LessOrEqual(t, res.P50, res.Max)
	require.Contains(t, res.String(), "fsync in "+dir)
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, left, "the measurement removes its file")

	_, err = bench.Fsync(t.Context(), dir, 0)
	require.ErrorContains(t, err, "positive duration")
	_, err = bench.Fsync(t.Context(), filepath.Join(dir, "missing"), time.Second)
	require.ErrorIs(t, err, os.ErrNotExist)
}
