package main

import (
	"log/slog"

	"github.com/foreman-actors/foreman/cluster/gcpace"
)

// defaultGCHeadroom is --gc-headroom's default: the garbage collector lets
// the heap grow by at least this much past what is live (cluster/gcpace).
const defaultGCHeadroom = 128 << 20

// startGCPace keeps a floor of headroom bytes under the collector's
// headroom (0: Go's own pacing) and returns what stops it.
func startGCPace(headroom int64, log *slog.Logger) func() {
	if headroom <= 0 {
		return func() {}
	}
	p, err := gcpace.Start(headroom, gcpace.WithLogger(log))
	if err != nil { // only a headroom <= 0, excluded above
		log.Warn("gc headroom not kept", "error", err)
		return func() {}
	}
	return p.Stop
}
