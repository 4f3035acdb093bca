package httpapi

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/foreman-actors/foreman/actors/tracing"
)

// traceParentHeader is the W3C trace-context header (canonical form).
const traceParentHeader = "Traceparent"

// WithTracerProvider makes the server start a foreman.http.submit span for
// each POST /work and POST /work/batch, under the request's W3C
// traceparent header when it has one. Without it, a traceparent is still
// honoured: the jobs carry it to the master and the worker. The provider
// is used as given: the server never reads or sets OpenTelemetry's global
// one.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracer = tracing.Tracer(tp) }
}

// traceSubmit runs a submission handler under the request's trace: its
// traceparent as the remote parent of the ctx, and the server's span when
// it has a tracer. An untraced request without a header costs a header
// look-up.
func (s *Server) traceSubmit(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		parent := r.Header.Get(traceParentHeader)
		if s.cfg.tracer == nil {
			if parent != "" {
				r = r.WithContext(tracing.WithParent(r.Context(), parent))
			}
			h(w, r)
			return
		}
		ctx, span := s.cfg.tracer.Start(tracing.WithParent(r.Context(), parent), tracing.SpanHTTPSubmit,
			trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		defer func() {
			span.SetAttributes(attribute.Int("http.response.status_code", sw.code))
			if sw.code >= http.StatusInternalServerError {
				span.SetStatus(codes.Error, http.StatusText(sw.code))
			}
			span.End()
		}()
		h(sw, r.WithContext(ctx))
	}
}

// statusWriter notes the status code a handler answers; Unwrap keeps
// http.ResponseController working through it.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
