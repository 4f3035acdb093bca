package node

import (
	"slices"

	"go.opentelemetry.io/otel/trace"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/worker"
)

// WithTracerProvider traces the node's jobs with tp: the frontend
// client's submissions, the master's acceptances, hand-outs and results,
// and the workers' runs, all in the trace of the submission
// (docs/tracing.md). The node uses tp as given and never reads or sets
// OpenTelemetry's global providers; nil (the default) traces nothing. For
// a cluster node, set ClusterConfig.TracerProvider.
func WithTracerProvider(tp trace.TracerProvider) LocalOption {
	return func(c *localConfig) { c.tracer = tp }
}

// withTracing returns cfg with the tracer provider's options placed before
// the caller's own master, worker and frontend options (which may replace
// them).
func (cfg ClusterConfig) withTracing() ClusterConfig {
	if cfg.TracerProvider == nil {
		return cfg
	}
	tp := cfg.TracerProvider
	cfg.MasterOptions = append([]master.Option{master.WithTracerProvider(tp)}, slices.Clone(cfg.MasterOptions)...)
	cfg.WorkerOptions = append([]worker.Option{worker.WithTracerProvider(tp)}, slices.Clone(cfg.WorkerOptions)...)
	cfg.FrontendOptions = append([]frontend.Option{frontend.WithTracerProvider(tp)}, slices.Clone(cfg.FrontendOptions)...)
	return cfg
}
