package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/metrics"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/cmd/foreman/internal/progress"
	"github.com/foreman-actors/foreman/messages"
)

// runNode runs a node until ctx ends (Ctrl-C, SIGTERM) or, with --jobs N,
// until N results are consumed.
func runNode(ctx context.Context, a nodeArgs, stdout, stderr io.Writer) int {
	log := newLogger(stderr, a.logLevel)
	applyMemoryLimit(a.memoryLimit, log)
	defer startGCPace(a.gcHeadroom, log)()
	sec, code, err := startSecurity(ctx, a, log)
	if err != nil {
		printErr(stderr, "foreman: %v\n", strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		return code
	}
	if a.role != node.RoleAll {
		return runClusterNode(ctx, a, sec, stdout, stderr, log)
	}
	m := metrics.New()
	mopts, wopts, closePool, err := tuning(a, m, false)
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
	opts := []node.LocalOption{node.WithDataDir(a.data), node.WithJournalURL(a.journal), node.WithWorkers(a.workers), node.WithLogger(log),
		node.WithMasterOptions(mopts...), node.WithWorkerOptions(wopts...), node.WithRateLimits(limits),
		node.WithDrainTimeout(a.drainTimeout)}
	if metricsReadable(a) {
		opts = append(opts, node.WithMetrics(m))
	}
	if a.actorMetrics {
		opts = append(opts, node.WithActorMetrics())
	}
	if err := useActorMeter(a, m); err != nil {
		printErr(stderr, "foreman: %v\n", err)
		return 1
	}
	tp, stopTracing, err := startTracing(ctx, a.otlp, a.role.String(), a.http, log)
	if err != nil {
		printErr(stderr, "foreman: %v\n", err)
		return 2
	}
	defer stopTracing()
	if tp != nil {
		opts = append(opts, node.WithTracerProvider(tp))
	}
	if a.delaySet {
		opts = append(opts, node.WithSquareDelay(a.delay, a.delay))
	}
	n, err := node.StartLocal(ctx, opts...)
	if err != nil {
		printErr(stderr, "foreman: %v\n", err)
		return 1
	}
	hc, err := n.Health()
	if err != nil {
		printErr(stderr, "foreman: %v\n", err)
		_ = n.Stop(context.Background())
		return 1
	}
	stopMetrics, err := startMetricsServer(ctx, a, sec, m, hc, log)
	if err != nil {
		printErr(stderr, "foreman: %v\n", err)
		_ = n.Stop(context.Background())
		return 1
	}
	defer stopMetrics()
	stopProfiles, _, err := startProfileServer(ctx, a, log)
	if err != nil {
		printErr(stderr, "foreman: %v\n", err)
		_ = n.Stop(context.Background())
		return 1
	}
	defer stopProfiles()
	watchMembers(m, httpapi.LocalMembers(n.System()), log)
	var stopHTTP func(context.Context) error
	stopNode := func() int {
		sctx, cancel := context.WithTimeout(context.Background(), a.drainTimeout+30*time.Second)
		defer cancel()
		if stopHTTP != nil { // stop taking requests before the node goes
			if err := stopHTTP(sctx); err != nil {
				log.Warn("stopping the HTTP API", "error", err)
			}
		}
		if err := n.Stop(sctx); err != nil {
			printErr(stderr, "foreman: stopping: %v\n", err)
			return 1
		}
		return 0
	}
	sys := n.System()
	if a.http != "" {
		stopHTTP, err = startLocalHTTP(ctx, n, a.http, sec, m, hc, log, httpapi.WithTracerProvider(tp))
		if err != nil {
			printErr(stderr, "foreman: %v\n", err)
			stopNode()
			return 1
		}
	}

	// Results: the consumer logs `Consumed result`; with --jobs N we count
	// the results of this run's own work ids.
	runID := newRunID()
	// With --jobs N, a progress line on stderr (stdout keeps the result).
	rep := progress.New("results", int64(a.jobs), stderr, progress.IsTerminal(stderr), clock.Real)
	if a.jobs > 0 {
		pctx, stopProgress := context.WithCancel(ctx)
		defer stopProgress()
		go rep.Run(pctx)
	}
	var (
		mu        sync.Mutex
		consumed  = map[string]bool{}
		submitted = map[string]time.Time{} // work id -> when the producer made it
		first     time.Time                // the first submission
		latencies []time.Duration          // submission -> result, per job
		allDone   = make(chan struct{})
	)
	onResult := func(r *messages.WorkResult) {
		if a.jobs == 0 || !strings.HasPrefix(r.GetWorkId(), runID) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if consumed[r.GetWorkId()] {
			return
		}
		consumed[r.GetWorkId()] = true
		if t, ok := submitted[r.GetWorkId()]; ok {
			latencies = append(latencies, time.Since(t))
			delete(submitted, r.GetWorkId())
		}
		rep.Add(1)
		if len(consumed) == a.jobs {
			close(allDone)
		}
	}
	copts := []frontend.Option{frontend.WithLogger(log), frontend.WithOnResult(countResults(m, onResult)), frontend.WithDedupe(1 << 16)}
	if a.jobs > 0 {
		// One line per result would bury the progress line and the
		// summary: the results of a --jobs run show at debug.
		copts = append(copts, frontend.WithResultLogLevel(slog.LevelDebug))
	}
	cprops, err := frontend.ConsumerProps(copts...)
	if err != nil {
		printErr(stderr, "foreman: %v\n", err)
		return 1
	}
	consumer := sys.Root.Spawn(cprops)
	// The consumer subscribes to results when it starts, which happens on
	// its own goroutine: wait for it (a request is answered only after
	// Started), or results of the first jobs could be published before it
	// listens and --jobs N would wait forever.
	if _, err := sys.Root.RequestFuture(consumer, &frontend.GetStats{}, 10*time.Second).Result(); err != nil {
		printErr(stderr, "foreman: the result consumer did not start: %v\n", err)
		stopNode()
		return 1
	}

	clients := []*actor.PID{consumer}
	if a.produce { // --produce=false: only the HTTP API (or nothing) submits
		fprops, err := frontend.Props(route.Fixed(n.Master()), frontend.WithLogger(log))
		if err != nil {
			printErr(stderr, "foreman: %v\n", err)
			return 1
		}
		front := sys.Root.Spawn(fprops)
		popts := []frontend.Option{
			frontend.WithLogger(log),
			frontend.WithWorkID(func(i int) string {
				id := runID + strconv.Itoa(i)
				if a.jobs > 0 {
					mu.Lock()
					now := time.Now()
					if first.IsZero() {
						first = now
					}
					submitted[id] = now
					mu.Unlock()
				}
				return id
			}),
		}
		if a.jobs > 0 {
			popts = append(popts, frontend.WithJobs(a.jobs), frontend.WithConcurrency(256))
		}
		pprops, err := frontend.ProducerProps(front, popts...)
		if err != nil {
			printErr(stderr, "foreman: %v\n", err)
			return 1
		}
		// The producer stops before the frontend actor it sends to.
		clients = append([]*actor.PID{sys.Root.Spawn(pprops), front}, clients...)
	}
	stopClients := func() {
		for _, pid := range clients {
			_ = sys.Root.StopFuture(pid).Wait()
		}
	}

	if a.jobs == 0 {
		<-ctx.Done()
		log.Info("shutting down")
		stopClients()
		return stopNode()
	}
	select {
	case <-allDone:
		rep.Finish()
		mu.Lock()
		sum := jobSummary{jobs: a.jobs, elapsed: time.Since(first), latencies: latencies, journal: journalWhere(a)}
		mu.Unlock()
		stopClients()
		code := stopNode()
		if err := sum.write(stdout); err != nil {
			return outputFailed(stderr, "foreman", err)
		}
		if _, err := fmt.Fprintf(stdout, "consumed %d results\n", a.jobs); err != nil {
			return outputFailed(stderr, "foreman", err)
		}
		return code
	case <-ctx.Done():
		log.Info("shutting down before all results were consumed")
		stopClients()
		stopNode()
		return 1
	}
}

// newRunID returns a prefix unique to this run for the producer's work ids.
func newRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "run-" + hex.EncodeToString(b[:]) + "-"
}

// journalWhere names the all-in-one node's journal for the summary: the
// --journal URL with its password masked, or the SQLite file in --data.
func journalWhere(a nodeArgs) string {
	if a.journal != "" {
		return journal.RedactURL(a.journal)
	}
	p := filepath.Join(a.data, node.JournalFile)
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	return "sqlite:" + p
}
