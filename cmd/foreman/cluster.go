package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/metrics"
	"github.com/foreman-actors/foreman/cluster/node"
)

// startProducer runs the sample's simulated clients on a frontend node: a
// Frontend actor that asks the master, fed by a WorkProducer.
func startProducer(n *node.ClusterNode, a nodeArgs, log *slog.Logger) error {
	sys := n.System()
	fprops, err := frontend.Props(n.Locator().Route(), frontend.WithLogger(log), frontend.WithAskTimeout(node.DefaultFrontendAskTimeout))
	if err != nil {
		return err
	}
	front := sys.Root.Spawn(fprops)
	popts := []frontend.Option{frontend.WithLogger(log)}
	if a.jobs > 0 {
		popts = append(popts, frontend.WithJobs(a.jobs), frontend.WithConcurrency(256))
	}
	pprops, err := frontend.ProducerProps(front, popts...)
	if err != nil {
		return err
	}
	sys.Root.Spawn(pprops)
	return nil
}

// runClusterNode runs a backend, frontend or worker node of a cluster until
// ctx ends (SIGTERM or Ctrl-C), then leaves the cluster gracefully.
func runClusterNode(ctx context.Context, a nodeArgs, sec *security, stdout, stderr io.Writer, log *slog.Logger) int {
	prov, err := node.NewMembership(a.membership, a.seeds, a.host, log, sec.material(), sec.membershipOptions()...)
	if err != nil {
		printErr(stderr, "foreman: %v\n", err)
		return 2
	}
	m := metrics.New()
	mopts, wopts, closePool, err := tuning(a, m, true)
	if err != nil {
		printErr(stderr, "foreman: %v\n", err)
		return 2
	}
	defer closePool()
	limits, err := node.ParseRateLimits(a.rate)
	if err != nil {
		printErr(stderr, "foreman: --rate: %v\n", err)
		return 2
	}
	cfg := node.ClusterConfig{
		RateLimits:       limits,
		ChangeRateLimits: a.changeRate,
		NoResultsPubSub:  !a.resultsPubSub,
		MasterOptions:    mopts,
		WorkerOptions:    wopts,
		Role:             a.role,
		Host:             a.host,
		Port:             a.port,
		Provider:         prov,
		DataDir:          a.data,
		Workers:          a.workers,
		DrainTimeout:     a.drainTimeout,
		Shards:           a.shards,
		Logger:           log,
		TLS:              sec.node,
		Metrics:          m,
		ActorMetrics:     a.actorMetrics,
	}
	if a.role == node.RoleFrontend {
		cfg.OnResult = countResults(m, nil)
	}
	if err := useActorMeter(a, m); err != nil {
		printErr(stderr, "foreman: %v\n", err)
		return 1
	}
	tp, stopTracing, err := startTracing(ctx, a.otlp, a.role.String(), fmt.Sprintf("%s:%d", a.host, a.port), log)
	if err != nil {
		printErr(stderr, "foreman: %v\n", err)
		return 2
	}
	defer stopTracing()
	cfg.TracerProvider = tp
	if !metricsReadable(a) {
		cfg.Metrics = nil // see metricsReadable
	}
	switch {
	case a.role == node.RoleBackend:
		cfg.JournalURL = a.journal
	case a.journal != "":
		// Only from the environment (parseNodeArgs refuses the flag here).
		log.Warn("ignoring "+journalEnv+": only backend nodes have a journal", "role", a.role.String())
	}
	if a.role == node.RoleWorker && a.delaySet {
		cfg.Registry = builtinRegistry(a)
	}
	if a.role == node.RoleFrontend && a.data != "" {
		// The result consumer resumes from its cursor after a restart. The
		// directory is not created for a frontend (it has no journal): the
		// cursor is kept in memory when it does not exist.
		if st, err := os.Stat(a.data); err == nil && st.IsDir() {
			cfg.ResultCursor = frontend.FileCursor{Path: filepath.Join(a.data, fmt.Sprintf("results-%d.cursor", a.port))}
		}
	}
	n, err := node.StartCluster(ctx, cfg)
	if err != nil {
		printErr(stderr, "foreman: %v\n", err)
		return 1
	}
	hc, err := n.Health()
	if err != nil {
		printErr(stderr, "foreman: %v\n", err)
		n.Kill()
		return 1
	}
	stopMetrics, err := startMetricsServer(ctx, a, sec, m, hc, log)
	if err != nil {
		printErr(stderr, "foreman: %v\n", err)
		n.Kill()
		return 1
	}
	defer stopMetrics()
	stopProfiles, _, err := startProfileServer(ctx, a, log)
	if err != nil {
		printErr(stderr, "foreman: %v\n", err)
		n.Kill()
		return 1
	}
	defer stopProfiles()
	watchMembers(m, httpapi.ClusterMembers(n.Cluster()), log)
	var stopHTTP func(context.Context) error
	if a.role == node.RoleFrontend {
		addr := a.http
		if addr == "" {
			addr = fmt.Sprintf("%s:%d", a.host, a.port+5000)
		}
		stopHTTP, err = startHTTP(ctx, n, addr, sec, m, hc, log, httpapi.WithTracerProvider(tp))
		if err != nil {
			printErr(stderr, "foreman: %v\n", err)
			n.Kill()
			return 1
		}
	}
	if a.role == node.RoleFrontend && a.produce {
		if err := startProducer(n, a, log); err != nil {
			printErr(stderr, "foreman: %v\n", err)
			n.Kill()
			return 1
		}
	}
	<-ctx.Done()
	log.Info("leaving the cluster")
	sctx, cancel := context.WithTimeout(context.Background(), a.drainTimeout+30*time.Second)
	defer cancel()
	if stopHTTP != nil {
		if err := stopHTTP(sctx); err != nil {
			log.Warn("stopping the HTTP API", "error", err)
		}
	}
	if err := n.Stop(sctx); err != nil {
		printErr(stderr, "foreman: leaving: %v\n", err)
		return 1
	}
	return 0
}
