package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// riverNoopArgs is the no-op job's arguments: its number, as small a payload
// as Foreman's bench job.
type riverNoopArgs struct {
	N int `json:"n"`
}

// Kind names the job type in River's table.
func (riverNoopArgs) Kind() string { return "noop" }

// riverNoopWorker counts the jobs it runs and does nothing else.
type riverNoopWorker struct {
	river.WorkerDefaults[riverNoopArgs]

	c *counter
}

// Work counts the job.
func (w *riverNoopWorker) Work(context.Context, *river.Job[riverNoopArgs]) error {
	w.c.ran()
	return nil
}

// runRiver inserts --jobs jobs from --producers goroutines, one per
// Client.Insert (--mode single) or --batch per Client.InsertMany (--mode
// many), while a River client in the same process works the default queue
// with --workers workers and a handler that only counts.
func runRiver(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("river", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("dsn", "postgres://postgres@127.0.0.1:5440/bench?sslmode=disable", "PostgreSQL connection string")
	mode := fs.String("mode", "single", "single: Client.Insert, one job per call; many: Client.InsertMany, --batch jobs per call")
	producers := fs.Int("producers", 64, "goroutines inserting concurrently")
	batch := fs.Int("batch", 1000, "jobs per InsertMany call (--mode many)")
	// River fetches at most every FetchCooldown (100 ms by default, kept here)
	// and at most MaxWorkers minus the jobs running, so with no-op jobs its
	// throughput is bounded by about MaxWorkers / FetchCooldown: 10 x workers per
	// second. With 1,000 workers InsertMany measured 9,605/s here, at that
	// bound; 5,000 gave 17,068/s and 10,000 (River's maximum) 16,335/s, so 5,000
	// keeps the bound (50,000/s) out of the way.
	workers := fs.Int("workers", 5000, "river.QueueConfig.MaxWorkers of the default queue")
	jobs := fs.Int("jobs", 30000, "jobs to insert")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up if the workers have not run every job by then")
	var servers pidList
	fs.Var(&servers, "server-pid", "PID of a server process (redis-server, the postmaster) whose CPU, with its children's, is measured; repeatable")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("river: %w", err)
	}
	perCall := 1
	switch *mode {
	case "single":
	case "many":
		perCall = *batch
	default:
		return fmt.Errorf("river: --mode %q is neither single nor many: %w", *mode, errUsage)
	}
	if *producers < 1 || *workers < 1 || *jobs < 1 || perCall < 1 {
		return fmt.Errorf("river: --producers, --workers, --batch and --jobs must be at least 1: %w", errUsage)
	}

	pcfg, err := pgxpool.ParseConfig(*dsn)
	if err != nil {
		return fmt.Errorf("river: parse --dsn: %w", err)
	}
	// One connection per producer plus room for River's own (the producer's
	// fetches, the completer, LISTEN, the leader's maintenance); pgxpool's
	// default, max(4, CPUs), would make 64 producers queue for 4 connections.
	pcfg.MaxConns = int32(*producers + 16) //nolint:gosec // small, validated above
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return fmt.Errorf("river: connect: %w", err)
	}
	defer pool.Close()

	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		return fmt.Errorf("river: migrator: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river: migrate up: %w", err)
	}

	c := newCounter(*jobs)
	w := river.NewWorkers()
	river.AddWorker(w, &riverNoopWorker{c: c})
	client, err := river.NewClient(driver, &river.Config{
		// FetchCooldown and FetchPollInterval are left at River's defaults
		// (100 ms, 1 s): inserts wake the producer through LISTEN/NOTIFY.
		// Completed jobs are kept (CompletedJobRetentionPeriod's default, 24 h),
		// as in any River installation; each run uses a fresh database.
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: *workers}},
		Workers: w,
		Logger:  slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return fmt.Errorf("river: new client: %w", err)
	}
	if err := client.Start(ctx); err != nil {
		return fmt.Errorf("river: start client: %w", err)
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := client.Stop(stopCtx); err != nil {
			_, _ = fmt.Fprintf(stderr, "river: stop client: %v\n", err)
		}
	}()

	submit := func(ctx context.Context, first, _ int) error {
		// Insert's defaults: queue "default", MaxAttempts 25, no uniqueness; each
		// call is its own transaction, committed (and so flushed to the WAL,
		// synchronous_commit on) before it returns.
		if _, err := client.Insert(ctx, riverNoopArgs{N: first}, nil); err != nil {
			return fmt.Errorf("insert: %w", err)
		}
		return nil
	}
	if *mode == "many" {
		submit = func(ctx context.Context, first, count int) error {
			params := make([]river.InsertManyParams, count)
			for i := range params {
				params[i] = river.InsertManyParams{Args: riverNoopArgs{N: first + i}}
			}
			// InsertMany, not InsertManyFast: the one the figure used;
			// one multi-row INSERT in one transaction.
			if _, err := client.InsertMany(ctx, params); err != nil {
				return fmt.Errorf("insert many: %w", err)
			}
			return nil
		}
	}

	res, err := drive(ctx, driveConfig{jobs: *jobs, perCall: perCall, producers: *producers, timeout: *timeout, servers: servers}, c, submit)
	if err != nil {
		return fmt.Errorf("river: %w", err)
	}
	var syncCommit, fsync string
	if err := pool.QueryRow(ctx, "SELECT current_setting('synchronous_commit'), current_setting('fsync')").Scan(&syncCommit, &fsync); err != nil {
		return fmt.Errorf("river: read settings: %w", err)
	}
	return res.print(stdout, fmt.Sprintf("river v0.51.2 mode=%s producers=%d batch=%d workers=%d synchronous_commit=%s fsync=%s",
		*mode, *producers, perCall, *workers, syncCommit, fsync))
}
