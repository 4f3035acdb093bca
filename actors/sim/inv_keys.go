package sim

import (
	"time"

	workcore "github.com/foreman-actors/foreman/actors/worker/core"
	"github.com/foreman-actors/foreman/messages"
)

// The invariants of unique and concurrency keys (issue 37 items 5 and 6),
// judged on runs with Config.Keys: they see each worker beginning a keyed
// job (keyedStart) with the executions of keyed jobs before it.

// execution is a keyed job's execution at a worker: from its start to its
// drawn end, unless its worker crashed or cut it short first.
type execution struct {
	id, unique, concurrency string
	wh                      *workerHost
	inc                     int
	slot                    int
	seq                     uint64
	end                     time.Duration
	attempt                 int32
	// stale: a copy of a hand-out the master had already seen end (the
	// job was finished, or that attempt had failed, when it began): a
	// duplicated message executed again, which no master can count.
	stale bool
}

// live reports whether x still executes at now.
func (x *execution) live(now time.Duration) bool {
	n := x.wh.n
	return n.up && n.inc == x.inc && x.wh.w.hosts[n.idx] == x.wh && x.wh.runs[x.slot].seq == x.seq && now < x.end
}

// keyedStart records a keyed job's execution beginning at a worker and
// checks the keys' invariants against the executions before it.
func (h *history) keyedStart(wh *workerHost, r workcore.Run, end time.Duration) {
	x := &execution{id: r.Work.GetWorkId(), unique: r.Work.GetUniqueKey(), concurrency: r.Work.GetConcurrencyKey(),
		wh: wh, inc: wh.n.inc, slot: r.Slot, seq: r.Seq, end: end, attempt: r.Work.GetAttempt()}
	j := h.job(x.id)
	switch j.status {
	case messages.WorkStatus_WORK_STATUS_DONE, messages.WorkStatus_WORK_STATUS_DEAD, messages.WorkStatus_WORK_STATUS_CANCELLED:
		x.stale = true
	}
	if int(r.Work.GetAttempt()) <= j.failures {
		x.stale = true
	}
	for _, inv := range h.inv {
		if c, ok := inv.(keyedStartChecker); ok {
			c.keyedStart(h, x)
		}
	}
	h.execs = append(h.execs, x)
}

// acked records a master's acknowledgement of id: an acceptance, or the
// answer that id duplicates the job of (by unique key), which accepted
// nothing new.
func (h *history) acked(id, of string) {
	if of == "" {
		delete(h.dupOf, id)
		h.masterAcked(id)
		return
	}
	if h.dupOf == nil {
		h.dupOf = make(map[string]string)
	}
	h.dupOf[id] = of
}

// keyedStartChecker sees each execution of a keyed job begin.
type keyedStartChecker interface {
	keyedStart(h *history, x *execution)
}

// UniqueNeverTwice checks that two jobs with one unique key never both run:
// a job starts only if no other job with its key started before whose
// latest durable status is anything but CANCELLED (a cancelled job frees
// its key; the simulated period, an hour, outlasts the run, so a done or
// dead one holds it to the end). The same job running again (a failover
// requeued it) is at-least-once delivery, not a second job.
type UniqueNeverTwice struct{}

// Name identifies the invariant.
func (UniqueNeverTwice) Name() string { return "unique_never_twice" }

func (i UniqueNeverTwice) keyedStart(h *history, x *execution) {
	if x.unique == "" {
		return
	}
	for _, y := range h.execs {
		if y.unique != x.unique || y.id == x.id {
			continue
		}
		if st := h.job(y.id).status; st != messages.WorkStatus_WORK_STATUS_CANCELLED {
			h.violate(i, x.id, "", "started while %s, with the same unique key %q, ran before and is %v", y.id, x.unique, st)
			return
		}
	}
}

// ConcurrencyLimitHeld checks that no job of a concurrency key starts while
// the key's limit (1 in the simulated cluster) of other jobs of that key
// execute at workers: across shards (every job of a key is on its key's
// shard) and failovers (a new master keeps the slots of the runs it
// requeued). An execution ends at its drawn end or when its worker
// crashes or cuts it short; it stops counting once the master has
// durably failed or timed out its attempt, because the master frees the
// slot then (a worker paused past the work timeout may still run it: seed
// 3000154 with Keys and Fair; the failover rule in docs/scheduling-keys.md
// is the same: a slot lasts until the result or the work timeout). The same
// job executing twice (a duplicated hand-out) is not counted against
// itself.
type ConcurrencyLimitHeld struct{}

// Name identifies the invariant.
func (ConcurrencyLimitHeld) Name() string { return "concurrency_limit_held" }

// simLimit is every key's limit in the simulated cluster (the master's
// default).
const simLimit = 1

func (i ConcurrencyLimitHeld) keyedStart(h *history, x *execution) {
	if x.concurrency == "" || x.stale {
		return
	}
	now := h.w.e.now
	n := 0
	for _, y := range h.execs {
		if y.concurrency == x.concurrency && y.id != x.id && !y.stale && y.live(now) && !h.attemptEnded(y) {
			n++
			if n >= simLimit {
				h.violate(i, x.id, "", "started while %s, of the same concurrency key %q, executes (limit %d)", y.id, x.concurrency, simLimit)
				return
			}
		}
	}
}

// attemptEnded reports whether the master has durably failed or timed out
// x's attempt (or a later one) since the job was last accepted.
func (h *history) attemptEnded(x *execution) bool {
	return x.attempt > 0 && h.job(x.id).failures >= int(x.attempt)
}
