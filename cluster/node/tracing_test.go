package node_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/tracing"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/metrics"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/messages"
)

// TestNodeLeavesOpenTelemetrysGlobalsAlone: a node started with metrics,
// protoactor's actor metrics and a TracerProvider, running a traced job,
// leaves OpenTelemetry's process-wide providers and propagator as the
// embedding application had them (the library used to install its
// MeterProvider globally), and records the job's spans with the provider
// it was given: one trace, chained submit → accept → hand-out → execute,
// and the result under the hand-out.
func TestNodeLeavesOpenTelemetrysGlobalsAlone(t *testing.T) {
	mp, tp, prop := otel.GetMeterProvider(), otel.GetTracerProvider(), otel.GetTextMapPropagator()
	exp := tracetest.NewInMemoryExporter()
	mine := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	reg := worker.NewRegistry()
	require.NoError(t, worker.RegisterBuiltins(reg, worker.WithSquareDelay(0, 0)))
	n, err := node.StartLocal(t.Context(), node.WithDataDir(t.TempDir()), node.WithWorkers(1), node.WithRegistry(reg),
		node.WithLogger(slog.New(slog.DiscardHandler)), node.WithMetrics(metrics.New()), node.WithActorMetrics(),
		node.WithTracerProvider(mine))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, n.Stop(context.Background())) })

	ctx, cancel := context.WithTimeout(t.Context(), testkit.Timeout())
	defer cancel()
	res, err := n.Client().Do(ctx, &messages.Work{WorkId: "traced", JobType: "square", Payload: []byte("3")})
	require.NoError(t, err)
	require.Equal(t, "9", string(res.GetResult()))

	require.Same(t, mp, otel.GetMeterProvider(), "the global MeterProvider is the application's")
	require.Same(t, tp, otel.GetTracerProvider(), "the global TracerProvider is the application's")
	require.Equal(t, prop, otel.GetTextMapPropagator(), "the global propagator is the application's")

	var byName map[string]sdktrace.ReadOnlySpan
	require.Eventually(t, func() bool { // the result span ends once its event is durable
		byName = map[string]sdktrace.ReadOnlySpan{}
		for _, s := range exp.GetSpans().Snapshots() {
			byName[s.Name()] = s
		}
		return len(byName) == 5
	}, testkit.Timeout(), 10*time.Millisecond, "spans: %v", exp.GetSpans())
	parentOf := func(name string) trace.SpanID { return byName[name].Parent().SpanID() }
	idOf := func(name string) trace.SpanID { return byName[name].SpanContext().SpanID() }
	for name, s := range byName {
		require.Equal(t, byName[tracing.SpanSubmit].SpanContext().TraceID(), s.SpanContext().TraceID(), name)
	}
	require.Equal(t, idOf(tracing.SpanSubmit), parentOf(tracing.SpanAccept))
	require.Equal(t, idOf(tracing.SpanAccept), parentOf(tracing.SpanHandOut))
	require.Equal(t, idOf(tracing.SpanHandOut), parentOf(tracing.SpanExecute))
	require.Equal(t, idOf(tracing.SpanAccept), parentOf(tracing.SpanResult), "the result under the acceptance (docs/tracing.md)")
}
