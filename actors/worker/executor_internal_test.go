package worker

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/messages"
)

// TestExecutorReadsTheCancelCause pins how the executor tells the two
// cancellations of a job's ctx apart: the worker stopping (cause
// ErrWorkerStopping) hands the job back unstarted; a caller who left (cause
// ErrCallerGone) still lets the job see its cancelled ctx and report why.
func TestExecutorReadsTheCancelCause(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (*executor, *int) {
		t.Helper()
		calls := new(int)
		reg := NewRegistry()
		require.NoError(t, reg.Register("job", func(ctx context.Context, _ []byte) ([]byte, error) {
			*calls++
			return nil, ctx.Err()
		}))
		return &executor{slot: 0, reg: reg}, calls
	}
	work := &messages.Work{WorkId: "w", JobType: "job"}

	t.Run("WorkerStoppingHandsTheJobBackUnstarted", func(t *testing.T) {
		t.Parallel()
		e, calls := setup(t)
		lifetime, stop := context.WithCancelCause(context.Background())
		jobCtx, cancelJob := context.WithCancelCause(lifetime)
		defer cancelJob(nil)
		stop(ErrWorkerStopping)

		_, err := e.run(jobCtx, work)
		require.ErrorIs(t, err, ErrWorkerStopping)
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, *calls, "the job function must not run")
	})

	t.Run("CallerGoneRunsTheJobAndSaysWhy", func(t *testing.T) {
		t.Parallel()
		e, calls := setup(t)
		jobCtx, cancelJob := context.WithCancelCause(context.Background())
		cancelJob(ErrCallerGone)

		_, err := e.run(jobCtx, work)
		require.ErrorIs(t, err, ErrCallerGone)
		require.False(t, errors.Is(err, ErrWorkerStopping))
		require.Equal(t, 1, *calls)
	})
}
