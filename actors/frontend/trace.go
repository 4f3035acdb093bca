package frontend

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/foreman-actors/foreman/actors/tracing"
	"github.com/foreman-actors/foreman/messages"
)

// submitTraced is Submit of a traced submission: under a foreman.submit
// span when the client has a tracer, and with the trace context in a copy
// of w (the caller's message is not changed).
func (c *Client) submitTraced(ctx context.Context, w *messages.Work) error {
	ctx, span := c.startSubmit(ctx, w.GetTraceParent(), attribute.String("foreman.work_id", w.GetWorkId()),
		attribute.String("foreman.job_type", w.GetJobType()))
	if parent := sampledParent(ctx); parent != "" && parent != w.GetTraceParent() {
		w = messages.CloneWork(w)
		w.TraceParent = parent
	}
	err := c.retry(ctx, submitWhat{w}, func() error { return c.submitAttempt(ctx, w) })
	endSpan(span, err)
	return err
}

// startSubmit starts the foreman.submit span under ctx's span, or under
// given (a work's own trace_parent) when ctx has none; nil span without a
// tracer.
func (c *Client) startSubmit(ctx context.Context, given string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		ctx = tracing.WithParent(ctx, given)
	}
	if c.tracer == nil {
		return ctx, nil
	}
	return c.tracer.Start(ctx, tracing.SpanSubmit, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
}

// tracedWorks returns works with the trace context of ctx's span set on
// copies of those that carry none (works itself when there is no span).
func tracedWorks(ctx context.Context, works []*messages.Work) []*messages.Work {
	parent := sampledParent(ctx)
	if parent == "" {
		return works
	}
	out := make([]*messages.Work, len(works))
	for i, w := range works {
		out[i] = w
		if w != nil && w.GetTraceParent() == "" {
			out[i] = messages.CloneWork(w)
			out[i].TraceParent = parent
		}
	}
	return out
}

// sampledParent returns the traceparent of ctx's span when it is sampled,
// else "": the master and the workers sample by their parent, so an
// unsampled context would make them do the work of spans nobody records;
// leaving it out spares each job that (a copy of the Work, the parsing)
// at low sampling ratios.
func sampledParent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsSampled() {
		return ""
	}
	return tracing.ParentOf(sc)
}

// endSpan ends span (nil: none) with err's status.
func endSpan(span trace.Span, err error) {
	if span == nil {
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
