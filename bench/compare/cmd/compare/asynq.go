package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// asynqTaskType is the type name of the no-op task.
const asynqTaskType = "noop"

// runAsynq enqueues --jobs tasks from --producers goroutines through one
// asynq.Client, while an asynq.Server with --concurrency workers in the same
// process runs a handler that only counts them.
func runAsynq(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("asynq", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("redis", "127.0.0.1:6390", "Redis address")
	producers := fs.Int("producers", 64, "goroutines calling Client.Enqueue concurrently")
	concurrency := fs.Int("concurrency", 8, "asynq.Config.Concurrency: handlers the server runs at once")
	jobs := fs.Int("jobs", 100000, "tasks to enqueue")
	// asynq's processor sleeps this long after finding every queue empty; 1 s is
	// asynq's default. At the start of a run the server may wait up to this long
	// before it sees the first task, which the end-to-end time includes.
	checkInterval := fs.Duration("task-check-interval", time.Second, "asynq.Config.TaskCheckInterval")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up if the handler has not run every task by then")
	var servers pidList
	fs.Var(&servers, "server-pid", "PID of a server process (redis-server, the postmaster) whose CPU, with its children's, is measured; repeatable")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("asynq: %w", err)
	}
	if *producers < 1 || *concurrency < 1 || *jobs < 1 {
		return fmt.Errorf("asynq: --producers, --concurrency and --jobs must be at least 1: %w", errUsage)
	}

	fsync, err := redisAppendFsync(ctx, *addr)
	if err != nil {
		return err
	}

	// One connection per producer, so that producers never queue for a pooled
	// connection (go-redis's default is 10 per CPU, 20 here) and Redis sees every
	// producer's command in the same event-loop pass: with appendfsync always,
	// Redis fsyncs once per pass before it answers, so this lets one fsync
	// cover many producers' commands.
	client := asynq.NewClient(asynq.RedisClientOpt{Addr: *addr, PoolSize: *producers})
	defer func() {
		if err := client.Close(); err != nil {
			_, _ = fmt.Fprintf(stderr, "asynq: close client: %v\n", err)
		}
	}()

	c := newCounter(*jobs)
	srv := asynq.NewServer(asynq.RedisClientOpt{Addr: *addr}, asynq.Config{
		Concurrency:       *concurrency,
		TaskCheckInterval: *checkInterval,
		// Queues left nil: asynq's default, the single queue "default", which is
		// where Client.Enqueue puts a task without the Queue option.
		LogLevel: asynq.WarnLevel,
	})
	err = srv.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		c.ran()
		return nil
	}))
	if err != nil {
		return fmt.Errorf("asynq: start server: %w", err)
	}
	defer srv.Shutdown()

	res, err := drive(ctx, driveConfig{jobs: *jobs, perCall: 1, producers: *producers, timeout: *timeout, servers: servers}, c,
		func(ctx context.Context, first, _ int) error {
			// The payload is the job's number, as small as Foreman's bench job.
			// Enqueue's defaults: queue "default", MaxRetry 25, no uniqueness; the
			// task is deleted once its handler succeeds (no Retention).
			_, err := client.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, strconv.AppendInt(nil, int64(first), 10)))
			if err != nil {
				return fmt.Errorf("enqueue: %w", err)
			}
			return nil
		})
	if err != nil {
		return fmt.Errorf("asynq: %w", err)
	}
	return res.print(stdout, fmt.Sprintf("asynq v0.26.0 redis=%s appendfsync=%s producers=%d concurrency=%d",
		*addr, fsync, *producers, *concurrency))
}

// redisAppendFsync returns the server's AOF setting ("everysec", "always",
// or "off" when appendonly is off), so that a run prints what it measured.
func redisAppendFsync(ctx context.Context, addr string) (fsync string, err error) {
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer func() {
		if cerr := rc.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("asynq: close Redis client: %w", cerr)
		}
	}()
	on, err := rc.ConfigGet(ctx, "appendonly").Result()
	if err != nil {
		return "", fmt.Errorf("asynq: read Redis appendonly at %s: %w", addr, err)
	}
	if on["appendonly"] != "yes" {
		return "off", nil
	}
	conf, err := rc.ConfigGet(ctx, "appendfsync").Result()
	if err != nil {
		return "", fmt.Errorf("asynq: read Redis appendfsync at %s: %w", addr, err)
	}
	return conf["appendfsync"], nil
}
