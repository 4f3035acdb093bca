package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/foreman-actors/foreman/cluster/health"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/metrics"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/messages"
)

// metricsReadable reports whether anything can read a node's metrics: it
// serves them with --metrics, or on its HTTP API (a frontend; the
// all-in-one node with --http). Only then does the node feed its master's,
// workers' and mailboxes' metrics: keeping them cost a backend about a
// tenth of its CPU per job under batch load (BENCHMARKS.md, issue 17), for
// figures no one could read.
func metricsReadable(a nodeArgs) bool {
	switch {
	case a.metrics != "":
		return true
	case a.role == node.RoleFrontend:
		return true
	case a.role == node.RoleAll:
		return a.http != ""
	}
	return false
}

// startMetricsServer serves m on --metrics ADDR when given, secured as the
// HTTP API is (sec.metricsOptions), with the node's probes (/livez,
// /readyz: hc, public), and returns the function that stops it (a no-op
// without the flag).
func startMetricsServer(ctx context.Context, a nodeArgs, sec *security, m *metrics.Metrics, hc *health.Checker, log *slog.Logger) (func(), error) {
	if a.metrics == "" {
		return func() {}, nil
	}
	opts, err := sec.metricsOptions()
	if err != nil {
		return nil, err
	}
	srv, err := metrics.Serve(ctx, a.metrics, m, append(opts, metrics.WithHealth(hc))...)
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if srv.TLS() {
		scheme = "https"
	}
	log.Info("metrics listening", "addr", scheme+"://"+srv.Addr()+"/metrics", "tls", srv.TLS(), "tokens", srv.Tokens())
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			log.Warn("stopping the metrics server", "error", err)
		}
	}, nil
}

// watchMembers reports the members by role at each scrape, read with
// members (bounded by a short timeout: a scrape must not hang).
func watchMembers(m *metrics.Metrics, members httpapi.MembersFunc, log *slog.Logger) {
	err := m.WatchMembers(func() map[string]int {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		list, err := members(ctx)
		if err != nil {
			return nil
		}
		out := make(map[string]int)
		for _, mb := range list {
			for _, r := range mb.Roles {
				out[r]++
			}
		}
		return out
	})
	if err != nil {
		log.Warn("members metric not registered", "error", err)
	}
}

// countResults wraps a result hook so that each result is counted in m.
func countResults(m *metrics.Metrics, next func(*messages.WorkResult)) func(*messages.WorkResult) {
	return func(r *messages.WorkResult) {
		m.ResultConsumed(r.GetJobType())
		if next != nil {
			next(r)
		}
	}
}
