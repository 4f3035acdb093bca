// Package tracing carries a job's OpenTelemetry trace across the protocol:
// the W3C trace context of a submission travels in messages.Work's
// trace_parent field (the traceparent header's text), so the spans of the
// frontend, the master and the worker of one job share its trace.
//
// Nothing here touches OpenTelemetry's process-wide providers or
// propagators: the library's components take a trace.TracerProvider as an
// option, and without one (or with a no-op one) they trace nothing and pay
// about nothing (see Tracer).
package tracing

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Scope is the instrumentation scope of Foreman's spans.
const Scope = "github.com/foreman-actors/foreman"

// Span names, one per step of a job's life (docs/tracing.md).
const (
	// SpanSubmit is the frontend client's submission, until the master's
	// acknowledgement (the work is durable).
	SpanSubmit = "foreman.submit"
	// SpanHTTPSubmit is the HTTP API's handling of POST /work or a batch.
	SpanHTTPSubmit = "foreman.http.submit"
	// SpanAccept is the master's acceptance: from its WorkAccepted until
	// that is durable.
	SpanAccept = "foreman.accept"
	// SpanHandOut is one hand-out of the work to a worker by the master.
	SpanHandOut = "foreman.handout"
	// SpanExecute is the job function's run on the worker; the job's ctx
	// carries it.
	SpanExecute = "foreman.execute"
	// SpanResult is the master's record of the outcome: from the event
	// (completed, dead, cancelled) until it is durable.
	SpanResult = "foreman.result"
)

// traceContext is the W3C propagator; used directly, never installed.
var traceContext propagation.TraceContext

// Tracer returns the Foreman tracer of tp, or nil when tp is nil or a
// no-op provider: callers skip all tracing work on nil, so an untraced
// node pays one nil check per job.
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	if _, ok := tp.(noop.TracerProvider); ok {
		return nil
	}
	return tp.Tracer(Scope)
}

// carrier is a propagation.TextMapCarrier of one traceparent value.
type carrier struct{ parent string }

func (c *carrier) Get(key string) string {
	if key == "traceparent" {
		return c.parent
	}
	return ""
}

func (c *carrier) Set(key, value string) {
	if key == "traceparent" {
		c.parent = value
	}
}

func (c *carrier) Keys() []string { return []string{"traceparent"} }

// Parent returns the W3C traceparent of the span in ctx, or "" when ctx
// carries no valid span context.
func Parent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return ParentOf(sc)
}

// ParentOf returns the W3C traceparent of sc ("" when invalid).
func ParentOf(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	var c carrier
	traceContext.Inject(trace.ContextWithSpanContext(context.Background(), sc), &c)
	return c.parent
}

// SpanContextOf parses a W3C traceparent; the zero (invalid) SpanContext
// when parent is empty or malformed. The result is marked remote.
func SpanContextOf(parent string) trace.SpanContext {
	if parent == "" {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(traceContext.Extract(context.Background(), &carrier{parent: parent}))
}

// WithParent returns ctx with parent's span context as its remote parent;
// ctx itself when parent is empty or malformed.
func WithParent(ctx context.Context, parent string) context.Context {
	sc := SpanContextOf(parent)
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}
