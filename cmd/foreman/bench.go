package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/cmd/foreman/internal/bench"
)

// runBench runs `foreman bench`: end-to-end throughput and latency in one
// process on the SQLite journal with fsync on.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("foreman bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := bench.Config{}
	fs.IntVar(&cfg.Jobs, "jobs", 100000, "jobs of the throughput phase")
	fs.IntVar(&cfg.Submitters, "submitters", 64, "concurrent submitters")
	fs.IntVar(&cfg.Workers, "workers", 8, "workers")
	fs.IntVar(&cfg.Window, "window", 16, "jobs each worker may hold at once")
	fs.IntVar(&cfg.LightJobs, "light", 1000, "jobs of the light-load latency phase (one in flight)")
	fs.StringVar(&cfg.DataDir, "data", "", "journal directory (default: a new temporary directory, removed afterwards)")
	cpu := fs.String("cpuprofile", "", "write a CPU profile to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "foreman bench: unexpected argument %q (flags only; see foreman bench -h)\n", fs.Arg(0))
		return 2
	}
	if cfg.DataDir == "" {
		dir, err := bench.TempDataDir()
		if err != nil {
			fmt.Fprintf(stderr, "foreman bench: %v\n", err)
			return 1
		}
		defer os.RemoveAll(dir)
		cfg.DataDir = dir
	}
	if *cpu != "" {
		f, err := os.Create(*cpu)
		if err != nil {
			fmt.Fprintf(stderr, "foreman bench: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "foreman bench: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Fprintf(stdout, "foreman bench: %d jobs, %d submitters, %d workers x window %d, SQLite journal in %s\n", cfg.Jobs, cfg.Submitters, cfg.Workers, cfg.Window, cfg.DataDir)
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		if errors.Is(err, node.ErrInvalidConfig) {
			fmt.Fprintf(stderr, "foreman bench: %v\n", err)
			return 2
		}
		fmt.Fprintf(stderr, "foreman bench: %v\n", err)
		return 1
	}
	fmt.Fprint(stdout, res)
	return 0
}
