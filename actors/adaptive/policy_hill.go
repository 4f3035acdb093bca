package adaptive

import (
	"math"
	"math/rand/v2"
	"time"
)

// busyFraction is the share of a window's completions that must have found
// jobs waiting for the window to count as limit-bound. Below it the window is
// app-limited: the level was not what held throughput back.
const busyFraction = 0.8

// changeFraction is the relative difference between a window's throughput
// and the current level's estimate beyond which the climber concludes that
// the service itself changed (its capacity, its contention point): it then
// forgets every estimate, since they describe a resource that is gone, and
// measures its neighbours afresh. Under saturation a window of 20 jobs of
// ±30% size varies by about 4%, so 30% is a change, not noise.
const changeFraction = 0.3

// stepFraction sizes the hill climber's step relative to the level (at least 1).
const stepFraction = 0.05

// HillClimb is the default policy: a hill climber on measured throughput that
// does not drift upwards. It keeps the seed's ideas (a moving average per
// level with learning rate alpha, moves to a better neighbour, exploration)
// and fixes what made the seed drift:
//
//   - Throughput is measured, not inferred: completions per second over a
//     sample window (SampleInterval, jittered by ±Jitter so that windows do
//     not lock onto a periodic load, and at least MinSamples completions), for
//     the level in force. Completions of jobs started before a level change
//     are ignored, so a window measures one level only.
//   - App-limited windows teach nothing and never raise the level: if fewer
//     than 80% of a window's completions found jobs waiting, the work was
//     app-limited (fewer in flight than the limit allows, nobody queued), so
//     the level was not the constraint and the window is discarded.
//   - Extra concurrency must pay for itself: a level's score is
//     throughput / level^Penalty, and the climber moves to the best-scoring
//     known neighbour, preferring the lower level on ties.
//   - No increase while the CPU is saturated (mean CPU of the window at or
//     above CPUSaturation, when observations carry CPU).
//   - Stale estimates decay: an estimate not refreshed for StaleAfter is
//     forgotten, so a neighbour is measured again rather than trusted forever.
//     That re-measuring is its exploration; it does not jump at random
//     (ExplorationRate is the seed policy's).
//   - A change of the service resets the map: when a window's throughput
//     differs from the current level's estimate by more than 30%, every
//     estimate is dropped and the neighbours are measured again; if it fell,
//     the level is also halved (multiplicative decrease), so a moving
//     optimum is followed in seconds, not minutes.
//
// It starts with a slow start (doubling while the score improves), then
// climbs one step (5% of the level, at least 1) at a time, probing an unknown
// neighbour before trusting the current level.
type HillClimb struct {
	cfg       Config
	rng       *rand.Rand
	limit     int
	est       map[int]estimate
	win       window
	changedAt time.Time
	slowStart bool
	ssPrev    int // level before the last doubling, 0 before the first
	probeFrom int // level a probe (or a doubling) left, 0 when the current level is not a probe
}

type estimate struct {
	thr float64   // completions per second, moving average
	at  time.Time // last refresh
}

type window struct {
	open        bool
	start       time.Time
	length      time.Duration
	completions int
	busy        int           // completions that found jobs waiting
	busyTime    time.Duration // time between a busy completion and the next
	busyDone    int           // completions that ended such an interval
	last        time.Time     // previous completion
	lastBusy    bool          // whether it found jobs waiting
	cpuSum      float64
	cpuN        int
}

// NewHillClimb returns the default policy, starting at cfg.InitialLimit.
func NewHillClimb(cfg Config) (*HillClimb, error) {
	cfg, err := cfg.normalized()
	if err != nil {
		return nil, err
	}
	return &HillClimb{
		cfg:       cfg,
		rng:       rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x4111)),
		limit:     cfg.InitialLimit,
		est:       make(map[int]estimate),
		slowStart: true,
	}, nil
}

// Limit returns the current level.
func (h *HillClimb) Limit() int { return h.limit }

// Estimate returns the throughput estimate (completions per second) of a
// level, if one is held.
func (h *HillClimb) Estimate(level int) (float64, bool) {
	e, ok := h.est[level]
	return e.thr, ok
}

// Observe folds one completion into the current window and, when the window
// closes, decides the next level.
func (h *HillClimb) Observe(obs Observation, now time.Time) int {
	if obs.Started.Before(h.changedAt) {
		return h.limit // started under the previous level: warm-up
	}
	if !h.win.open {
		h.openWindow(now, obs.Queued > 0) // this completion marks the window's start
		return h.limit
	}
	w := &h.win
	w.completions++
	if w.lastBusy {
		w.busyTime += now.Sub(w.last)
		w.busyDone++
	}
	w.last, w.lastBusy = now, obs.Queued > 0
	if w.lastBusy {
		w.busy++
	}
	if obs.cpuKnown() {
		w.cpuSum += obs.CPU
		w.cpuN++
	}
	if now.Sub(w.start) < w.length || w.completions < h.cfg.MinSamples {
		return h.limit
	}
	return h.decide(now, obs.Queued > 0)
}

func (h *HillClimb) openWindow(now time.Time, busy bool) {
	j := 1 + h.cfg.Jitter*(2*h.rng.Float64()-1)
	h.win = window{open: true, start: now, last: now, lastBusy: busy,
		length: time.Duration(float64(h.cfg.SampleInterval) * j)}
}

func (h *HillClimb) decide(now time.Time, busy bool) int {
	w := h.win
	h.win = window{}
	h.forgetStale(now)
	if float64(w.busy) < busyFraction*float64(w.completions) {
		// App-limited: learn nothing and never rise. A probe that found no
		// demand goes back where it came from.
		if h.probeFrom != 0 && h.probeFrom < h.limit {
			h.limit, h.changedAt, h.probeFrom = h.probeFrom, now, 0
			if h.slowStart {
				h.ssPrev = 0 // double again once there is demand
			}
			return h.limit
		}
		h.openWindow(now, busy)
		return h.limit
	}
	secs := w.busyTime.Seconds()
	if secs <= 0 {
		h.openWindow(now, busy)
		return h.limit
	}
	thr := float64(w.busyDone) / secs
	if e, ok := h.est[h.limit]; ok && math.Abs(thr-e.thr) > changeFraction*e.thr {
		// The service changed: blending the new figure into the old one would
		// keep the old optimum for many windows (an optimum that moved down
		// from 16 to 6 took the climber minutes to follow).
		clear(h.est)
		h.record(h.limit, thr, now)
		h.probeFrom, h.slowStart = 0, false
		if thr < e.thr && h.limit > h.cfg.MinLimit {
			// Throughput fell at the same level: the resource shrank or its
			// contention point moved down. Halve, as TCP does on loss, and
			// climb from there: one step at a time down a gentle slope of
			// noisy windows is the slow way to a far optimum.
			h.limit, h.changedAt = max(h.cfg.MinLimit, h.limit/2), now
			return h.limit
		}
		h.openWindow(now, busy)
		return h.limit
	}
	h.record(h.limit, thr, now)
	h.probeFrom = 0
	cpuSaturated := w.cpuN > 0 && w.cpuSum/float64(w.cpuN) >= h.cfg.CPUSaturation
	next := min(max(h.choose(!cpuSaturated), h.cfg.MinLimit), h.cfg.MaxLimit)
	if next != h.limit {
		h.limit = next
		h.changedAt = now
	} else {
		h.openWindow(now, busy)
	}
	return h.limit
}

func (h *HillClimb) record(level int, thr float64, now time.Time) {
	if e, ok := h.est[level]; ok {
		thr = (1-h.cfg.LearningRate)*e.thr + h.cfg.LearningRate*thr
	}
	h.est[level] = estimate{thr: thr, at: now}
}

func (h *HillClimb) forgetStale(now time.Time) {
	for l, e := range h.est {
		if now.Sub(e.at) > h.cfg.StaleAfter {
			delete(h.est, l)
		}
	}
}

func (h *HillClimb) score(level int) (float64, bool) {
	e, ok := h.est[level]
	if !ok {
		return 0, false
	}
	return e.thr / math.Pow(float64(level), h.cfg.Penalty), true
}

// choose returns the next level; it never returns a level above the current
// one when mayGrow is false.
func (h *HillClimb) choose(mayGrow bool) int {
	l := h.limit
	mayGrow = mayGrow && l < h.cfg.MaxLimit
	cur, _ := h.score(l)

	if h.slowStart {
		if h.ssPrev != 0 {
			prev, ok := h.score(h.ssPrev)
			if ok && prev >= cur { // the doubling did not pay: back to the better level
				h.slowStart = false
				return h.ssPrev
			}
		}
		if mayGrow {
			h.ssPrev, h.probeFrom = l, l
			return min(2*l, h.cfg.MaxLimit)
		}
		h.slowStart = false
		return l
	}

	step := max(1, int(math.Round(float64(l)*stepFraction)))
	up, down := l+step, max(l-step, h.cfg.MinLimit)

	best, bestScore := l, cur
	downScore, downKnown := h.score(down)
	if down < l && downKnown && downScore >= bestScore {
		best, bestScore = down, downScore
	}
	upScore, upKnown := h.score(up)
	if mayGrow && upKnown && upScore > bestScore {
		best = up
	}
	if best != l {
		return best
	}
	// The current level beats every known neighbour: probe an unknown one,
	// upwards first (only when growth is allowed), so both sides stay measured.
	if mayGrow && !upKnown {
		h.probeFrom = l
		return up
	}
	if down < l && !downKnown {
		h.probeFrom = l
		return down
	}
	return l
}
