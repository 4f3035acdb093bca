// Command compare measures other job systems the way `foreman bench` measures
// Foreman, so that issue 17's targets can be judged on one machine: jobs are
// submitted by concurrent producers, each counts as acked when the system has
// accepted it (durable as far as the system's settings make it), and a no-op
// handler running in the same process counts the jobs it has run.
//
// Usage:
//
//	compare asynq --redis 127.0.0.1:6390 --producers 64 --concurrency 8 --jobs 100000
//	compare river --dsn postgres://... --mode single --producers 64 --workers 5000 --jobs 40000
//	compare river --dsn postgres://... --mode many --batch 1000 --producers 4 --workers 5000 --jobs 200000
//
// Each run prints one labeled line per figure (see [result.print]): the
// enqueue (ack) rate, the end-to-end rate (first enqueue until the handler has
// run all jobs), and the enqueue latency percentiles.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// errUsage reports a command line that names no known subcommand.
var errUsage = errors.New("compare: usage: compare asynq|river [flags] (see -h of each)")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run dispatches to the subcommand named by args[0].
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	switch args[0] {
	case "asynq":
		return runAsynq(ctx, args[1:], stdout, stderr)
	case "river":
		return runRiver(ctx, args[1:], stdout, stderr)
	default:
		return fmt.Errorf("%w: unknown subcommand %q", errUsage, args[0])
	}
}
