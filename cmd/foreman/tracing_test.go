package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOTLPFlags: --otlp-endpoint picks the exporter by scheme or
// --otlp-protocol, and bad values get an error that says what to give;
// unset, there is no provider at all.
func TestOTLPFlags(t *testing.T) {
	t.Parallel()
	parse := func(args ...string) (otlpArgs, error) {
		var o otlpArgs
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.register(fs)
		return o, fs.Parse(args)
	}
	o, err := parse()
	require.NoError(t, err)
	require.Equal(t, otlpArgs{protocol: "grpc", sampling: 1}, o)
	tp, stop, err := startTracing(t.Context(), o, "all", "", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Nil(t, tp, "off: no provider")
	stop()

	for _, bad := range []string{"-1", "1.5", "half"} {
		_, err := parse("--otlp-sampling", bad)
		require.Error(t, err, bad)
	}
	o, err = parse("--otlp-sampling", "0.01")
	require.NoError(t, err)
	require.InDelta(t, 0.01, o.sampling, 1e-12)

	for _, ok := range []otlpArgs{
		{endpoint: "grpc://127.0.0.1:4317"}, {endpoint: "grpcs://collector:4317"},
		{endpoint: "http://127.0.0.1:4318"}, {endpoint: "https://collector/otlp/v1/traces"},
		{endpoint: "127.0.0.1:4317", protocol: "grpc"}, {endpoint: "127.0.0.1:4318", protocol: "http"},
	} {
		exp, err := ok.exporter(context.Background())
		require.NoError(t, err, ok.endpoint)
		require.NoError(t, exp.Shutdown(context.Background()))
	}
	for _, c := range []struct {
		o    otlpArgs
		want string
	}{
		{otlpArgs{endpoint: "udp://127.0.0.1:4317"}, `unknown scheme "udp"`},
		{otlpArgs{endpoint: "collector"}, "want HOST:PORT or a URL"},
		{otlpArgs{endpoint: "127.0.0.1:4317", protocol: "thrift"}, "want grpc or http"},
		{otlpArgs{endpoint: "http://"}, "not a URL with a host"},
	} {
		_, err := c.o.exporter(context.Background())
		require.ErrorContains(t, err, c.want, c.o.endpoint)
	}
}
