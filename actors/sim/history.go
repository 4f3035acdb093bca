package sim

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	fecore "github.com/foreman-actors/foreman/actors/frontend/core"
	"github.com/foreman-actors/foreman/messages"
)

// outcome is one durable finishing event of a job: its place in its
// stream and what it says.
type outcome struct {
	stream *stream
	seq    int64
	status messages.WorkStatus
	result []byte
	at     time.Duration
}

// jobRec is what the history knows of one work id.
type jobRec struct {
	id string

	submitted bool
	acked     bool          // some caller was told the work is accepted
	ackedAt   time.Duration // first ack
	accepted  bool          // a WorkAccepted of it is durable
	accepts   int           // how many
	status    messages.WorkStatus
	failures  int // failed or timed-out attempts since the last acceptance
	// waitingAcked counts the callers that wait and were told the job is
	// accepted (and have neither left nor been told its outcome).
	waitingAcked int
	// saidNo: the last answer a worker got from a waiter of the job was an
	// explicit IAmNoLongerInterested.
	saidNo   bool
	outcomes []outcome
	seen     []byte // the DONE result a caller was told, if any
	seenDone bool

	// callers that wait, and how many have left; leftAt is when the last
	// one left (every caller gone), -1 while one still waits.
	callers, left int
	leftAt        time.Duration
	started       int // executions begun by workers
	// askedAt is when the worker now starting the job asked its waiter
	// (that passage's question), set for the start checks.
	askedAt  time.Duration
	detached bool
}

// history is the record of what happened that the invariants judge: the
// journal's durable events, the messages that reached workers, what
// callers were told. It observes; it never changes the run.
type history struct {
	w    *world
	jobs map[string]*jobRec // looked up; iterate over order
	ids  []string
	inv  []Invariant
	fail *Violation
	// feed: what the feed consumers delivered, in order, per consumer;
	// nil when no consumer ran.
	feeds [][]*messages.FeedEntry
	// resumeFrom is the cursor the resumed consumer started from (nil:
	// none ran); resumed what it handed over.
	resumeFrom *fecore.Cursor
	resumed    []*messages.FeedEntry
	// execs are the executions of keyed jobs, in start order (inv_keys.go).
	execs []*execution
	// dupOf maps a submission the master answered as a duplicate by
	// unique key to the job it named (inv_keys.go).
	dupOf map[string]string
	// waits counts, per master activation and epoch and waiting work, the hand-outs
	// of other fairness keys that passed it (inv_fair.go).
	waits map[servingTerm]map[string]int
}

func newHistory(w *world) *history {
	return &history{w: w, jobs: map[string]*jobRec{}, inv: Invariants()}
}

func (h *history) job(id string) *jobRec {
	j := h.jobs[id]
	if j == nil {
		j = &jobRec{id: id, leftAt: -1, askedAt: -1}
		h.jobs[id] = j
		h.ids = append(h.ids, id)
	}
	return j
}

// Violation is a broken invariant: which, about what, and when.
type Violation struct {
	Invariant string
	// Job and Stream name what the violation is about (either may be
	// empty); the shortened trace keeps the lines that mention them.
	Job, Stream string
	At          time.Duration // virtual time
	Detail      string
}

func (v *Violation) Error() string {
	return fmt.Sprintf("invariant %s broken at %v (job %q, stream %q): %s", v.Invariant, v.At, v.Job, v.Stream, v.Detail)
}

// violate records the first violation; the run stops at it.
func (h *history) violate(inv Invariant, job, stream, format string, args ...any) {
	if h.fail != nil {
		return
	}
	h.fail = &Violation{Invariant: inv.Name(), Job: job, Stream: stream, At: h.w.e.now, Detail: fmt.Sprintf(format, args...)}
	h.w.e.tracef("sim", "VIOLATION %s", h.fail.Error())
}

// outcomeOf classifies a journal event as a job's end, as the result
// feed does (actors/master/feed.go feedEntry): ok false for others.
func outcomeOf(ev proto.Message) (id string, st messages.WorkStatus, result []byte, ok bool) {
	switch ev := ev.(type) {
	case *messages.WorkCompleted:
		return ev.GetWorkId(), messages.WorkStatus_WORK_STATUS_DONE, ev.GetResult(), true
	case *messages.WorkerFailed:
		switch {
		case ev.GetCancelled():
			return ev.GetWorkId(), messages.WorkStatus_WORK_STATUS_CANCELLED, nil, true
		case ev.GetDead():
			return ev.GetWorkId(), messages.WorkStatus_WORK_STATUS_DEAD, nil, true
		}
	case *messages.WorkerTimedOut:
		if ev.GetDead() {
			return ev.GetWorkId(), messages.WorkStatus_WORK_STATUS_DEAD, nil, true
		}
	case *messages.WorkExpired:
		return ev.GetWorkId(), messages.WorkStatus_WORK_STATUS_DEAD, nil, true
	}
	return "", 0, nil, false
}

// isFinal reports whether st ends a job.
func isFinal(st messages.WorkStatus) bool {
	return st == messages.WorkStatus_WORK_STATUS_DONE || st == messages.WorkStatus_WORK_STATUS_DEAD ||
		st == messages.WorkStatus_WORK_STATUS_CANCELLED
}

// durable records a durable journal event.
func (h *history) durable(s *stream, seq int64, ev jevent) {
	var accepted []*messages.Work
	switch m := ev.msg.(type) {
	case *messages.WorkAccepted:
		accepted = append(accepted, m.GetWork())
	case *messages.WorksAccepted:
		accepted = m.GetWorks()
	}
	for _, wk := range accepted {
		j := h.job(wk.GetWorkId())
		j.accepted = true
		j.accepts++
		j.failures = 0
		j.status = messages.WorkStatus_WORK_STATUS_ACCEPTED
	}
	switch m := ev.msg.(type) {
	case *messages.WorkerFailed:
		if !m.GetCancelled() {
			h.job(m.GetWorkId()).failures++
		}
	case *messages.WorkerTimedOut:
		h.job(m.GetWorkId()).failures++
	}
	if id, st, res, ok := outcomeOf(ev.msg); ok {
		j := h.job(id)
		o := outcome{stream: s, seq: seq, status: st, result: res, at: ev.at}
		for _, inv := range h.inv {
			if c, ok := inv.(outcomeChecker); ok {
				c.outcome(h, j, o)
			}
		}
		j.outcomes = append(j.outcomes, o)
		j.status = st
	}
}

// sentWork is a work on its way to a worker, with the failed attempts
// the history knew of when it left: a hand-out is the master's decision,
// judged when made. A worker paused past the work's timeout receives it
// after the job died; that late attempt is a slow worker's (seed 1019575),
// as if the worker had been slow to run it.
type sentWork struct {
	work     *messages.Work
	failures int
}

// sent records what a send carries to a worker, for delivered.
func (h *history) sent(to *node, msg proto.Message) []sentWork {
	if to.kind != kindWorker {
		return nil
	}
	var works []*messages.Work
	switch m := msg.(type) {
	case *messages.Work:
		works = append(works, m)
	case *messages.WorkBundle:
		works = m.GetWorks()
	}
	var out []sentWork
	for _, wk := range works {
		out = append(out, sentWork{work: wk, failures: h.job(wk.GetWorkId()).failures})
		for _, inv := range h.inv {
			if c, ok := inv.(sendChecker); ok { // inv_keyrate.go
				c.sendWork(h, wk)
			}
		}
	}
	return out
}

// delivered records the works of a send (sent's answer) reaching a worker.
func (h *history) delivered(works []sentWork) {
	for _, sw := range works {
		j := h.job(sw.work.GetWorkId())
		for _, inv := range h.inv {
			if c, ok := inv.(handOutChecker); ok {
				c.handOut(h, j, sw)
			}
		}
	}
}

// served records a master activation handing out work or answering
// status: holder must hold the stream's lease at this instant.
func (h *history) served(s *stream, holder string, epoch int64, what string) {
	for _, inv := range h.inv {
		if c, ok := inv.(serveChecker); ok {
			c.serve(h, s, holder, epoch, what)
		}
	}
}

// acked records a master acknowledging a submission.
func (h *history) masterAcked(id string) {
	j := h.job(id)
	for _, inv := range h.inv {
		if c, ok := inv.(ackChecker); ok {
			c.ack(h, j)
		}
	}
}

// started records a worker beginning to execute a job.
func (h *history) started(id string, askedAt time.Duration) {
	j := h.job(id)
	j.askedAt = askedAt
	for _, inv := range h.inv {
		if c, ok := inv.(startChecker); ok {
			c.start(h, j)
		}
	}
	j.started++
}

// end runs the final checks.
func (h *history) end() {
	for _, inv := range h.inv {
		if h.fail != nil {
			return
		}
		if c, ok := inv.(endChecker); ok {
			c.end(h)
		}
	}
}

// callerWaits records a caller that waits for j (a Call).
func (h *history) callerWaits(j *jobRec) {
	j.callers++
	j.leftAt = -1
}

// callerLeft records that a waiting caller of id left; once every one has,
// the job is abandoned from now.
func (h *history) callerLeft(id string) {
	j := h.job(id)
	j.left++
	if j.left >= j.callers && j.leftAt < 0 {
		j.leftAt = h.w.e.now
	}
}

// clientAcked records that a caller was told its submission is accepted
// (of the job it duplicates, for a duplicate by unique key).
func (h *history) clientAcked(id string) {
	if y, ok := h.dupOf[id]; ok {
		id = y
	}
	j := h.job(id)
	if !j.acked {
		j.acked, j.ackedAt = true, h.w.e.now
	}
}

// toldOutcome records the final outcome a caller was told.
func (h *history) toldOutcome(id string, st messages.WorkStatus, result []byte) {
	j := h.job(id)
	for _, inv := range h.inv {
		if c, ok := inv.(toldChecker); ok {
			c.told(h, j, st, result)
		}
	}
}

// asked records a worker asking a job's waiter whether its caller waits.
func (h *history) asked(id string) {
	j := h.job(id)
	j.saidNo = false
}

// answered records a waiter's answer reaching a worker.
func (h *history) answered(id string, no bool) { h.job(id).saidNo = no }

// feedIncarnation starts the record of a (re)started feed consumer.
func (h *history) feedIncarnation() { h.feeds = append(h.feeds, nil) }

// feedConsumed records a result the consumer handed to the application.
func (h *history) feedConsumed(r *messages.WorkResult, seq int64) {
	n := len(h.feeds) - 1
	h.feeds[n] = append(h.feeds[n], &messages.FeedEntry{Seq: seq, WorkId: r.GetWorkId(), Status: r.GetStatus()})
}

// resumedConsumed records a result the resumed consumer handed over.
func (h *history) resumedConsumed(r *messages.WorkResult, seq int64) {
	h.resumed = append(h.resumed, &messages.FeedEntry{Seq: seq, WorkId: r.GetWorkId(), Status: r.GetStatus()})
}

// epochTaken records an AcquireEpoch by holder, before the journal takes it.
func (h *history) epochTaken(s *stream, holder string) {
	for _, inv := range h.inv {
		if c, ok := inv.(epochChecker); ok {
			c.epoch(h, s, holder)
		}
	}
}
