package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// otlpSpan is one span a receiver got, with the role of the process that
// sent it (its resource's foreman.role).
type otlpSpan struct {
	role, name      string
	trace, id, par  string // hex
	status          tracepb.Status_StatusCode
	receivedOverRPC bool
}

// otlpReceiver is an in-process OTLP collector: the collector's gRPC
// TraceService and its HTTP endpoint (POST /v1/traces, protobuf), both
// keeping every span they are sent.
type otlpReceiver struct {
	coltrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []otlpSpan
}

func (r *otlpReceiver) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	r.add(req, true)
	return &coltrace.ExportTraceServiceResponse{}, nil
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	var msg coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &msg)
	}
	if err != nil || req.URL.Path != "/v1/traces" {
		http.Error(w, fmt.Sprintf("bad export to %s: %v", req.URL.Path, err), http.StatusBadRequest)
		return
	}
	r.add(&msg, false)
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	_, _ = w.Write(b)
}

func (r *otlpReceiver) add(req *coltrace.ExportTraceServiceRequest, rpc bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		role := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "foreman.role" {
				role = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, otlpSpan{role: role, name: s.GetName(), trace: hex.EncodeToString(s.GetTraceId()),
					id: hex.EncodeToString(s.GetSpanId()), par: hex.EncodeToString(s.GetParentSpanId()),
					status: s.GetStatus().GetCode(), receivedOverRPC: rpc})
			}
		}
	}
}

// byName returns the spans of trace named name.
func (r *otlpReceiver) byName(trace, name string) []otlpSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []otlpSpan
	for _, s := range r.spans {
		if s.trace == trace && s.name == name {
			out = append(out, s)
		}
	}
	return out
}

func (r *otlpReceiver) dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, s := range r.spans {
		fmt.Fprintf(&b, "%s %s trace=%s id=%s parent=%s status=%v grpc=%v\n", s.role, s.name, s.trace, s.id, s.par, s.status, s.receivedOverRPC)
	}
	return b.String()
}

// TestTraceAcrossProcesses runs a backend and a worker exporting over OTLP
// gRPC and a frontend exporting over OTLP HTTP to an in-process receiver,
// submits a job with a W3C traceparent to the frontend's POST /work, and
// checks that the spans of the 3 processes are in the submitter's trace and
// chained by their parents: the caller's span → foreman.http.submit →
// foreman.submit (frontend) → foreman.accept → foreman.handout (backend) →
// foreman.execute (worker), and foreman.result (backend) under the
// acceptance, each with its status.
func TestTraceAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real cluster processes; skipped with -short")
	}
	// The nodes' batch span processors send every 100 ms (the SDK reads
	// this from the environment the processes inherit).
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	recv := &otlpReceiver{}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(gs, recv)
	go func() { _ = gs.Serve(gl) }()
	t.Cleanup(gs.Stop)
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{Handler: recv, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(hl) }()
	t.Cleanup(func() { _ = hs.Close() })
	grpcEndpoint := "--otlp-endpoint=grpc://" + gl.Addr().String()
	httpEndpoint := "--otlp-endpoint=http://" + hl.Addr().String()

	ports := pickWalkPorts(t)
	seeds := fmt.Sprintf("--seeds=127.0.0.1:%d", ports.backend1)
	httpPort := freePort(t)
	g := newProcGroup(t)
	b := g.start(ctx, "backend", strconv.Itoa(ports.backend1), seeds, "--data", t.TempDir(), grpcEndpoint)
	b.waitLine(t, "node started", 1, 60*time.Second)
	front := g.start(ctx, "frontend", strconv.Itoa(ports.frontend), seeds, "--produce=false",
		"--http", "127.0.0.1:"+strconv.Itoa(httpPort), httpEndpoint)
	g.start(ctx, "worker", "0", seeds, "--workers", "1", grpcEndpoint)
	front.waitLine(t, "HTTP API listening", 1, 60*time.Second)

	const traceID, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	client := &http.Client{Timeout: 10 * time.Second}
	require.Eventually(t, func() bool {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/work", httpPort),
			strings.NewReader(`{"id":"traced-1","type":"square","payload":7}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("traceparent", "00-"+traceID+"-"+callerSpan+"-01")
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusCreated
	}, 60*time.Second, 200*time.Millisecond, "POST /work is accepted\n%s", g.tails())

	one := func(name string) otlpSpan {
		var s []otlpSpan
		require.Eventually(t, func() bool {
			s = recv.byName(traceID, name)
			return len(s) > 0
		}, 60*time.Second, 100*time.Millisecond, "a %s span in the caller's trace\nspans:\n%s\n%s", name, recv.dump(), g.tails())
		require.Len(t, s, 1, "one %s span\n%s", name, recv.dump())
		return s[0]
	}
	accept := one("foreman.accept")
	handout := one("foreman.handout")
	execute := one("foreman.execute")
	result := one("foreman.result")
	// A POST retried by the loop above (the cluster was still forming)
	// adds submission spans to the trace: follow the accepted one's
	// parents.
	parentOf := func(child otlpSpan, name string) otlpSpan {
		var found []otlpSpan
		require.Eventually(t, func() bool {
			found = nil
			for _, s := range recv.byName(traceID, name) {
				if s.id == child.par {
					found = append(found, s)
				}
			}
			return len(found) > 0
		}, 30*time.Second, 100*time.Millisecond, "the parent of %s is a %s span\nspans:\n%s", child.name, name, recv.dump())
		return found[0]
	}
	submit := parentOf(accept, "foreman.submit")
	httpSubmit := parentOf(submit, "foreman.http.submit")

	require.Equal(t, callerSpan, httpSubmit.par, "the HTTP span is under the caller's traceparent")
	require.Equal(t, accept.id, handout.par, "hand-out under accept")
	require.Equal(t, handout.id, execute.par, "execute under the hand-out")
	require.Equal(t, accept.id, result.par, "result under the acceptance: the job's outcome, not one attempt's")

	for _, s := range []otlpSpan{httpSubmit, submit} {
		require.Equal(t, "frontend", s.role, s.name)
		require.False(t, s.receivedOverRPC, "the frontend exports over OTLP HTTP")
	}
	for _, s := range []otlpSpan{accept, handout, result} {
		require.Equal(t, "backend", s.role, s.name)
		require.True(t, s.receivedOverRPC, "the backend exports over OTLP gRPC")
	}
	require.Equal(t, "worker", execute.role)
	require.True(t, execute.receivedOverRPC, "the worker exports over OTLP gRPC")
	require.Equal(t, tracepb.Status_STATUS_CODE_OK, submit.status)
	require.Equal(t, tracepb.Status_STATUS_CODE_OK, execute.status)
	require.Equal(t, tracepb.Status_STATUS_CODE_OK, result.status)
}
