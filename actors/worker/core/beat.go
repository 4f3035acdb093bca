package core

import (
	"log/slog"
	"time"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/messages"
)

// Long jobs (docs/long-jobs.md): a running job calls worker.Heartbeat or
// worker.Progress; the runner steps the core with Beat. The core gathers
// the beats and sends them at most once per BeatInterval, one WorkHeartbeat
// per shard naming every job that beat since the last: a job that beats in
// a tight loop costs the master one message per interval, not one per call.
// The first beat after a quiet interval leaves at once.

// Progress is what a job reports with worker.Progress: how far it is
// (0..1) and what it does.
type Progress struct {
	Fraction float64
	Message  string
}

// slotBeat is a slot's job's heartbeat state for passage seq.
type slotBeat struct {
	seq         uint64
	pending     bool // beat since the last WorkHeartbeat
	hasProgress bool
	progress    Progress // the latest; re-sent with every beat
}

// Beat reports a heartbeat of the job Run started in slot with seq, with
// its progress when p is not nil. A beat of a job that no longer runs there
// (it returned, or was handed back) is dropped.
func (w *Worker) Beat(now time.Time, slot int, seq uint64, p *Progress) []effect.Effect {
	w.begin(now)
	g := w.gateOf(slot, seq, "")
	if g == nil || g.phase != phaseRunning || w.stopped {
		return w.out
	}
	b := &w.beats[slot]
	if b.seq != seq {
		*b = slotBeat{seq: seq}
	}
	b.pending = true
	if p != nil {
		b.hasProgress, b.progress = true, *p
	}
	if !w.beatArmed {
		w.sendBeats()
	}
	return w.out
}

// onBeatTimer sends the beats gathered during the interval, if any.
func (w *Worker) onBeatTimer() {
	w.beatArmed = false
	if w.stopped {
		return
	}
	for i := range w.beats {
		if w.beats[i].pending {
			w.sendBeats()
			return
		}
	}
}

// sendBeats sends every pending beat, one WorkHeartbeat per shard, and arms
// the interval.
func (w *Worker) sendBeats() {
	var byShard map[int]*messages.WorkHeartbeat
	first := -1
	var one *messages.WorkHeartbeat
	for slot := range w.beats {
		b := &w.beats[slot]
		if !b.pending {
			continue
		}
		b.pending = false
		r := &w.runs[slot]
		if r.Seq != b.seq || r.Work == nil {
			continue
		}
		m := r.Work
		beat := &messages.Beat{WorkId: m.GetWorkId(), Attempt: m.GetAttempt(), HasProgress: b.hasProgress,
			Fraction: b.progress.Fraction, Message: b.progress.Message}
		if w.cfg.BeatTimeout != nil {
			beat.TimeoutMs = w.cfg.BeatTimeout(m.GetJobType()).Milliseconds()
		}
		k := w.shardOf(m.GetWorkId())
		switch {
		case one == nil:
			first, one = k, &messages.WorkHeartbeat{WorkerId: w.cfg.ID}
			one.Beats = append(one.Beats, beat)
		case k == first:
			one.Beats = append(one.Beats, beat)
		default:
			if byShard == nil {
				byShard = make(map[int]*messages.WorkHeartbeat)
			}
			hb := byShard[k]
			if hb == nil {
				hb = &messages.WorkHeartbeat{WorkerId: w.cfg.ID}
				byShard[k] = hb
			}
			hb.Beats = append(hb.Beats, beat)
		}
	}
	if one == nil {
		return
	}
	w.tellTo(first, one)
	for k := range w.conns { // in shard order, not map order
		if hb := byShard[k]; hb != nil {
			w.tellTo(k, hb)
		}
	}
	w.beatArmed = true
	w.arm(TimerBeat, w.cfg.BeatInterval)
}

// onDrainTimeout hands back the jobs still running when the drain timeout
// passes and cancels them with ErrDrainTimeout.
func (w *Worker) onDrainTimeout() {
	if !w.draining || w.stopped {
		return
	}
	n := 0
	for i := range w.gates {
		g := &w.gates[i]
		if g.phase != phaseRunning {
			continue
		}
		failed, _ := w.st.fail(i, g.workID) // nothing is queued while draining
		w.endGate(i, false)
		if failed != nil {
			n++
			w.fail(failed, ErrDrainTimeout)
		}
	}
	if n > 0 {
		w.log(slog.LevelWarn, "drain timeout passed: running jobs cancelled and handed back", "jobs", n)
		w.emit(CancelJobs{Cause: ErrDrainTimeout})
	}
	w.checkDrained()
}
