package main

import (
	"context"
	"log/slog"

	"github.com/foreman-actors/foreman/cluster/health"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/metrics"
	"github.com/foreman-actors/foreman/cluster/node"
)

// startHTTP serves the HTTP API of a frontend node on addr and returns the
// function that shuts it down.
func startHTTP(ctx context.Context, n *node.ClusterNode, addr string, sec *security, m *metrics.Metrics, hc *health.Checker, log *slog.Logger, extra ...httpapi.Option) (func(context.Context) error, error) {
	b, err := httpapi.NewActorBackend(n.Client(), httpapi.ClusterMembers(n.Cluster()), httpapi.WithThrottlers(clusterThrottlers(n)))
	if err != nil {
		return nil, err
	}
	return serveHTTP(ctx, b, addr, sec, m, hc, log, append(extra, httpapi.WithSchedules(n), httpapi.WithRateAdmin(nodeRates{n}))...)
}

// startLocalHTTP serves the HTTP API of an all-in-one node.
func startLocalHTTP(ctx context.Context, n *node.Local, addr string, sec *security, m *metrics.Metrics, hc *health.Checker, log *slog.Logger, extra ...httpapi.Option) (func(context.Context) error, error) {
	b, err := httpapi.NewActorBackend(n.Client(), httpapi.LocalMembers(n.System()))
	if err != nil {
		return nil, err
	}
	return serveHTTP(ctx, b, addr, sec, m, hc, log, append(extra, httpapi.WithSchedules(n), httpapi.WithRateAdmin(nodeRates{n}))...)
}

func serveHTTP(ctx context.Context, b httpapi.Backend, addr string, sec *security, m *metrics.Metrics, hc *health.Checker, log *slog.Logger, extra ...httpapi.Option) (func(context.Context) error, error) {
	secOpts, err := sec.httpOptions()
	if err != nil {
		return nil, err
	}
	srv, err := httpapi.New(b, append([]httpapi.Option{httpapi.WithAddr(addr), httpapi.WithLogger(log), httpapi.WithMetrics(m), httpapi.WithHealth(hc)}, append(secOpts, extra...)...)...)
	if err != nil {
		return nil, err
	}
	if err := srv.Start(ctx); err != nil {
		return nil, err
	}
	log.Info("HTTP API listening", "addr", srv.Addr())
	return srv.Shutdown, nil
}

// clusterThrottlers reports where n's cluster runs each throttler, for
// GET /status.
func clusterThrottlers(n *node.ClusterNode) httpapi.ThrottlersFunc {
	return func(ctx context.Context) []httpapi.ThrottlerInfo {
		places := n.Throttlers(ctx)
		infos := make([]httpapi.ThrottlerInfo, len(places))
		for i, p := range places {
			infos[i] = httpapi.ThrottlerInfo{JobType: p.JobType, Address: p.Address}
			if p.Err != nil {
				infos[i].Error = p.Err.Error()
			}
		}
		return infos
	}
}
