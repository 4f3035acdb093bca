package main

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
)

// The --memory-limit flag: Go's soft memory limit (runtime/debug.SetMemoryLimit,
// the GOMEMLIMIT of the environment) for the node's process.
//
// Why a flag: a backend's Go heap grows to twice what is live before the
// collector runs (GOGC=100), and the memory it frees (a snapshot written, a
// restored state's transient copies) goes back to the OS only slowly. A
// master holding a backlog of a million works keeps 300-400 MB live and
// peaked at 1.5 GB of RSS while draining it. Under a limit, the collector
// runs sooner as the heap nears it and returns free memory at once, so RSS
// stays near the limit while what is live fits well below it.
//
// Why off by default: the limit is soft, but a limit below what is live
// makes the collector run back to back (Go caps it at half the CPU), which
// costs a busy master far more than memory. The right value depends on the
// machine and on the backlog a node must hold; the README gives the
// reasoning (about twice the live heap of the largest backlog expected, and
// below the memory the node may use). GOMEMLIMIT in the environment still
// applies when the flag is not given.

// errMemoryLimit is the cause of a --memory-limit value that is not a size.
var errMemoryLimit = errors.New("not a size (examples: 0, 900MiB, 1GiB, 1073741824)")

// parseMemoryLimit reads a size in bytes: a number with an optional unit B,
// KiB, MiB or GiB. "0" or "off" is no limit (0).
func parseMemoryLimit(s string) (int64, error) {
	if s == "off" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   float64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	mult, num := 1.0, s
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			mult, num = u.mult, strings.TrimSuffix(s, u.suffix)
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q: %w", s, errMemoryLimit)
	}
	return int64(v * mult), nil
}

// applyMemoryLimit sets the process's soft memory limit to limit bytes (0:
// leaves Go's own, i.e. GOMEMLIMIT or none).
func applyMemoryLimit(limit int64, log *slog.Logger) {
	if limit <= 0 {
		return
	}
	debug.SetMemoryLimit(limit)
	log.Info("memory limit set", "limit_bytes", limit)
}
