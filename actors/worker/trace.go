package worker

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/foreman-actors/foreman/actors/tracing"
	"github.com/foreman-actors/foreman/messages"
)

// WithTracerProvider traces the jobs that carry a trace context
// (Work.trace_parent, set by a traced submitter and the master's
// hand-out): each run is a foreman.execute span under the hand-out, and
// the job function's ctx carries it, so the function's own spans (a
// database call, an HTTP request) join the job's trace. The span ends with
// the job's status. The provider is used as given: the worker never reads
// or sets OpenTelemetry's global one. nil or a no-op provider: no tracing.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracer = tracing.Tracer(tp) }
}

// startSpan starts the foreman.execute span of w under its trace_parent.
func (e *executor) startSpan(ctx context.Context, w *messages.Work) (context.Context, trace.Span) {
	return e.tracer.Start(tracing.WithParent(ctx, w.GetTraceParent()), tracing.SpanExecute,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("foreman.work_id", w.GetWorkId()),
			attribute.String("foreman.job_type", w.GetJobType()),
			attribute.Int("foreman.attempt", int(w.GetAttempt()))))
}

// endSpan ends span (nil: none, or ended already) with err's status. A
// panicking job ends it in the recover, before the deferred call runs.
func endSpan(span trace.Span, err error) {
	if span == nil || !span.IsRecording() {
		if span != nil {
			span.End()
		}
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else {
		span.SetStatus(codes.Ok, "")
	}
	span.End()
}
