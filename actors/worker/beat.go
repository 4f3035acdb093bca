package worker

import (
	"context"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/worker/core"
)

// Heartbeat tells the master that the job whose ctx this is (the ctx the
// worker passed to its JobFunc, or one derived from it) is alive. For a job
// type registered WithHeartbeatTimeout, the master then times the job out
// only when that long passes without a heartbeat, however long the whole
// job runs. It is cheap and never blocks: call it as often as convenient
// (in a tight loop, too); beats are gathered so that at most one message
// per heartbeat interval leaves for the master. With any other ctx it does
// nothing. See docs/long-jobs.md.
func Heartbeat(ctx context.Context) {
	if j, ok := ctx.Value(beatKey{}).(*jobCtx); ok {
		j.b.beat(j.seq, nil)
	}
}

// Progress reports how far the job whose ctx this is has come (fraction,
// 0..1, clamped) and what it does (message), and is a Heartbeat. The latest
// progress is shown by GET /work/{id}, the result stream and the dashboard
// while the job runs. Like Heartbeat it never blocks and may be called in a
// tight loop: the latest value leaves with the next heartbeat.
func Progress(ctx context.Context, fraction float64, message string) {
	j, ok := ctx.Value(beatKey{}).(*jobCtx)
	if !ok {
		return
	}
	fraction = min(max(fraction, 0), 1)
	j.b.beat(j.seq, &core.Progress{Fraction: fraction, Message: message})
}

// beatKey is the ctx key under which a job's ctx answers itself.
type beatKey struct{}

// jobCtx is a job's ctx: its parent's, naming the job's passage seq
// through its slot, so that a beat of a job that already lost its slot
// (handed back) is told apart by the core.
type jobCtx struct {
	context.Context //nolint:containedctx // the job's own ctx, wrapped to name its passage
	b               *slotBeater
	seq             uint64
}

// Value answers beatKey with the jobCtx itself.
func (j *jobCtx) Value(key any) any {
	if _, ok := key.(beatKey); ok {
		return j
	}
	return j.Context.Value(key)
}

// beatMsg is a job's heartbeat, which its slotBeater sends the worker.
type beatMsg struct {
	slot     int
	seq      uint64
	progress *core.Progress
}

// slotBeater forwards the beats of a slot's jobs to the worker's mailbox,
// at most one per gap: a job beating in a tight loop must not flood the
// worker's mailbox either (the core gathers what reaches it into one
// message per heartbeat interval to the master). A beat within the gap is
// sent at its end, with the latest progress, so the last progress a job
// reports is never lost.
type slotBeater struct {
	sys   *actor.ActorSystem
	self  *actor.PID
	slot  int
	clock clock.Clock
	gap   time.Duration

	mu       sync.Mutex // guards the fields below (the jobs' goroutines call beat)
	last     time.Time
	trailing bool // a send at the gap's end is scheduled
	seq      uint64
	progress *core.Progress
}

func newSlotBeater(sys *actor.ActorSystem, self *actor.PID, slot int, c clock.Clock, interval time.Duration) *slotBeater {
	return &slotBeater{sys: sys, self: self, slot: slot, clock: c, gap: max(interval/4, time.Millisecond)}
}

func (b *slotBeater) beat(seq uint64, p *core.Progress) {
	b.mu.Lock()
	if seq != b.seq {
		b.seq, b.progress = seq, nil
	}
	if p != nil {
		b.progress = p
	}
	now := b.clock.Now()
	if b.trailing {
		b.mu.Unlock()
		return
	}
	if wait := b.last.Add(b.gap).Sub(now); wait > 0 {
		b.trailing = true
		b.mu.Unlock()
		b.clock.AfterFunc(wait, b.flush)
		return
	}
	b.last = now
	m := &beatMsg{slot: b.slot, seq: seq, progress: b.progress}
	b.mu.Unlock()
	b.sys.Root.Send(b.self, m)
}

// flush sends the beat gathered during the gap.
func (b *slotBeater) flush() {
	b.mu.Lock()
	b.trailing = false
	b.last = b.clock.Now()
	m := &beatMsg{slot: b.slot, seq: b.seq, progress: b.progress}
	b.mu.Unlock()
	b.sys.Root.Send(b.self, m)
}
