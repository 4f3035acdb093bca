package master

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/master/core"
	"github.com/foreman-actors/foreman/actors/tracing"
	"github.com/foreman-actors/foreman/messages"
)

// WithTracerProvider records the spans of traced jobs (those whose Work
// carries a trace_parent): foreman.accept under the submission, once the
// WorkAccepted is durable; foreman.handout under the acceptance for each
// hand-out, whose context the handed-out Work carries to the worker; and
// foreman.result under the acceptance once the outcome is durable.
// The trace_parent is journalled with the work, so a master that takes
// over after a failover hands it out under the submission's trace. The
// provider is used as given: the master never reads or sets
// OpenTelemetry's global one. nil or a no-op provider: no tracing.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracer = tracing.Tracer(tp) }
}

// masterTracer makes the master's spans. Its methods run on the master's
// goroutine.
type masterTracer struct {
	tracer trace.Tracer
	// last is the span a traced work's next span goes under: its
	// acceptance, then its latest hand-out; dropped when it finishes. A
	// work this activation has not seen accepted goes under its
	// journalled trace_parent instead.
	last map[string]trace.SpanContext
	// root is what a traced work's foreman.result goes under: its
	// acceptance (foreman.accept), or, for a work this activation has not
	// seen accepted, its journalled trace_parent (the submission). Not the
	// hand-out: an outcome belongs to the job, not to one attempt, and an
	// expiry or a cancellation may come with no hand-out at all
	// (docs/tracing.md).
	root map[string]trace.SpanContext
}

func newMasterTracer(t trace.Tracer) *masterTracer {
	if t == nil {
		return nil
	}
	return &masterTracer{tracer: t, last: make(map[string]trace.SpanContext), root: make(map[string]trace.SpanContext)}
}

// durable returns what records the spans of events once they are durable,
// then calls next (the observer's report; nil: none). nil when no event is
// of a traced work, and next is nil.
func (t *masterTracer) durable(now time.Time, events []proto.Message, next func()) func() {
	type pending struct {
		name   string
		parent trace.SpanContext
		id     string
		start  time.Time
		err    string // result: the failure; "" for done
		fail   bool   // result: dead or cancelled
	}
	var spans []pending
	for _, ev := range core.ExpandGroups(events) {
		switch ev := ev.(type) {
		case *messages.WorkAccepted:
			if sc := tracing.SpanContextOf(ev.GetWork().GetTraceParent()); sc.IsValid() {
				spans = append(spans, pending{name: tracing.SpanAccept, parent: sc, id: ev.GetWork().GetWorkId(), start: at(ev.GetAtUnixNano(), now)})
			}
		case *messages.WorkCompleted:
			if sc, ok := t.root[ev.GetWorkId()]; ok {
				spans = append(spans, pending{name: tracing.SpanResult, parent: sc, id: ev.GetWorkId(), start: at(ev.GetAtUnixNano(), now)})
			}
		case *messages.WorkerFailed:
			if sc, ok := t.root[ev.GetWorkId()]; ok && (ev.GetDead() || ev.GetCancelled()) {
				spans = append(spans, pending{name: tracing.SpanResult, parent: sc, id: ev.GetWorkId(), start: at(ev.GetAtUnixNano(), now), err: ev.GetError(), fail: true})
			}
		case *messages.WorkerTimedOut:
			if sc, ok := t.root[ev.GetWorkId()]; ok && ev.GetDead() {
				spans = append(spans, pending{name: tracing.SpanResult, parent: sc, id: ev.GetWorkId(), start: at(ev.GetAtUnixNano(), now), err: "timed out", fail: true})
			}
		case *messages.WorkExpired:
			if sc, ok := t.root[ev.GetWorkId()]; ok {
				spans = append(spans, pending{name: tracing.SpanResult, parent: sc, id: ev.GetWorkId(), start: at(ev.GetAtUnixNano(), now), err: ev.GetReason(), fail: true})
			}
		}
	}
	if len(spans) == 0 {
		return next
	}
	return func() {
		for _, p := range spans {
			ctx := trace.ContextWithRemoteSpanContext(context.Background(), p.parent)
			_, span := t.tracer.Start(ctx, p.name, trace.WithTimestamp(p.start),
				trace.WithAttributes(attribute.String("foreman.work_id", p.id)))
			switch {
			case p.name == tracing.SpanAccept:
				t.last[p.id], t.root[p.id] = span.SpanContext(), span.SpanContext()
			case p.fail:
				span.SetStatus(codes.Error, p.err)
				delete(t.last, p.id)
				delete(t.root, p.id)
			default:
				span.SetStatus(codes.Ok, "")
				delete(t.last, p.id)
				delete(t.root, p.id)
			}
			span.End()
		}
		if next != nil {
			next()
		}
	}
}

// handOut records a foreman.handout span for each traced Work in msg (a
// Work or a WorkBundle the master sends a worker) and sets the Work's
// trace_parent to it: the worker's foreman.execute span goes under it.
// The Works are the core's fresh copies, made for this send.
func (t *masterTracer) handOut(msg any, to *messages.PID) {
	switch m := msg.(type) {
	case *messages.Work:
		t.handOutWork(m, to)
	case *messages.WorkBundle:
		for _, w := range m.GetWorks() {
			t.handOutWork(w, to)
		}
	}
}

func (t *masterTracer) handOutWork(w *messages.Work, to *messages.PID) {
	parent, ok := t.last[w.GetWorkId()]
	if !ok {
		if parent = tracing.SpanContextOf(w.GetTraceParent()); !parent.IsValid() {
			return
		}
		t.root[w.GetWorkId()] = parent // the submission: the acceptance was another activation's
	}
	_, span := t.tracer.Start(trace.ContextWithRemoteSpanContext(context.Background(), parent), tracing.SpanHandOut,
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("foreman.work_id", w.GetWorkId()),
			attribute.Int("foreman.attempt", int(w.GetAttempt())),
			attribute.String("foreman.worker", to.GetAddress()+"/"+to.GetId())))
	span.End()
	sc := span.SpanContext()
	t.last[w.GetWorkId()] = sc
	w.TraceParent = tracing.ParentOf(sc)
}

// at is the time of an event's at_unix_nano, or now when it has none.
func at(unixNano int64, now time.Time) time.Time {
	if unixNano == 0 {
		return now
	}
	return time.Unix(0, unixNano)
}
