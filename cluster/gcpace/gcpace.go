// Package gcpace keeps a floor under the Go garbage collector's headroom:
// the heap may grow by at least a given number of bytes past what is live
// before the next collection.
//
// Why: Go collects when the heap has grown by GOGC percent of what is live
// (100: it doubles). A Foreman node under load keeps little live (a backend
// serving HTTP submissions, some tens of MB) and allocates fast, so it
// collected many times a second: the collector was 15% of a backend's CPU,
// 6% of a frontend's (BENCHMARKS.md, issue 17). A heap of 30 MB live that
// may grow by 128 MB instead of 30 is collected about four times less
// often. A node holding a large state is not affected: once GOGC percent of
// what is live exceeds the floor, Go's own pacing applies unchanged, so the
// memory a backlog of a million works needs does not grow.
//
// How: after every collection (a finalizer on a sentinel object notices it),
// the pacer reads the live heap and sets GOGC (runtime/debug.SetGCPercent)
// to the larger of the process's own GOGC and the percentage that gives the
// floor. A soft memory limit (GOMEMLIMIT, --memory-limit) still bounds the
// heap: the collector runs sooner as it nears the limit, whatever GOGC says.
package gcpace

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// ErrInvalid is the cause of a headroom that cannot be used.
var ErrInvalid = errors.New("gcpace: invalid headroom")

// maxPercent bounds the GOGC the pacer sets: past it the heap is so small
// that its growth is the floor anyway.
const maxPercent = 100_000

// Percent returns the GOGC that lets a heap with live bytes live grow by at
// least headroom bytes before the next collection, and never less than
// base (the process's own GOGC). With nothing live yet it returns base.
func Percent(live, headroom uint64, base int) int {
	if live == 0 || headroom == 0 {
		return base
	}
	p := math.Ceil(float64(headroom) * 100 / float64(live))
	return int(min(max(p, float64(base)), maxPercent))
}

// Pacer adjusts GOGC after every collection; see the package comment.
type Pacer struct {
	headroom uint64
	base     int
	log      *slog.Logger

	mu      sync.Mutex
	stopped bool
	set     int // the GOGC last set
	sample  []metrics.Sample
}

// Option configures Start.
type Option func(*Pacer)

// WithLogger logs each change of GOGC at debug level (default: none).
func WithLogger(l *slog.Logger) Option { return func(p *Pacer) { p.log = l } }

// Start keeps a floor of headroom bytes under the collector's headroom
// until Stop. GOGC=off in the environment (or a collector turned off with
// SetGCPercent) is left alone: Start returns a Pacer that does nothing.
// Only one Pacer should run in a process.
func Start(headroom int64, opts ...Option) (*Pacer, error) {
	if headroom <= 0 {
		return nil, fmt.Errorf("%w: %d bytes: must be positive (to leave Go's pacing alone, do not start a pacer)", ErrInvalid, headroom)
	}
	p := &Pacer{headroom: uint64(headroom), log: slog.New(slog.DiscardHandler),
		sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	for _, o := range opts {
		o(p)
	}
	p.base = debug.SetGCPercent(100)
	debug.SetGCPercent(p.base)
	p.set = p.base
	if p.base < 0 {
		p.stopped = true // the collector is off: nothing to pace
		return p, nil
	}
	p.arm()
	return p, nil
}

// sentinel is garbage the moment it is made: its finalizer runs after the
// next collection and arms the next one.
type sentinel struct{ p *Pacer }

func (p *Pacer) arm() {
	runtime.SetFinalizer(&sentinel{p: p}, func(s *sentinel) { s.p.afterGC() })
}

// afterGC runs on the finalizer goroutine after a collection.
func (p *Pacer) afterGC() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	metrics.Read(p.sample)
	if v := p.sample[0].Value; v.Kind() == metrics.KindUint64 {
		want := Percent(v.Uint64(), p.headroom, p.base)
		// Only a change worth it: SetGCPercent recomputes the pacer's goal.
		if want*8 < p.set*7 || want*8 > p.set*9 {
			debug.SetGCPercent(want)
			p.log.Debug("gc percent set", "gogc", want, "live_bytes", v.Uint64(), "headroom_bytes", p.headroom)
			p.set = want
		}
	}
	p.arm()
}

// GOGC returns the GOGC the pacer set last (the process's own before the
// first collection).
func (p *Pacer) GOGC() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.set
}

// Stop ends the pacing and restores the process's own GOGC.
func (p *Pacer) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.stopped = true
	debug.SetGCPercent(p.base)
	p.set = p.base
}
