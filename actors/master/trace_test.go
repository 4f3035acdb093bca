package master_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/tracing"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// TestTraceParentSurvivesFailover: the submission's trace context is
// journalled with the work, so a master that recovers the work from the
// journal (a failover: the accepting master is gone, its spans with it)
// hands it out under the submitter's trace: its foreman.handout span is a
// child of the submission, the Work the worker gets carries the hand-out,
// and the result span goes under the submission (the job, not one attempt).
func TestTraceParentSurvivesFailover(t *testing.T) {
	t.Parallel()
	const submit = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	mem := journal.NewMemory()
	t.Cleanup(func() { _ = mem.Close() })
	cl := clock.NewManual(t0)

	// The first master accepts the work, untraced (its tracer is not the
	// point), and stops.
	sys := testkit.NewSystem(t)
	props, err := master.Props(mem, master.WithClock(cl), master.WithFenceCheck(0))
	require.NoError(t, err)
	m := sys.Root.Spawn(props)
	front := testkit.NewProbe(t, sys)
	front.Request(m, &messages.Work{WorkId: "j1", JobType: "square", Payload: []byte("3"), TraceParent: submit})
	front.ExpectMsg(&messages.Ack{WorkId: "j1"}, testkit.Timeout())
	require.NoError(t, sys.Root.StopFuture(m).Wait())

	// Its successor recovers the work from the journal, traced.
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	props, err = master.Props(mem, master.WithClock(cl), master.WithFenceCheck(0), master.WithTracerProvider(tp))
	require.NoError(t, err)
	m = sys.Root.Spawn(props)
	wk := testkit.NewProbe(t, sys)
	wk.Send(m, &messages.RegisterWorker{WorkerId: "w1", Worker: pids.Wire(wk.PID())})
	wk.Send(m, &messages.WorkerRequestsWork{WorkerId: "w1", Worker: pids.Wire(wk.PID()), Capacity: 1})
	w := fish[*messages.Work](wk)
	require.Equal(t, "j1", w.GetWorkId())

	spans := exp.GetSpans()
	require.Len(t, spans, 1, "the hand-out")
	handout := spans[0]
	require.Equal(t, tracing.SpanHandOut, handout.Name)
	require.Equal(t, tracing.SpanContextOf(submit).SpanID(), handout.Parent.SpanID(), "under the submission")
	require.Equal(t, tracing.SpanContextOf(submit).TraceID(), handout.SpanContext.TraceID())
	require.Equal(t, handout.SpanContext.SpanID(), tracing.SpanContextOf(w.GetTraceParent()).SpanID(), "the worker gets the hand-out's context")

	wk.Request(m, &messages.WorkIsDone{WorkerId: "w1", WorkId: "j1", Result: []byte("9")})
	fish[*messages.Ack](wk)
	require.Eventually(t, func() bool { return len(exp.GetSpans()) == 2 }, testkit.Timeout(), 5*time.Millisecond,
		"the result span, once the completion is durable (the Ack may go first)")
	spans = exp.GetSpans()
	result := spans[1]
	require.Equal(t, tracing.SpanResult, result.Name)
	require.Equal(t, tracing.SpanContextOf(submit).SpanID(), result.Parent.SpanID(), "under the job's root here: the submission (the acceptance was the first master's)")
	require.Equal(t, codes.Ok, result.Status.Code)
}

// fish returns the first message of type T that p gets, dropping others.
func fish[T any](p *testkit.Probe) T {
	return p.FishForMessage(testkit.Timeout(), func(msg any) bool { _, ok := msg.(T); return ok }).(T)
}
