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

// maxRun bounds the doublings of the step while probes keep paying: a step
// grows to at most 16 times the base step (and never beyond a doubling or a
// halving of the level).
const maxRun = 4

// keepLosers is how many times StaleAfter a lower level that lost clearly
// (see forgetStale) is kept.
const keepLosers = 4

// windowServiceTimes is the shortest window in mean service times of its
// jobs. The jobs started at a change of level start together and, under
// processor sharing, finish together; a window shorter than a few of their
// lifetimes measures that cohort, not the level (at 18 jobs of 200 ms, 20
// completions take under one lifetime, and a doubling that paid 29% looked
// like a loss).
const windowServiceTimes = 3

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
//     the level is also halved (multiplicative decrease), and if it rose the
//     slow start runs again (doubling while the score improves), so a moving
//     optimum is followed in seconds, not minutes, either way.
//   - Measurements are scaled to the jobs: a window lasts at least three
//     mean service times of its jobs (the jobs started at a change of level
//     finish together; a shorter window measures that cohort), an estimate is
//     the plain mean of its first windows before it becomes a moving average,
//     and a neighbour that lost by less than twice the windows' observed noise
//     is measured again after StaleAfter/8 instead of being trusted for
//     StaleAfter.
//   - Probes are cheap: a probe whose window already scores over 30% below
//     the level it left, once in steady state, ends early; a lower level that
//     lost by that much is kept four times StaleAfter (a lower optimum shows
//     as a fall at the current level, which the change rule sees; a higher
//     one need not, so higher levels are re-measured after StaleAfter).
//
// It starts with a slow start (doubling while the score improves), then
// climbs one step (5% of the level, at least 1) at a time, probing an unknown
// neighbour before trusting the current level; each probe in a row that pays
// doubles the next step in that direction (up to 16 times, never beyond a
// doubling or a halving of the level), so that a far optimum on a broad top,
// where one step gains less than a window's noise, is reached in a few
// windows.
type HillClimb struct {
	cfg       Config
	rng       *rand.Rand
	limit     int
	est       map[int]estimate
	win       window
	changedAt time.Time
	slowStart bool
	ssPrev    int       // level before the last doubling, 0 before the first
	probeFrom int       // level a probe (or a doubling) left, 0 when the current level is not a probe
	run       int       // probes in a row that paid: > 0 upwards, < 0 downwards; each doubles the next step
	noise     float64   // moving average of a window's relative departure from its level's estimate
	now       time.Time // of the decision being taken
}

type estimate struct {
	thr float64   // completions per second, moving average
	at  time.Time // last refresh
	n   int       // windows folded in
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
	serviceSum  time.Duration // of the window's completions
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
	w.serviceSum += now.Sub(obs.Started)
	if h.probeFrom != 0 && w.completions >= max(1, h.cfg.MinSamples/4) &&
		now.Sub(w.start) >= windowServiceTimes*w.serviceSum/time.Duration(w.completions) {
		if thr, worse := h.clearlyWorse(w); worse {
			// A probe that is clearly losing ends early and goes back. Its
			// short window is not judged by the change rule (it is noisier
			// than a full one) nor counted in the noise.
			h.win = window{}
			h.now = now
			h.forgetStale(now)
			h.record(h.limit, thr, now, false)
			h.limit, h.changedAt, h.probeFrom, h.run, h.slowStart = h.probeFrom, now, 0, 0, false
			return h.limit
		}
	}
	span := now.Sub(w.start)
	if span < w.length || w.completions < h.cfg.MinSamples ||
		span < windowServiceTimes*w.serviceSum/time.Duration(w.completions) {
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
	h.now = now
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
		h.record(h.limit, thr, now, true)
		h.probeFrom, h.slowStart, h.run = 0, false, 0
		if thr < e.thr && h.limit > h.cfg.MinLimit {
			// Throughput fell at the same level: the resource shrank or its
			// contention point moved down. Halve, as TCP does on loss, and
			// climb from there: one step at a time down a gentle slope of
			// noisy windows is the slow way to a far optimum.
			h.limit, h.changedAt = max(h.cfg.MinLimit, h.limit/2), now
			return h.limit
		}
		// Throughput rose at the same level: the resource grew, and the
		// optimum may be far above. Search up multiplicatively again (the
		// slow start doubles while the score improves and keeps the better
		// level), as the halving searches down: climbing one step at a time
		// took minutes on a broad top where each step gains less than a
		// window's noise (usl-rise).
		h.slowStart, h.ssPrev = true, 0
		h.openWindow(now, busy)
		return h.limit
	}
	h.record(h.limit, thr, now, true)
	cpuSaturated := w.cpuN > 0 && w.cpuSum/float64(w.cpuN) >= h.cfg.CPUSaturation
	from := h.probeFrom
	h.probeFrom = 0
	if from != 0 && !h.slowStart {
		if !h.paid(from) {
			// The probe lost to the level it left: back there, and the
			// next step in this direction is a small one again.
			h.run = 0
			if from < h.limit || !cpuSaturated {
				h.limit, h.changedAt = from, now
				return h.limit
			}
		} else if h.limit > from {
			h.run = max(h.run, 0) + 1
		} else {
			h.run = min(h.run, 0) - 1
		}
	}
	next := min(max(h.choose(!cpuSaturated), h.cfg.MinLimit), h.cfg.MaxLimit)
	if next != h.limit {
		h.limit = next
		h.changedAt = now
	} else {
		h.openWindow(now, busy)
	}
	return h.limit
}

// record folds a window's throughput into a level's estimate: the plain
// mean of the first windows, then a moving average with weight LearningRate
// (a first window alone would otherwise weigh 80% for many windows).
func (h *HillClimb) record(level int, thr float64, now time.Time, full bool) {
	e, ok := h.est[level]
	if ok && e.thr > 0 {
		if full {
			h.noise = (1-h.cfg.LearningRate)*h.noise + h.cfg.LearningRate*math.Abs(thr-e.thr)/e.thr
		}
		a := max(h.cfg.LearningRate, 1/float64(e.n+1))
		thr = (1-a)*e.thr + a*thr
	}
	h.est[level] = estimate{thr: thr, at: now, n: e.n + 1}
}

// forgetStale drops the estimates older than StaleAfter, but keeps a lower
// level that lost to the current one by more than changeFraction for
// keepLosers times as long. Re-measuring such a level costs a window at a
// fraction of the throughput (level 1 on the flat cpu service, every 30 s:
// 7 points of its gap), and a lower level cannot silently become the better
// one: if the optimum falls below the current level, the current level's own
// throughput falls, which the change rule sees. A higher level can (a
// level under a knee runs as fast wherever the knee is), so higher levels
// are re-measured after StaleAfter whatever they scored.
func (h *HillClimb) forgetStale(now time.Time) {
	cur, curOK := h.score(h.limit)
	for l, e := range h.est {
		age := now.Sub(e.at)
		if age <= h.cfg.StaleAfter {
			continue
		}
		if sc, _ := h.score(l); curOK && l < h.limit && sc < (1-changeFraction)*cur && age <= keepLosers*h.cfg.StaleAfter {
			continue
		}
		delete(h.est, l)
	}
}

// doubtful reports whether a known neighbour's estimate should be measured
// again before it is trusted: it lost to the current level by less than
// twice the windows' noise, and was last measured more than StaleAfter/8
// ago. On a broad top one step gains less than a window's noise, and a
// neighbour that lost one window by chance was otherwise trusted for
// StaleAfter (usl-rise: one level per 30-70 s); measuring it again averages
// the noise out.
func (h *HillClimb) doubtful(level int, cur float64) bool {
	e, ok := h.est[level]
	if !ok {
		return false
	}
	sc, _ := h.score(level)
	return sc < cur && cur-sc < 2*h.noise*cur && h.now.Sub(e.at) > h.cfg.StaleAfter/8
}

// clearlyWorse reports whether the open window of a probe already scores
// below the level it left by more than changeFraction. A quarter of
// MinSamples completions vary by about 8% (jobs of ±30%), so a 30% loss is
// not noise, and the rest of the window would only cost throughput (a probe
// of level 1 on the flat cpu service lasted 2 s at half its throughput).
func (h *HillClimb) clearlyWorse(w *window) (float64, bool) {
	prev, ok := h.score(h.probeFrom)
	if !ok || w.busyDone == 0 || w.busyTime <= 0 || float64(w.busy) < busyFraction*float64(w.completions) {
		return 0, false
	}
	thr := float64(w.busyDone) / w.busyTime.Seconds()
	return thr, thr/math.Pow(float64(h.limit), h.cfg.Penalty) < (1-changeFraction)*prev
}

// paid reports whether the current level, reached by a probe from level
// from, scores better than from (at least as well, for a probe downwards:
// ties go to the lower level).
func (h *HillClimb) paid(from int) bool {
	cur, _ := h.score(h.limit)
	prev, ok := h.score(from)
	if !ok {
		return true // nothing to compare with: the probe stands
	}
	if h.limit < from {
		return cur >= prev
	}
	return cur > prev
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
	upStep, downStep := step, step
	if h.run > 0 {
		upStep = min(step<<min(h.run, maxRun), l)
	} else if h.run < 0 {
		downStep = min(step<<min(-h.run, maxRun), max(1, l/2))
	}
	up, down := min(l+upStep, h.cfg.MaxLimit), max(l-downStep, h.cfg.MinLimit)

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
	if mayGrow && (!upKnown || h.doubtful(up, cur)) {
		h.probeFrom = l
		return up
	}
	if down < l && (!downKnown || h.doubtful(down, cur)) {
		h.probeFrom = l
		return down
	}
	return l
}
