// Command foreman runs a Foreman node, or talks to one.
//
//	foreman                 backend, frontend and worker in one process
//	foreman 2551            a backend node (2000-2999; 2551 and 2552 are the default seeds)
//	foreman 3001            a frontend node (3000-3999) with the HTTP API on port+5000
//	foreman 0               a worker node on a free port
//	foreman bench           measure end-to-end throughput and latency in one process
//	foreman submit|status   clients of a frontend's HTTP API
//	foreman certs           make a CA, node certificates and API tokens
//	foreman sim             search the protocol's schedules in the deterministic simulator
//
// Run `foreman -h` or `foreman bench -h` for the flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code (0 success,
// 1 failure, 2 bad command line).
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) > 0 {
		switch args[0] {
		case "bench":
			return runBench(ctx, args[1:], stdout, stderr)
		case "submit":
			return runSubmit(args[1:], stdout, stderr)
		case "status":
			return runStatus(args[1:], stdout, stderr)
		case "queue":
			return runQueue(args[1:], stdout, stderr)
		case "schedule":
			return runSchedule(args[1:], stdout, stderr)
		case "rate":
			return runRate(args[1:], stdout, stderr)
		case "limit":
			return runLimit(args[1:], stdout, stderr)
		case "certs":
			return runCerts(args[1:], stdout, stderr)
		case "sim":
			return runSim(ctx, args[1:], stdout, stderr)
		case "help":
			args = []string{"-h"}
		}
	}
	a, err := parseNodeArgs(args, os.Getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		printErr(stderr, "foreman: %v\n", strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		return 2
	}
	return runNode(ctx, a, stdout, stderr)
}

// printErr writes a diagnostic to stderr. A failed write is dropped on
// purpose: stderr is where failures are reported, so there is nowhere left
// to report that one, and the exit code still says the command failed.
func printErr(stderr io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(stderr, format, args...)
}

// outputFailed reports that cmd's own output could not be written to
// stdout (a closed pipe, a full disk) and returns exit code 1: whoever
// reads stdout must not take the missing output for success.
func outputFailed(stderr io.Writer, cmd string, err error) int {
	printErr(stderr, "%s: writing the output: %v\n", cmd, err)
	return 1
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("%q is not a level: use debug, info, warn or error", s)
	}
	return l, nil
}

func newLogger(w io.Writer, level string) *slog.Logger {
	l, _ := parseLevel(level)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}
