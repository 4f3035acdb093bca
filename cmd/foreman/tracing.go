package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/foreman-actors/foreman/cluster/metrics"
)

// otlpArgs are the tracing flags (docs/tracing.md).
type otlpArgs struct {
	// endpoint is --otlp-endpoint: empty, tracing is off (no exporter, no
	// SDK: the node gets no TracerProvider at all).
	endpoint string
	// protocol is --otlp-protocol for an endpoint without a scheme.
	protocol string
	// sampling is --otlp-sampling: the ratio of new traces recorded; a
	// span with a parent follows its parent's decision.
	sampling float64
}

// tracingShutdownTimeout bounds the flush of the spans still buffered when
// the node exits.
const tracingShutdownTimeout = 5 * time.Second

func (o *otlpArgs) register(fs *flag.FlagSet) {
	o.protocol, o.sampling = "grpc", 1
	fs.StringVar(&o.endpoint, "otlp-endpoint", "", "export OpenTelemetry traces of the jobs to this OTLP collector (off when empty): http://HOST:4318 or https://... for OTLP over HTTP (path /v1/traces unless the URL has one), grpc://HOST:4317 (plain) or grpcs://HOST:4317 (TLS) for OTLP over gRPC, or HOST:PORT with --otlp-protocol")
	fs.StringVar(&o.protocol, "otlp-protocol", o.protocol, "OTLP protocol for an --otlp-endpoint without a scheme: grpc or http (both plain text)")
	fs.Func("otlp-sampling", "the ratio of new traces to record, 0 to 1 (default 1); a job submitted under a trace follows that trace's decision", func(s string) error {
		r, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("not a number: %w", err)
		}
		if r < 0 || r > 1 {
			return errors.New("must be between 0 and 1")
		}
		o.sampling = r
		return nil
	})
}

// exporter returns the OTLP span exporter that --otlp-endpoint names.
func (o otlpArgs) exporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	scheme, rest, found := strings.Cut(o.endpoint, "://")
	if !found {
		if _, _, err := net.SplitHostPort(o.endpoint); err != nil {
			return nil, fmt.Errorf("--otlp-endpoint %q: want HOST:PORT or a URL such as http://localhost:4318 or grpc://localhost:4317: %w", o.endpoint, err)
		}
		switch o.protocol {
		case "grpc":
			scheme = "grpc"
		case "http":
			scheme = "http"
		default:
			return nil, fmt.Errorf("--otlp-protocol %q: want grpc or http", o.protocol)
		}
		rest = o.endpoint
	}
	var client otlptrace.Client
	switch scheme {
	case "grpc", "grpcs":
		host := strings.TrimSuffix(rest, "/")
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(host)}
		if scheme == "grpc" {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		client = otlptracegrpc.NewClient(opts...)
	case "http", "https":
		u, err := url.Parse(scheme + "://" + rest)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("--otlp-endpoint %q: not a URL with a host (e.g. http://localhost:4318)", o.endpoint)
		}
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(u.Host)}
		if u.Path != "" && u.Path != "/" {
			opts = append(opts, otlptracehttp.WithURLPath(u.Path))
		}
		if scheme == "http" {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		client = otlptracehttp.NewClient(opts...)
	default:
		return nil, fmt.Errorf("--otlp-endpoint %q: unknown scheme %q; use http, https, grpc or grpcs", o.endpoint, scheme)
	}
	exp, err := otlptrace.New(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("--otlp-endpoint %q: %w", o.endpoint, err)
	}
	return exp, nil
}

// startTracing returns the TracerProvider of --otlp-endpoint and the
// function that flushes and stops it; a nil provider and a no-op when the
// flag is unset. The provider is handed to the node and the HTTP API as
// options: the binary, like the library, leaves OpenTelemetry's global
// TracerProvider alone. role and instance name the spans' resource.
func startTracing(ctx context.Context, o otlpArgs, role, instance string, log *slog.Logger) (trace.TracerProvider, func(), error) {
	if o.endpoint == "" {
		return nil, func() {}, nil
	}
	exp, err := o.exporter(ctx)
	if err != nil {
		return nil, nil, err
	}
	res := resource.NewSchemaless(attribute.String("service.name", "foreman"),
		attribute.String("service.instance.id", instance), attribute.String("foreman.role", role))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(o.sampling))))
	log.Info("exporting traces", "otlp_endpoint", o.endpoint, "sampling", o.sampling)
	return tp, func() {
		ctx, cancel := context.WithTimeout(context.Background(), tracingShutdownTimeout)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			log.Warn("flushing the last traces failed", "otlp_endpoint", o.endpoint, "error", err)
		}
	}, nil
}

// useActorMeter installs m's MeterProvider as OpenTelemetry's global one
// for --actor-metrics: the pinned protoactor makes its instruments with the
// global meter. The binary is the application here, so this is its
// choice; the library (metrics.ActorSystemOption) never makes it.
func useActorMeter(a nodeArgs, m *metrics.Metrics) error {
	if !a.actorMetrics {
		return nil
	}
	mp, err := m.MeterProvider()
	if err != nil {
		return err
	}
	otel.SetMeterProvider(mp)
	return nil
}
