package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/cmd/foreman/internal/bench"
	"github.com/foreman-actors/foreman/cmd/foreman/internal/cpustat"
	"github.com/foreman-actors/foreman/cmd/foreman/internal/progress"
)

// runBench runs `foreman bench`: end-to-end throughput and latency in one
// process on the SQLite journal with fsync on.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
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
	fsyncFor := fs.Duration("fsync", 0, "first measure the disk's write+fsync rate for this long (in --data, or the temporary directory) and print it")
	hf := registerHTTPBenchFlags(fs)
	var cpuOf []cpustat.Source
	fs.Func("cpu-of", "also measure this process's CPU per job: NAME=PID (a local process and its children, from /proc) or NAME=URL (a node's --metrics listener, its process_cpu_seconds_total); repeatable", func(s string) error {
		src, err := cpustat.ParseSource(s)
		cpuOf = append(cpuOf, src)
		return err
	})
	gcHeadroom := int64(defaultGCHeadroom)
	fs.Func("gc-headroom", "as for a node: the collector's heap grows by at least this much past what is live (0 or off: Go's own pacing; default 128MiB)", func(s string) error {
		v, err := parseMemoryLimit(s)
		gcHeadroom = v
		return err
	})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		printErr(stderr, "foreman bench: unexpected argument %q (flags only; see foreman bench -h)\n", fs.Arg(0))
		return 2
	}
	defer startGCPace(gcHeadroom, slog.New(slog.DiscardHandler))()
	if *fsyncFor != 0 {
		dir := cfg.DataDir
		if dir == "" {
			dir = os.TempDir()
		}
		res, err := bench.Fsync(ctx, dir, *fsyncFor)
		if err != nil {
			printErr(stderr, "foreman bench: --fsync: %v\n", err)
			return 1
		}
		if _, err := fmt.Fprint(stdout, res); err != nil {
			return outputFailed(stderr, "foreman bench", err)
		}
	}
	// The profile covers both modes: with --to it is the load generator's.
	if *cpu != "" {
		stopProfile, err := startCPUProfile(*cpu)
		if err != nil {
			printErr(stderr, "foreman bench: %v\n", err)
			return 1
		}
		defer func() {
			if err := stopProfile(); err != nil {
				printErr(stderr, "foreman bench: %v\n", err)
				if code == 0 {
					code = 1 // the profile asked for may be incomplete
				}
			}
		}()
	}
	hf.cpu = cpustat.NewMeter(append([]cpustat.Source{cpustat.Self(bench.LoadGenerator)}, cpuOf...)...)
	cfg.CPU = cpustat.NewMeter(append([]cpustat.Source{cpustat.Self(bench.ThisProcess)}, cpuOf...)...)
	if code, handled := hf.run(ctx, fs, cfg.Jobs, cfg.LightJobs, stdout, stderr); handled {
		return code
	}
	if cfg.DataDir == "" {
		dir, err := bench.TempDataDir()
		if err != nil {
			printErr(stderr, "foreman bench: %v\n", err)
			return 1
		}
		defer func() {
			// The measurement stands; only a temporary directory is left
			// behind, so say where and keep the exit code.
			if err := os.RemoveAll(dir); err != nil {
				printErr(stderr, "foreman bench: removing the temporary journal: %v\n", err)
			}
		}()
		cfg.DataDir = dir
	}
	if _, err := fmt.Fprintf(stdout, "foreman bench: %d jobs, %d submitters, %d workers x window %d, SQLite journal in %s\n", cfg.Jobs, cfg.Submitters, cfg.Workers, cfg.Window, cfg.DataDir); err != nil {
		return outputFailed(stderr, "foreman bench", err)
	}
	// A progress line on stderr: stdout keeps only the figures.
	rep := progress.New("bench results", int64(cfg.Jobs+cfg.LightJobs), stderr, progress.IsTerminal(stderr), clock.Real)
	cfg.OnResult = func() { rep.Add(1) }
	pctx, stopProgress := context.WithCancel(ctx)
	go rep.Run(pctx)
	res, err := bench.Run(ctx, cfg)
	stopProgress()
	rep.Finish()
	if err != nil {
		if errors.Is(err, node.ErrInvalidConfig) {
			printErr(stderr, "foreman bench: %v\n", err)
			return 2
		}
		printErr(stderr, "foreman bench: %v\n", err)
		return 1
	}
	if _, err := fmt.Fprint(stdout, res); err != nil {
		return outputFailed(stderr, "foreman bench", err)
	}
	return 0
}

// startCPUProfile writes a CPU profile to path until stop is called; stop
// reports whether the profile was written in full.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("writing the CPU profile %s: %w", path, err)
		}
		return nil
	}, nil
}
