package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/cmd/foreman/internal/bench"
	"github.com/foreman-actors/foreman/cmd/foreman/internal/cpustat"
	"github.com/foreman-actors/foreman/cmd/foreman/internal/progress"
)

// httpBenchFlags are the flags of `foreman bench --to ADDR`, the mode that
// drives a running cluster through a frontend's HTTP API.
type httpBenchFlags struct {
	client        clientFlags
	mode          string
	connections   int
	batch         int
	jobType       string
	payload       string
	results       bool
	resultTimeout time.Duration
	cpu           *cpustat.Meter // this process and those of --cpu-of
}

// Flags of one mode that make no sense in the other.
var (
	oneProcessOnly = []string{"workers", "window", "data", "submitters"}
	httpOnly       = []string{"mode", "connections", "batch", "type", "payload", "results", "result-timeout", "token-file", "cacert"}
)

func registerHTTPBenchFlags(fs *flag.FlagSet) *httpBenchFlags {
	f := &httpBenchFlags{}
	fs.StringVar(&f.client.to, "to", "", "drive the running cluster behind this frontend's HTTP API (`host:port` or URL) instead of a node in this process")
	fs.StringVar(&f.client.tokenFile, "token-file", "", "with --to: file whose first token is sent as the bearer token")
	fs.StringVar(&f.client.cacert, "cacert", "", "with --to: CA certificate(s) (PEM) to verify an https:// API with")
	fs.StringVar(&f.mode, "mode", string(bench.HTTPSingle), "with --to: single (POST /work, one job a request), batch (POST /work/batch) or grouped (one job per call from --connections goroutines sharing the Go client's SubmitGroup, which gathers the calls made meanwhile into POST /work/batch)")
	fs.IntVar(&f.connections, "connections", 64, "with --to: requests in flight at once")
	fs.IntVar(&f.batch, "batch", 1000, "with --to --mode batch: jobs per request")
	fs.StringVar(&f.jobType, "type", "square", "with --to: the job type (the workers must know it)")
	fs.StringVar(&f.payload, "payload", "7", "with --to: the job's payload, a JSON value")
	fs.BoolVar(&f.results, "results", true, "with --to: read every result back from GET /results (false: measure durable acks only)")
	fs.DurationVar(&f.resultTimeout, "result-timeout", 2*time.Minute, "with --to: how long to wait for the remaining results after the last ack")
	return f
}

// run runs the HTTP mode when --to was given (handled true); otherwise it
// only checks that no HTTP-only flag was set.
func (f *httpBenchFlags) run(ctx context.Context, fs *flag.FlagSet, jobs, light int, stdout, stderr io.Writer) (code int, handled bool) {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if f.client.to == "" {
		for _, name := range httpOnly {
			if set[name] {
				printErr(stderr, "foreman bench: --%s drives a running cluster: give its frontend with --to host:port (see foreman bench -h)\n", name)
				return 2, true
			}
		}
		return 0, false
	}
	for _, name := range oneProcessOnly {
		if set[name] {
			printErr(stderr, "foreman bench: --%s sizes the node of the one-process mode; with --to the cluster is already running (use --connections for the load)\n", name)
			return 2, true
		}
	}
	if !f.results && !set["light"] {
		light = 0 // the light phase reads results; without them it has nothing to time
	}
	cfg := bench.HTTPConfig{
		Mode: bench.HTTPMode(f.mode), Jobs: jobs, Connections: f.connections, Batch: f.batch,
		Type: f.jobType, Payload: json.RawMessage(f.payload), Results: f.results, ResultTimeout: f.resultTimeout,
		LightJobs: light, CPU: f.cpu,
	}
	if f.payload == "" {
		cfg.Payload = nil
	}
	c, err := f.client.newClient()
	if err == nil {
		cfg.Client = c
		err = cfg.Validate()
	}
	if err != nil {
		printErr(stderr, "foreman bench: %v\n", err)
		return 2, true
	}
	if _, err := fmt.Fprintf(stdout, "foreman bench: %d jobs of type %s to %s, mode %s, %d connections\n", jobs, cfg.Type, c.Base(), cfg.Mode, cfg.Connections); err != nil {
		return outputFailed(stderr, "foreman bench", err), true
	}
	rep := progress.New("bench acks", int64(jobs), stderr, progress.IsTerminal(stderr), clock.Real)
	cfg.OnAck = func(n int) { rep.Add(int64(n)) }
	pctx, stopProgress := context.WithCancel(ctx)
	go rep.Run(pctx)
	res, err := bench.RunHTTP(ctx, cfg)
	stopProgress()
	rep.Finish()
	if err != nil {
		printErr(stderr, "foreman bench: %v\n", err)
		return 1, true
	}
	if _, err := fmt.Fprint(stdout, res); err != nil {
		return outputFailed(stderr, "foreman bench", err), true
	}
	return 0, true
}
