package journaltest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/journal/journaltest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFaultyPassesConformanceWhenHealthy(t *testing.T) {
	t.Parallel()
	journaltest.Run(t, func(t *testing.T) persistence.Journal { return journaltest.NewFaulty(journal.NewMemory()) })
}

func TestFaultyFailsWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j := journaltest.NewFaulty(journal.NewMemory())
	t.Cleanup(func() { _ = j.Close() })
	epoch, _, err := j.AcquireEpoch(ctx, "s")
	require.NoError(t, err)

	boom := errors.New("disk full")
	j.FailWrites(boom)
	require.ErrorIs(t, j.Append(ctx, "s", epoch, journaltest.Evs(1, 1)), boom)
	done := make(chan error, 1)
	j.AppendAsync("s", epoch, journaltest.Evs(1, 1), func(err error) { done <- err })
	require.ErrorIs(t, <-done, boom)
	_, _, err = j.AcquireEpoch(ctx, "s")
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, j.SaveSnapshot(ctx, "s", epoch, persistence.Snapshot{}), boom)
	require.ErrorIs(t, j.DeleteEvents(ctx, "s", epoch, 1), boom)
	n := 0
	require.NoError(t, j.Load(ctx, "s", 0, func(persistence.Event) error { n++; return nil }), "reads still work")
	require.Zero(t, n, "nothing was written")

	j.FailWrites(nil)
	require.NoError(t, j.Append(ctx, "s", epoch, journaltest.Evs(1, 1)))
}
