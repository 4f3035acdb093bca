package sim

import (
	"errors"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	workcore "github.com/foreman-actors/foreman/actors/worker/core"
	"github.com/foreman-actors/foreman/messages"
)

// errJob is a simulated job's failure (retried by the master).
var errJob = errors.New("sim: the job failed")

// workerHost is a worker node running the worker core. Jobs are the
// sim's: they take a drawn time and succeed or fail by a drawn chance.
type workerHost struct {
	w       *world
	n       *node
	a       *actor
	core    *workcore.Worker
	runs    map[int]passage // slot -> the passage in it
	watched []*messages.PID
	// asks: the last question about each work and whether its answer was
	// an explicit no, to tell the history which waiters a timeout cut off.
	asks map[string]askInfo
}

type askInfo struct {
	waiter *messages.PID
	no     bool
}

// passage is a work's passage through an executor slot.
type passage struct {
	seq   uint64
	id    string
	asked time.Duration // when it asked the waiter; -1: it did not
}

func newWorker(w *world, n *node) host { return &workerHost{w: w, n: n} }

func (wh *workerHost) start() {
	w := wh.w
	wh.a = w.newActor(wh.n, "worker")
	wh.a.onFired = func(name string) { wh.run(wh.core.Fired(wh.a.now(), name)) }
	wh.runs = map[int]passage{}
	wh.asks = map[string]askInfo{}
	wh.watched = nil
	wh.core = workcore.New(workcore.Config{
		ID: wh.n.name + "#" + strconv.Itoa(wh.n.inc), Self: wh.a.pid, JobTypes: []string{"t"},
		Masters: make([]*messages.PID, w.cfg.Shards), Window: 2, Prefetch: 1, MaxUnacked: 16,
		RegisterInterval: 300 * time.Millisecond, ResendInterval: 200 * time.Millisecond,
		InterestTimeout: 300 * time.Millisecond, InterestRetry: 100 * time.Millisecond, PermitIdle: time.Second,
		NodeGone: func(addr string) bool {
			x := w.byName[addr]
			return x != nil && !w.view.sees(wh.n, x)
		},
	})
	wh.run(wh.core.Start(wh.a.now()))
}

func (wh *workerHost) viewChanged() {
	// A watched master whose node left the view is terminated for the
	// worker (protoactor's Terminated on a node's departure).
	kept := wh.watched[:0]
	var gone []*messages.PID
	for _, p := range wh.watched {
		if x := wh.w.byName[p.GetAddress()]; x != nil && !wh.w.view.sees(wh.n, x) {
			gone = append(gone, p)
			continue
		}
		kept = append(kept, p)
	}
	wh.watched = kept
	for _, p := range gone {
		wh.run(wh.core.MasterTerminated(wh.a.now(), p))
	}
}

func (wh *workerHost) deliver(from *messages.PID, id string, msg proto.Message) bool {
	now := wh.a.now()
	if kind, slot, rest := splitID(id); kind == "watch" {
		seq, _ := strconv.ParseUint(rest, 10, 64)
		if wh.runs[slot].seq != seq {
			return false // unwatched: a dead letter
		}
		a := workcore.Answer{Slot: slot, Seq: seq}
		switch m := msg.(type) {
		case *messages.IAmStillInterested:
			a.WorkID, a.Kind = m.GetWorkId(), workcore.StillInterested
			wh.w.hist.answered(wh.runs[slot].id, false)
		case *messages.IAmNoLongerInterested:
			a.WorkID, a.Kind, a.Reason = m.GetWorkId(), workcore.NoLongerInterested, m.GetReason()
			wh.w.hist.answered(wh.runs[slot].id, true)
			if ai, ok := wh.asks[wh.runs[slot].id]; ok {
				ai.no = true
				wh.asks[wh.runs[slot].id] = ai
			}
		default:
			return true
		}
		wh.run(wh.core.Interest(now, a))
		return true
	}
	switch m := msg.(type) {
	case *messages.Work:
		wh.run(wh.core.Work(now, m))
	case *messages.WorkBundle:
		wh.run(wh.core.Bundle(now, m.GetWorks()))
	case *messages.WorkIsReady:
		wh.run(wh.core.WorkIsReady(now, from))
	case *messages.Ack:
		wh.run(wh.core.Ack(now, m.GetWorkId()))
	case *messages.AckBatch:
		wh.run(wh.core.Ack(now, m.GetWorkIds()...))
	}
	return true
}

// deadLetter: a question to a waiter found no actor on the waiter's node.
func (wh *workerHost) deadLetter(from string, to *messages.PID, msg proto.Message) {
	kind, slot, rest := splitID(from)
	q, ok := msg.(*messages.AreYouStillInterested)
	if kind != "watch" || !ok {
		return
	}
	seq, _ := strconv.ParseUint(rest, 10, 64)
	if wh.runs[slot].seq == seq {
		wh.run(wh.core.Interest(wh.a.now(), workcore.Answer{Slot: slot, Seq: seq, WorkID: q.GetWorkId(), Kind: workcore.DeadLetter, Gone: true}))
	}
}

// run carries out the worker core's effects.
func (wh *workerHost) run(effs []effect.Effect) {
	effs = append([]effect.Effect(nil), effs...) // the core's slice is reused by its next call
	w := wh.w
	for _, e := range effs {
		if !wh.a.live() {
			return
		}
		switch e := e.(type) {
		case *workcore.Run:
			wh.runJob(*e) // the core reuses its Run: copy it now
		case workcore.Cancel:
			slot, seq := e.Slot, e.Seq
			if p := wh.runs[slot]; p.seq == seq {
				wh.runs[slot] = passage{}
				id, cause := p.id, e.Cause
				w.onNode(wh.n, w.e.now+w.e.between(0, 2*time.Millisecond), func() {
					wh.run(wh.core.RunDone(wh.a.now(), slot, id, nil, cause))
				})
			}
		case workcore.Ask:
			if p := wh.runs[e.Slot]; p.seq != e.Seq || p.asked < 0 {
				wh.runs[e.Slot] = passage{seq: e.Seq, id: e.WorkID, asked: w.e.now}
			}
			w.hist.asked(e.WorkID)
			wh.asks[e.WorkID] = askInfo{waiter: e.Waiter}
			from := &messages.PID{Address: wh.n.name, Id: "watch/" + strconv.Itoa(e.Slot) + "/" + strconv.FormatUint(e.Seq, 10)}
			w.send(wh.n, from, e.Waiter, &messages.AreYouStillInterested{WorkId: e.WorkID})
		case workcore.Unwatch:
		case workcore.Resolve:
			shard := e.Shard
			w.onNode(wh.n, w.e.now, func() {
				var pid *messages.PID
				var err error
				if b := w.placement(wh.n, shard); b != nil {
					pid = &messages.PID{Address: b.name, Id: masterID(shard)}
				} else {
					err = errors.New("sim: no backend in view")
				}
				wh.run(wh.core.Resolved(wh.a.now(), shard, pid, err))
			})
		case workcore.WatchMaster:
			wh.watched = append(wh.watched, e.PID)
		case workcore.UnwatchMaster:
			for i, p := range wh.watched {
				if p.GetAddress() == e.PID.GetAddress() && p.GetId() == e.PID.GetId() {
					wh.watched = append(wh.watched[:i], wh.watched[i+1:]...)
					break
				}
			}
		case workcore.Yield:
			name := e.Name
			w.onNode(wh.n, w.e.now, func() { wh.run(wh.core.Fired(wh.a.now(), name)) })
		case effect.Send:
			if m, ok := e.Msg.(*messages.WorkFailed); ok && m.GetCancelled() {
				// Skipped as cancelled without an explicit no: the worker
				// gave up on a waiter it could not hear from (by design),
				// which cuts that caller off.
				if ai, ok := wh.asks[m.GetWorkId()]; ok && !ai.no {
					w.cutOff(ai.waiter)
				}
				delete(wh.asks, m.GetWorkId())
			}
			wh.a.apply([]effect.Effect{e})
		case workcore.Acquire, workcore.Release, workcore.Abandon, workcore.Drained, workcore.Halt:
		default:
			wh.a.apply([]effect.Effect{e})
		}
	}
}

// runJob starts a simulated job: it ends after a drawn time, done or
// failed by a drawn chance; the result names the attempt, so that a job
// run twice would show two results.
func (wh *workerHost) runJob(r workcore.Run) {
	w := wh.w
	id := r.Work.GetWorkId()
	asked := w.e.now
	if p := wh.runs[r.Slot]; p.seq == r.Seq && p.asked >= 0 {
		asked = p.asked
	}
	w.hist.started(id, asked)
	wh.runs[r.Slot] = passage{seq: r.Seq, id: id, asked: asked}
	slot, seq := r.Slot, r.Seq
	var err error
	if w.e.chance(0.15) {
		err = errJob
	}
	result := []byte(id + "@" + wh.n.name + "#" + strconv.Itoa(int(r.Work.GetAttempt())))
	end := w.e.now + w.e.between(time.Millisecond, 60*time.Millisecond)
	if r.Work.GetUniqueKey() != "" || r.Work.GetConcurrencyKey() != "" {
		w.hist.keyedStart(wh, r, end) // inv_keys.go
	}
	w.onNode(wh.n, end, func() {
		if wh.runs[slot].seq != seq {
			return // cancelled
		}
		if w.e.tracing() {
			w.e.tracef(wh.n.name, "job %s ends err=%v", id, err)
		}
		if err != nil {
			result = nil
		}
		wh.run(wh.core.RunDone(wh.a.now(), slot, id, result, err))
	})
}
