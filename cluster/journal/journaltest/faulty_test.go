package journaltest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/journal/journaltest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFaultyPassesConformanceWhenHealthy(t *testing.T) {
	t.Parallel()
	journaltest.Run(t, func(t *testing.T) persistence.Journal { return journaltest.NewFaulty(journal.NewMemory()) })
	journaltest.RunLeases(t, func(t *testing.T, clk *clock.Manual) (persistence.Journal, bool) {
		return journaltest.NewFaulty(journal.NewMemory(journal.WithClock(clk))), true
	})
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
	_, err = j.Lease(ctx, "s", "a", time.Second)
	require.ErrorIs(t, err, boom, "a journal that cannot write cannot lease")
	require.ErrorIs(t, j.ReleaseLease(ctx, "s", "a"), boom)
	require.ErrorIs(t, j.SaveSnapshot(ctx, "s", epoch, persistence.Snapshot{}), boom)
	require.ErrorIs(t, j.DeleteEvents(ctx, "s", epoch, 1), boom)
	n := 0
	require.NoError(t, j.Load(ctx, "s", 0, func(persistence.Event) error { n++; return nil }), "reads still work")
	require.Zero(t, n, "nothing was written")

	j.FailWrites(nil)
	require.NoError(t, j.Append(ctx, "s", epoch, journaltest.Evs(1, 1)))
}

func TestFaultyFailsLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mem := journal.NewMemory()
	t.Cleanup(func() { _ = mem.Close() })
	a, b := journaltest.NewFaulty(mem), journaltest.NewFaulty(mem)
	_, err := a.Lease(ctx, "s", "a", time.Hour)
	require.NoError(t, err)

	cut := errors.New("cannot reach the lease table")
	a.FailLeases(cut)
	_, err = a.Lease(ctx, "s", "a", time.Hour)
	require.ErrorIs(t, err, cut, "a cannot renew")
	require.ErrorIs(t, a.ReleaseLease(ctx, "s", "a"), cut, "nor release")
	epoch, _, err := a.AcquireEpoch(ctx, "s")
	require.NoError(t, err, "other writes go through")
	require.NoError(t, a.Append(ctx, "s", epoch, journaltest.Evs(1, 1)))
	st, err := b.Lease(ctx, "s", "b", time.Hour)
	require.ErrorIs(t, err, persistence.ErrLeaseHeld, "the failed release changed nothing; b's wrapper is healthy")
	require.Equal(t, "a", st.Holder)

	a.FailLeases(nil)
	require.NoError(t, a.ReleaseLease(ctx, "s", "a"))
	_, err = b.Lease(ctx, "s", "b", time.Hour)
	require.NoError(t, err)
}
