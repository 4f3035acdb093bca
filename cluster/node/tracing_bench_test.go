package node_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/messages"
)

// otlpSink is an OTLP gRPC collector that counts the spans it is sent and
// drops them.
type otlpSink struct {
	coltrace.UnimplementedTraceServiceServer
	spans atomic.Int64
}

func (s *otlpSink) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			s.spans.Add(int64(len(ss.GetSpans())))
		}
	}
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// BenchmarkLocalTracing measures what tracing costs a job end to end (one
// Client.Do: submit, accept, hand-out, run, result) on a one-process node
// over the in-memory journal: off (no TracerProvider), and on with the
// SDK's batch processor exporting over OTLP gRPC to an in-process sink, at
// sampling ratios 1 and 0.01 (parent-based, as --otlp-sampling). The
// sub-benchmarks alternate with -count. docs/benchmarks/issue38-otel.md.
func BenchmarkLocalTracing(b *testing.B) {
	for _, ratio := range []float64{-1, 1, 0.01} {
		name := "off"
		if ratio >= 0 {
			name = "ratio=" + strconv.FormatFloat(ratio, 'f', -1, 64)
		}
		b.Run(name, func(b *testing.B) {
			var (
				tp  trace.TracerProvider
				sdk *sdktrace.TracerProvider
			)
			sink := &otlpSink{}
			if ratio >= 0 {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				require.NoError(b, err)
				gs := grpc.NewServer()
				coltrace.RegisterTraceServiceServer(gs, sink)
				go func() { _ = gs.Serve(l) }()
				defer gs.Stop()
				exp, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpoint(l.Addr().String()), otlptracegrpc.WithInsecure())
				require.NoError(b, err)
				sdk = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
					sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))))
				defer func() { require.NoError(b, sdk.Shutdown(context.Background())) }()
				tp = sdk
			}
			reg := worker.NewRegistry()
			require.NoError(b, worker.RegisterBuiltins(reg, worker.WithSquareDelay(0, 0)))
			mem := journal.NewMemory()
			defer func() { _ = mem.Close() }()
			opts := []node.LocalOption{node.WithJournal(mem), node.WithWorkers(4), node.WithRegistry(reg),
				node.WithLogger(slog.New(slog.DiscardHandler)), node.WithWorkerOptions(worker.WithWindow(16))}
			if tp != nil {
				opts = append(opts, node.WithTracerProvider(tp))
			}
			n, err := node.StartLocal(b.Context(), opts...)
			require.NoError(b, err)
			defer func() { require.NoError(b, n.Stop(context.Background())) }()
			c := n.Client()
			var seq atomic.Int64
			b.SetParallelism(16)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := fmt.Sprintf("%s-%d", name, seq.Add(1))
					if _, err := c.Do(context.Background(), &messages.Work{WorkId: id, JobType: "square", Payload: []byte("3")}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			if sdk != nil { // count what the batch processor still holds too
				require.NoError(b, sdk.ForceFlush(context.Background()))
			}
			b.ReportMetric(float64(sink.spans.Load())/float64(b.N), "exported-spans/op")
		})
	}
}
