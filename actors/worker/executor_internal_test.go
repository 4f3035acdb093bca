package worker

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/foreman-actors/foreman/actors/tracing"
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

// TestExecutorTracesTheJob: a traced work's job function gets a ctx whose
// span is a foreman.execute span under the work's trace_parent (the
// master's hand-out), ended with the job's status, a panic included; an
// untraced work's ctx carries no span.
func TestExecutorTracesTheJob(t *testing.T) {
	t.Parallel()
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	setup := func(t *testing.T, fn JobFunc) (*executor, *tracetest.InMemoryExporter) {
		t.Helper()
		reg := NewRegistry()
		require.NoError(t, reg.Register("job", fn))
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		return &executor{reg: reg, tracer: tracing.Tracer(tp)}, exp
	}
	var seen trace.SpanContext
	record := func(ctx context.Context, _ []byte) ([]byte, error) {
		seen = trace.SpanContextFromContext(ctx)
		return []byte("ok"), nil
	}

	t.Run("TheJobsCtxCarriesTheSpan", func(t *testing.T) {
		e, exp := setup(t, record)
		_, err := e.run(context.Background(), &messages.Work{WorkId: "w", JobType: "job", Attempt: 2, TraceParent: parent})
		require.NoError(t, err)
		spans := exp.GetSpans()
		require.Len(t, spans, 1)
		s := spans[0]
		require.Equal(t, tracing.SpanExecute, s.Name)
		require.Equal(t, seen, s.SpanContext, "the job's ctx carries the execute span")
		require.Equal(t, tracing.SpanContextOf(parent).SpanID(), s.Parent.SpanID(), "under the hand-out")
		require.Equal(t, tracing.SpanContextOf(parent).TraceID(), s.SpanContext.TraceID())
		require.Equal(t, codes.Ok, s.Status.Code)
	})

	t.Run("AFailureEndsItWithAnError", func(t *testing.T) {
		e, exp := setup(t, func(context.Context, []byte) ([]byte, error) { return nil, errors.New("boom") })
		_, err := e.run(context.Background(), &messages.Work{WorkId: "w", JobType: "job", TraceParent: parent})
		require.Error(t, err)
		require.Len(t, exp.GetSpans(), 1)
		require.Equal(t, codes.Error, exp.GetSpans()[0].Status.Code)
		require.Equal(t, "boom", exp.GetSpans()[0].Status.Description)
	})

	t.Run("APanicEndsItWithAnError", func(t *testing.T) {
		e, exp := setup(t, func(context.Context, []byte) ([]byte, error) { panic("bad input") })
		require.Panics(t, func() {
			_, _ = e.run(context.Background(), &messages.Work{WorkId: "w", JobType: "job", TraceParent: parent})
		})
		require.Len(t, exp.GetSpans(), 1)
		require.Equal(t, codes.Error, exp.GetSpans()[0].Status.Code)
		require.Contains(t, exp.GetSpans()[0].Status.Description, "bad input")
	})

	t.Run("AnUntracedWorkHasNoSpan", func(t *testing.T) {
		e, exp := setup(t, record)
		_, err := e.run(context.Background(), &messages.Work{WorkId: "w", JobType: "job"})
		require.NoError(t, err)
		require.Empty(t, exp.GetSpans())
		require.False(t, seen.IsValid())
	})
}
