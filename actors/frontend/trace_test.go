package frontend_test

import (
	"context"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/tracing"
	"github.com/foreman-actors/foreman/messages"
)

// callerSpan is a sampled span context of a caller, as a traceparent
// header would give it.
var callerSpan = trace.NewSpanContext(trace.SpanContextConfig{
	TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
	SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
	TraceFlags: trace.FlagsSampled,
	Remote:     true,
})

// TestClientPropagatesTheTrace: the work the master gets carries the trace
// context of the submission (Work.trace_parent), from the caller's ctx
// without a tracer, and from the client's foreman.submit span under it with
// one; the caller's message is never changed.
func TestClientPropagatesTheTrace(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T, opts ...frontend.Option) (*frontend.Client, *testkit.Probe) {
		t.Helper()
		sys := testkit.NewSystem(t)
		master := testkit.NewProbe(t, sys)
		master.SetAutoReply(func(msg any, _ *actor.PID) any {
			switch m := msg.(type) {
			case *messages.Work:
				return &messages.Ack{WorkId: m.GetWorkId()}
			case *messages.WorkBatch:
				ack := &messages.WorkBatchAck{}
				for _, w := range m.GetWorks() {
					ack.Outcomes = append(ack.Outcomes, &messages.BatchOutcome{WorkId: w.GetWorkId(), Accepted: true})
				}
				return ack
			}
			return nil
		})
		c, err := frontend.NewClient(sys, route.Fixed(master.PID()), opts...)
		require.NoError(t, err)
		return c, master
	}
	received := func(t *testing.T, master *testkit.Probe) *messages.Work {
		t.Helper()
		e, ok := master.ReceiveOne(testkit.Timeout())
		require.True(t, ok, "the master got the work")
		return e.Message.(*messages.Work)
	}
	traced := trace.ContextWithRemoteSpanContext(context.Background(), callerSpan)

	t.Run("UntracedCallerSendsNone", func(t *testing.T) {
		t.Parallel()
		c, master := setup(t)
		require.NoError(t, c.Submit(context.Background(), work("a")))
		require.Empty(t, received(t, master).GetTraceParent())
	})

	t.Run("CallersSpanWithoutATracer", func(t *testing.T) {
		t.Parallel()
		c, master := setup(t)
		w := work("a")
		require.NoError(t, c.Submit(traced, w))
		require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", received(t, master).GetTraceParent())
		require.Empty(t, w.GetTraceParent(), "the caller's Work is not changed")
	})

	t.Run("AnUnsampledTraceIsNotCarried", func(t *testing.T) {
		t.Parallel()
		c, master := setup(t)
		unsampled := trace.ContextWithRemoteSpanContext(context.Background(), callerSpan.WithTraceFlags(0))
		require.NoError(t, c.Submit(unsampled, work("a")))
		require.Empty(t, received(t, master).GetTraceParent(), "nothing downstream would record it")
	})

	t.Run("SubmitSpanUnderTheCaller", func(t *testing.T) {
		t.Parallel()
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		c, master := setup(t, frontend.WithTracerProvider(tp))
		require.NoError(t, c.Submit(traced, work("a")))
		got := tracing.SpanContextOf(received(t, master).GetTraceParent())
		spans := exp.GetSpans()
		require.Len(t, spans, 1)
		s := spans[0]
		require.Equal(t, tracing.SpanSubmit, s.Name)
		require.Equal(t, callerSpan.SpanID(), s.Parent.SpanID(), "under the caller's span")
		require.Equal(t, callerSpan.TraceID(), s.SpanContext.TraceID())
		require.Equal(t, s.SpanContext.SpanID(), got.SpanID(), "the work carries the submit span")
		require.Equal(t, codes.Ok, s.Status.Code)
	})

	t.Run("RejectionEndsTheSpanWithAnError", func(t *testing.T) {
		t.Parallel()
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		sys := testkit.NewSystem(t)
		master := testkit.NewProbe(t, sys)
		master.SetAutoReply(func(any, *actor.PID) any {
			return &messages.WorkRejected{WorkId: "a", Code: messages.RejectCode_REJECT_CODE_TOO_LARGE, Reason: "too large"}
		})
		c, err := frontend.NewClient(sys, route.Fixed(master.PID()), frontend.WithTracerProvider(tp))
		require.NoError(t, err)
		require.ErrorIs(t, c.Submit(context.Background(), work("a")), frontend.ErrRejected)
		spans := exp.GetSpans()
		require.Len(t, spans, 1)
		require.Equal(t, codes.Error, spans[0].Status.Code)
		require.False(t, spans[0].Parent.IsValid(), "a caller without a trace: the submission starts one")
	})

	t.Run("BatchCarriesItsSpanButKeepsAWorksOwn", func(t *testing.T) {
		t.Parallel()
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		c, master := setup(t, frontend.WithTracerProvider(tp))
		own := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		b := work("b")
		b.TraceParent = own
		errs := c.SubmitMany(traced, []*messages.Work{work("a"), b})
		require.Equal(t, []error{nil, nil}, errs)
		e, ok := master.ReceiveOne(testkit.Timeout())
		require.True(t, ok)
		works := e.Message.(*messages.WorkBatch).GetWorks()
		spans := exp.GetSpans()
		require.Len(t, spans, 1)
		require.Equal(t, callerSpan.SpanID(), spans[0].Parent.SpanID())
		byID := map[string]string{}
		for _, w := range works {
			byID[w.GetWorkId()] = w.GetTraceParent()
		}
		require.Equal(t, spans[0].SpanContext.SpanID(), tracing.SpanContextOf(byID["a"]).SpanID())
		require.Equal(t, own, byID["b"], "a work's own trace_parent stays")
	})
}

// TestTracingIgnoresANoopProvider: a no-op provider is no tracer at all.
func TestTracingIgnoresANoopProvider(t *testing.T) {
	t.Parallel()
	require.Nil(t, tracing.Tracer(nil))
	require.Nil(t, tracing.Tracer(noop.NewTracerProvider()))
	require.NotNil(t, tracing.Tracer(sdktrace.NewTracerProvider()))
}
