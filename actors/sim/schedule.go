package sim

import (
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	fecore "github.com/foreman-actors/foreman/actors/frontend/core"
	pcore "github.com/foreman-actors/foreman/actors/persistence/core"
	routecore "github.com/foreman-actors/foreman/actors/route/core"
	schedcore "github.com/foreman-actors/foreman/actors/schedule/core"
	"github.com/foreman-actors/foreman/messages"
)

// The scheduler in the simulated cluster (Config.Schedules, issue 37 item
// 2): as on a real cluster (cluster/node/schedules.go), a singleton kind
// "scheduler" on the backends, placed by each backend's membership view,
// whose activation is the persistence Session (lease, epoch, recovery,
// group commit) on the journal stream "schedules" around the scheduler's
// pure core (actors/schedule/core), the pair the real backend runs as
// persistence.Runtime around actors/schedule's actor. A tick's job is
// submitted as the real scheduler's frontend.Client does: a frontend
// Submission core on the backend, asking the shard's master. An admin on
// the first frontend adds the workload's schedules at the start, pauses
// and resumes one and removes another (schedWorkload).

// Names of the scheduler in the simulated cluster.
const (
	schedKind   = "scheduler" // its cluster kind and identity
	schedStream = "schedules" // its journal stream
	schedID     = "scheduler" // its actor id on a backend
	schedSubID  = "schedsub/" // the prefix of its submissions' actor ids
	// schedSubmitTimeout bounds one submission of a tick's job (the
	// shell's DefaultSubmitTimeout).
	schedSubmitTimeout = 5 * time.Second
	// schedSnapshotEvery is how many events the scheduler journals between
	// two snapshots (small, so that recoveries restore snapshots).
	schedSnapshotEvery = 10
	// tickAckSettle is how long before the end of the run the admin
	// pauses every schedule, and a tick's job must be acknowledged for
	// acked_ends_final to require its end.
	tickAckSettle = 2 * time.Second
)

// schedSpec is one schedule of the workload.
type schedSpec struct {
	name, spec string
	missed     messages.MissedPolicy
	catchUp    int32
	// pauseAt and resumeAt pause and resume it (0: never); removeAt
	// removes it (0: never); true time since the start.
	pauseAt, resumeAt, removeAt time.Duration
}

// schedWorkload is the schedules the admin adds at the start: each
// missed-tick policy, `@every` and a cron with seconds, one paused and
// resumed and one removed while faults happen.
var schedWorkload = []schedSpec{
	{name: "beat", spec: "@every 1s", missed: messages.MissedPolicy_MISSED_POLICY_ONCE},
	{name: "skip", spec: "@every 2s", missed: messages.MissedPolicy_MISSED_POLICY_SKIP},
	{name: "catch", spec: "* * * * * *", missed: messages.MissedPolicy_MISSED_POLICY_CATCH_UP, catchUp: 2},
	{name: "pause", spec: "@every 1s", missed: messages.MissedPolicy_MISSED_POLICY_ONCE,
		pauseAt: 1200 * time.Millisecond, resumeAt: 2800 * time.Millisecond},
	{name: "gone", spec: "*/2 * * * * *", missed: messages.MissedPolicy_MISSED_POLICY_SKIP, removeAt: 2200 * time.Millisecond},
}

// schedHost is a backend that also hosts the scheduler when its view
// places it there.
type schedHost struct {
	*backendHost
	act     *schedAct
	gen     int
	nextSub int // submissions' ids are unique on the node, across activations
}

func newSchedBackend(w *world, n *node) host {
	return &schedHost{backendHost: &backendHost{w: w, n: n}}
}

func (h *schedHost) start() {
	h.act = nil
	h.backendHost.start()
	h.schedViewChanged()
}

func (h *schedHost) viewChanged() {
	h.backendHost.viewChanged()
	h.schedViewChanged()
}

// schedOwner is the backend observer's view places the scheduler on.
func (w *world) schedOwner(observer *node) *node {
	var members []routecore.Member
	for _, b := range w.backends {
		if w.view.sees(observer, b) {
			members = append(members, routecore.Member{ID: b.name, Address: b.name, Kinds: []string{schedKind}})
		}
	}
	return w.byName[routecore.Owner(members, schedKind, schedKind)]
}

func (h *schedHost) schedViewChanged() {
	mine := h.w.schedOwner(h.n) == h.n
	switch {
	case mine && h.act == nil:
		h.activate()
	case !mine && h.act != nil:
		h.act.stop()
	}
}

func (h *schedHost) deliver(from *messages.PID, id string, msg proto.Message) bool {
	if rest, ok := strings.CutPrefix(id, schedSubID); ok {
		k, attempt, _ := strings.Cut(rest, "/")
		if h.act == nil {
			return false
		}
		s := h.act.subs[atoi(k)]
		if s == nil {
			return false
		}
		a, _ := strconv.ParseUint(attempt, 10, 64)
		s.step(fecore.Answered{Attempt: a, Msg: msg})
		return true
	}
	return h.backendHost.deliver(from, id, msg)
}

func (h *schedHost) deadLetter(from string, _ *messages.PID, _ proto.Message) {
	if rest, ok := strings.CutPrefix(from, schedSubID); ok && h.act != nil {
		k, attempt, _ := strings.Cut(rest, "/")
		if s := h.act.subs[atoi(k)]; s != nil {
			a, _ := strconv.ParseUint(attempt, 10, 64)
			s.step(fecore.Unreachable{Attempt: a})
		}
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// schedAct is one activation of the scheduler.
type schedAct struct {
	h      *schedHost
	a      *actor
	st     *stream
	holder string
	sess   *pcore.Session
	core   *schedcore.Core
	epoch  int64
	halted bool

	seq     uint64              // the runner's last append token
	replies map[uint64][]func() // admin replies waiting for a token
	subs    map[int]*schedSub   // the submissions in flight, by k
	snapSeq int64
}

func (h *schedHost) activate() {
	h.gen++
	w := h.w
	act := &schedAct{h: h, st: w.jr.stream(schedStream), replies: map[uint64][]func(){}, subs: map[int]*schedSub{},
		holder: h.n.name + "/" + schedID + "#" + strconv.Itoa(h.n.inc) + "." + strconv.Itoa(h.gen),
		core:   &schedcore.Core{Planted: w.planted.Schedule}}
	act.a = w.newActor(h.n, schedID)
	act.a.onFired = act.fired
	act.sess = pcore.NewSession(pcore.Config{LeaseTTL: leaseTTL, RetryMin: 20 * time.Millisecond, RetryMax: 300 * time.Millisecond,
		MaxBatchEvents: 256, Planted: w.planted.Lease})
	h.act = act
	w.e.tracef(h.n.name, "%s activate %s", schedID, act.holder)
	act.session(pcore.Start{})
}

func (act *schedAct) live() bool { return act.a.node.up && act.a.node.inc == act.a.inc }

// stop ends the activation (the view placed the scheduler elsewhere): the
// session writes what it holds and releases the lease; the submissions in
// flight are cancelled, as the shell's Stopping cancels them.
func (act *schedAct) stop() {
	if act.h.act == act {
		act.h.act = nil
	}
	act.session(pcore.Stop{})
	act.end()
}

func (act *schedAct) end() {
	act.halted = true
	act.h.w.sched.stintEnds(act)
	for k, s := range act.subs {
		s.a.stopped = true
		delete(act.subs, k)
	}
}

func (act *schedAct) fired(name string) {
	if strings.HasPrefix(name, "persistence.") {
		act.session(effect.Fired{Name: name})
		return
	}
	act.step(effect.Fired{Name: name})
}

// serving reports whether the core may decide now: the runtime's
// Recovered (running, inside the lease).
func (act *schedAct) serving() bool {
	return act.live() && !act.halted && act.sess.Serving(act.a.now())
}

// step steps the core, as the shell does only while it serves (a timer or
// an outcome while it does not is dropped; the next recovery re-plans).
func (act *schedAct) step(in schedcore.Input) {
	if !act.serving() {
		return
	}
	act.run(act.core.Step(act.a.now(), in))
}

// run carries out the core's effects; it returns the token of the last
// Append (0: none).
func (act *schedAct) run(effs []effect.Effect) uint64 {
	var token uint64
	for _, e := range effs {
		if !act.live() || act.halted {
			return token
		}
		switch e := e.(type) {
		case effect.Append:
			if act.sess.Phase() != pcore.PhaseRunning {
				continue
			}
			act.seq++
			token = act.seq
			if act.h.w.e.tracing() {
				act.h.w.e.tracef(act.a.node.name, "%s append #%d: %d events", act.holder, act.seq, len(e.Events))
			}
			act.session(effect.Append{Events: e.Events, Token: act.seq})
		case schedcore.Submit:
			act.submit(e)
		default:
			act.a.apply([]effect.Effect{e})
		}
	}
	return token
}

// request handles an admin request; answer runs with the reply once every
// event persisted so far is durable, the request's and those before it
// (the shell's persistence.Runtime.Reply), or at once when the scheduler
// does not serve.
func (act *schedAct) request(req *messages.ScheduleRequest, answer func(*messages.ScheduleReply)) {
	if !act.serving() {
		answer(&messages.ScheduleReply{Code: schedcore.CodeUnavailable})
		return
	}
	rep, effs := act.core.Request(act.a.now(), req)
	reply := func() { answer(rep) }
	if token := act.run(effs); token != 0 {
		act.replies[token] = append(act.replies[token], reply)
		return
	}
	if act.halted || act.sess.Phase() != pcore.PhaseRunning {
		return
	}
	// Nothing recorded: a barrier behind what is in flight.
	act.seq++
	act.replies[act.seq] = append(act.replies[act.seq], reply)
	act.session(effect.Append{Token: act.seq})
}

// session steps the persistence session and carries out its effects.
func (act *schedAct) session(in pcore.Input) {
	if !act.live() {
		return
	}
	effs := act.sess.Step(act.a.now(), in)
	for _, e := range effs {
		act.sessionEffect(e)
	}
	if act.sess.Phase() != pcore.PhaseRunning {
		act.h.w.sched.stintEnds(act)
	}
}

func (act *schedAct) sessionEffect(e effect.Effect) {
	w, n := act.h.w, act.a.node
	if sessionIO(w, n, act.st, act.holder, e, act.session) {
		return
	}
	switch e := e.(type) {
	case pcore.Load:
		act.load(e.Call)
	case pcore.Confirm:
		for _, reply := range act.replies[e.Token] {
			reply()
		}
		delete(act.replies, e.Token)
		if !e.RepliesOnly {
			act.maybeSnapshot()
		}
	case pcore.Serve:
		act.epoch = e.Epoch
		w.e.tracef(n.name, "%s serves epoch %d from #%d", act.holder, e.Epoch, e.Seq)
		if !act.halted {
			w.sched.stintStarts(act)
			act.step(schedcore.Recovered{})
		}
	case pcore.Halt:
		w.e.tracef(n.name, "%s halts: %s", act.holder, e.Reason)
		act.end()
		if act.h.act == act {
			act.h.act = nil
			w.onNode(n, w.e.now+100*time.Millisecond, act.h.schedViewChanged)
		}
	default:
		act.a.apply([]effect.Effect{e})
	}
}

// load is the session's Load: AcquireEpoch, the newest snapshot and the
// events after it replayed into the core, then the recovery marker's
// append (persistence.Runtime's recover).
func (act *schedAct) load(call uint64) {
	w, n, jr := act.h.w, act.a.node, act.h.w.jr
	fail := func(f pcore.Failure) func() { return func() { act.session(pcore.Loaded{Call: call, Failure: f}) } }
	jr.call(n, func() func() {
		w.hist.epochTaken(act.st, act.holder)
		epoch, snap, events, last := jr.acquire(act.st)
		return func() {
			s, _ := snap.(*messages.ScheduleSnapshot)
			if err := act.core.Reset(s); err != nil {
				w.e.tracef(n.name, "%s restore: %v", act.holder, err)
				act.session(pcore.Loaded{Call: call, Failure: pcore.FailRefused})
				return
			}
			for _, ev := range events {
				if err := act.core.Apply(ev); err != nil {
					w.e.tracef(n.name, "%s replay: %v", act.holder, err)
				}
			}
			act.snapSeq = last
			marker := &messages.ScheduleRecovered{AtUnixNano: act.a.now().UnixNano()}
			jr.call(n, func() func() {
				jr.append(act.st, &appendReq{from: n, epoch: epoch, first: last + 1, events: []proto.Message{marker}, done: func(err error) {
					if err != nil {
						act.session(pcore.Loaded{Call: call, Failure: failureOf(err)})
						return
					}
					act.session(pcore.Loaded{Call: call, Epoch: epoch, LastSeq: last + 1})
				}})
				return nil
			}, fail(pcore.FailAway))
		}
	}, fail(pcore.FailAway))
}

// maybeSnapshot saves a snapshot once schedSnapshotEvery events were
// written since the last and nothing is in flight, so that the core's
// state is the journal's.
func (act *schedAct) maybeSnapshot() {
	sess := act.sess
	if act.halted || sess.Phase() != pcore.PhaseRunning {
		return
	}
	if !pcore.SnapshotDue(int(sess.DurableSeq()-act.snapSeq), schedSnapshotEvery, false, sess.LastSeq() != sess.DurableSeq()) {
		return
	}
	w, n := act.h.w, act.a.node
	snap, seq, epoch := act.core.Snapshot(), sess.DurableSeq(), act.epoch
	act.snapSeq = seq
	w.jr.call(n, func() func() { w.jr.saveSnapshot(act.st, epoch, seq, snap); return nil }, func() {})
}

// schedSub is one submission of a tick's job: the frontend Submission
// core on the scheduler's backend (the real scheduler's frontend.Client).
type schedSub struct {
	act  *schedAct
	k    int
	a    *actor
	core *fecore.Submission
	name string
	tick int64
}

func (act *schedAct) submit(e schedcore.Submit) {
	w := act.h.w
	w.sched.submitted(act, e)
	act.h.nextSub++
	s := &schedSub{act: act, k: act.h.nextSub, name: e.Name, tick: e.Tick}
	s.a = w.newActor(act.a.node, schedSubID+strconv.Itoa(s.k))
	s.a.onFired = func(name string) { s.step(effect.Fired{Name: name}) }
	s.core = fecore.NewSubmission(fecore.SubmitConfig{
		Shards: w.cfg.Shards, AskTimeout: 400 * time.Millisecond, Deadline: act.a.now().Add(schedSubmitTimeout),
		Backoff: fecore.Backoff{Min: 20 * time.Millisecond, Max: 300 * time.Millisecond},
	}, proto.CloneOf(e.Work))
	act.subs[s.k] = s
	j := w.hist.job(e.Work.GetWorkId())
	j.submitted, j.detached = true, true
	s.step(fecore.Begin{})
}

func (s *schedSub) step(in any) {
	if !s.a.live() {
		return
	}
	for _, e := range s.core.Step(s.a.now(), in) {
		if !s.a.live() {
			return
		}
		w, n := s.act.h.w, s.a.node
		switch e := e.(type) {
		case fecore.Ask:
			from := &messages.PID{Address: n.name, Id: schedSubID + strconv.Itoa(s.k) + "/" + strconv.FormatUint(e.Attempt, 10)}
			if w.placement(n, e.Shard) == nil {
				attempt := e.Attempt
				w.onNode(n, w.e.now, func() { s.step(fecore.Unreachable{Attempt: attempt}) })
				continue
			}
			w.send(n, from, &messages.PID{Id: masterID(e.Shard)}, e.Msg)
		case fecore.Forget:
		case fecore.Submitted:
			s.a.stopped = true
			delete(s.act.subs, s.k)
			o := e.Outcomes[0]
			if o.Status == fecore.StatusAccepted {
				if w.e.now <= w.cfg.Duration+w.cfg.Heal-tickAckSettle {
					// acked_ends_final judges the jobs acked early enough
					// to end before the run does, as the clients submit
					// only in the first three quarters of Duration.
					w.hist.clientAcked(o.WorkID)
				}
				s.act.step(schedcore.Acked{Name: s.name, Tick: s.tick})
			} else {
				s.act.step(schedcore.Failed{Name: s.name, Tick: s.tick, Err: errSubmit})
			}
			return
		default:
			s.a.apply([]effect.Effect{e})
		}
	}
}

// errSubmit is a tick's submission that was not acknowledged.
var errSubmit = errorString("sim: the tick's submission was not acknowledged")

type errorString string

func (e errorString) Error() string { return string(e) }

// schedAdmin adds the workload's schedules at the start and pauses,
// resumes and removes as schedWorkload says, from the first frontend, as
// an HTTP API caller would through the node's Schedules: each request is
// asked again every askEvery until the scheduler answers it.
func (w *world) schedAdmin() {
	const askEvery = 250 * time.Millisecond
	f := w.frontends[0]
	ask := func(req *messages.ScheduleRequest, then func()) {
		done := false
		var try func()
		try = func() {
			if done {
				return
			}
			w.e.after(askEvery, try)
			if !f.up {
				return
			}
			to := w.schedOwner(f)
			if to == nil {
				return
			}
			w.transmit(f, to, func() {
				h, ok := w.hosts[to.idx].(*schedHost)
				if !ok || h.act == nil {
					return
				}
				h.act.request(req, func(rep *messages.ScheduleReply) {
					w.transmit(to, f, func() {
						if done || rep.GetCode() == schedcore.CodeUnavailable {
							return
						}
						done = true
						w.e.tracef(f.name, "admin %s %s answered %q", req.GetOp(), req.GetName()+req.GetSchedule().GetName(), rep.GetCode())
						if then != nil {
							then()
						}
					})
				})
			})
		}
		try()
	}
	for _, sp := range schedWorkload {
		add := &messages.ScheduleRequest{Op: "add", Schedule: &messages.Schedule{
			Name: sp.name, Spec: sp.spec, JobType: "t", Payload: []byte(sp.name), Missed: sp.missed, CatchUpMax: sp.catchUp,
		}}
		at := func(t time.Duration, op string, then func()) func() {
			return func() {
				w.e.at(t, func() { ask(&messages.ScheduleRequest{Op: op, Name: sp.name}, then) })
			}
		}
		var after func()
		switch {
		case sp.pauseAt > 0:
			after = at(sp.pauseAt, "pause", at(sp.resumeAt, "resume", nil))
		case sp.removeAt > 0:
			after = at(sp.removeAt, "remove", nil)
		}
		w.e.at(0, func() { ask(add, after) })
		// Quiescence: every schedule is paused tickAckSettle before the
		// end, so that the last ticks' jobs end (and reach the result
		// feed) before the final checks.
		w.e.at(w.cfg.Duration+w.cfg.Heal-tickAckSettle, func() { ask(&messages.ScheduleRequest{Op: "pause", Name: sp.name}, nil) })
	}
}
