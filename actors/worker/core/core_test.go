package core_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/actors/worker/core"
	"github.com/foreman-actors/foreman/messages"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var (
	masterPID = &messages.PID{Address: "m", Id: "master"}
	waiterPID = &messages.PID{Address: "f", Id: "waiter"}
)

func config(mut ...func(*core.Config)) core.Config {
	c := core.Config{
		ID: "w1", Self: &messages.PID{Address: "n", Id: "w1"}, JobTypes: []string{"echo", "sleep"},
		Masters: []*messages.PID{masterPID}, Window: 2, MaxUnacked: 32,
		RegisterInterval: 10 * time.Second, ResendInterval: 5 * time.Second, ResultHold: 0,
		InterestTimeout: 3 * time.Second, InterestRetry: time.Second, PermitIdle: time.Second,
	}
	for _, m := range mut {
		m(&c)
	}
	return c
}

// render writes effects as short lines (timers relative to now), log
// lines left out, so that a test states a whole step's effects at once.
func render(now time.Time, effs []effect.Effect) []string {
	var out []string
	for _, e := range effs {
		switch e := e.(type) {
		case effect.Send:
			out = append(out, renderMsg(e.Msg))
		case effect.Timer:
			out = append(out, "timer "+e.Name+" +"+e.At.Sub(now).String())
		case effect.StopTimer:
			out = append(out, "stop "+e.Name)
		case *core.Run:
			out = append(out, fmt.Sprintf("run %d %s", e.Slot, e.Work.GetWorkId()))
		case core.Cancel:
			out = append(out, fmt.Sprintf("cancel %d", e.Slot))
		case core.Ask:
			out = append(out, fmt.Sprintf("ask %d %s", e.Slot, e.WorkID))
		case core.Unwatch:
			out = append(out, fmt.Sprintf("unwatch %d", e.Slot))
		case core.Resolve:
			out = append(out, fmt.Sprintf("resolve %d", e.Shard))
		case core.WatchMaster:
			out = append(out, "watch "+e.PID.GetId())
		case core.UnwatchMaster:
			out = append(out, "unwatch "+e.PID.GetId())
		case core.Acquire:
			out = append(out, "acquire")
		case core.Release:
			out = append(out, fmt.Sprintf("release %d", e.Permit))
		case core.Abandon:
			out = append(out, fmt.Sprintf("abandon %d", e.Permit))
		case core.Yield:
			out = append(out, "yield "+e.Name)
		case core.Drained:
			out = append(out, "drained")
		case core.Halt:
			out = append(out, "halt")
		case core.CancelJobs:
			out = append(out, "cancel jobs: "+e.Cause.Error())
		}
	}
	return out
}

func renderMsg(m any) string {
	switch m := m.(type) {
	case *messages.RegisterWorker:
		return "register"
	case *messages.WorkerRequestsWork:
		return fmt.Sprintf("request %d", m.GetCapacity())
	case *messages.WorkIsDone:
		return "done " + m.GetWorkId() + "=" + string(m.GetResult())
	case *messages.WorkIsDoneBatch:
		ids := make([]string, 0, len(m.GetDone()))
		for _, d := range m.GetDone() {
			ids = append(ids, d.GetWorkId())
		}
		return "batch " + strings.Join(ids, ",")
	case *messages.WorkFailed:
		s := "failed " + m.GetWorkId()
		if m.GetPermanent() {
			s += " permanent"
		}
		if m.GetCancelled() {
			s += " cancelled"
		}
		if m.GetHandedBack() {
			s += " handed-back"
		}
		return s
	case *messages.WorkHeartbeat:
		beats := make([]string, 0, len(m.GetBeats()))
		for _, b := range m.GetBeats() {
			s := fmt.Sprintf("%s#%d/%dms", b.GetWorkId(), b.GetAttempt(), b.GetTimeoutMs())
			if b.GetHasProgress() {
				s += fmt.Sprintf("@%.2f:%s", b.GetFraction(), b.GetMessage())
			}
			beats = append(beats, s)
		}
		return "heartbeat " + strings.Join(beats, ",")
	case *messages.DeregisterWorker:
		return "deregister"
	}
	return fmt.Sprintf("%T", m)
}

func work(id string) *messages.Work { return &messages.Work{WorkId: id, JobType: "echo"} }

func waited(id string) *messages.Work {
	w := work(id)
	w.Waiter = waiterPID
	return w
}

// failure returns the error text of the first WorkFailed among effs.
func failure(effs []effect.Effect) string {
	for _, e := range effs {
		if s, ok := e.(effect.Send); ok {
			if f, ok := s.Msg.(*messages.WorkFailed); ok {
				return f.GetError()
			}
		}
	}
	return ""
}

// step runs one input at a time offset and returns its rendered effects.
type step struct {
	at   time.Duration
	do   func(w *core.Worker, at time.Time) []effect.Effect
	want []string
	// err, if set, must be in the step's first WorkFailed.
	err string
}

func TestWorkerCore(t *testing.T) {
	t.Parallel()
	started := []string{"timer register +10s", "register", "request 2"}
	lateRegistered := false // the registry of TheRegistryMayGrowWhileTheWorkerRuns
	tests := []struct {
		name  string
		cfg   core.Config
		steps []step
	}{
		{name: "RunReportAck", cfg: config(), steps: []step{
			{do: start, want: started},
			{do: offer(work("a")), want: []string{"run 0 a"}},
			{do: done(0, "a", "1"), want: []string{"timer resend:a +5s", "yield flush"}},
			{do: fired(core.YieldFlush), want: []string{"done a=1", "request 2"}},
			{do: ack("a"), want: []string{"stop resend:a"}},
		}},
		{name: "ResendUntilAck", cfg: config(), steps: []step{
			{do: start, want: started},
			{do: offer(work("a")), want: []string{"run 0 a"}},
			{do: done(0, "a", "1"), want: []string{"timer resend:a +5s", "yield flush"}},
			{do: fired(core.YieldFlush), want: []string{"done a=1", "request 2"}},
			{at: 5 * time.Second, do: fired("resend:a"), want: []string{"done a=1", "timer resend:a +5s"}},
			{at: 6 * time.Second, do: ack("a"), want: []string{"stop resend:a"}},
			{at: 11 * time.Second, do: fired("resend:a"), want: nil},
		}},
		{name: "BeyondTheWindowQueues", cfg: config(), steps: []step{
			{do: start, want: started},
			{do: bundle(work("a"), work("b"), work("c")), want: []string{"run 0 a", "run 1 b"}},
			{do: done(1, "b", "2"), want: []string{"timer resend:b +5s", "run 1 c", "yield flush"}},
			{do: done(1, "b", "2"), want: nil}, // stale
			{do: fired(core.YieldFlush), want: []string{"done b=2"}},
			{do: done(0, "a", "1"), want: []string{"timer resend:a +5s", "yield flush"}},
			{do: done(1, "c", "3"), want: []string{"timer resend:c +5s"}},
			{do: fired(core.YieldFlush), want: []string{"batch a,c", "request 2"}},
		}},
		{name: "DuplicateOfferOfADoneWorkResendsItsResult", cfg: config(), steps: []step{
			{do: start, want: started},
			{do: offer(work("a")), want: []string{"run 0 a"}},
			{do: offer(work("a")), want: nil},
			{do: done(0, "a", "1"), want: []string{"timer resend:a +5s", "yield flush"}},
			{do: offer(work("a")), want: []string{"done a=1"}},
		}},
		{name: "UnknownTypeAndPassedDeadlineArePermanent", cfg: config(), steps: []step{
			{do: start, want: started},
			{do: offer(&messages.Work{WorkId: "x", JobType: "nope"}), want: []string{"failed x permanent"}, err: "this worker runs echo, sleep"},
			{at: time.Second, do: offer(&messages.Work{WorkId: "d", JobType: "echo", DeadlineUnixNano: t0.UnixNano()}),
				want: []string{"failed d permanent"}, err: "deadline"},
		}},
		{name: "TheRegistryMayGrowWhileTheWorkerRuns", cfg: config(func(c *core.Config) {
			c.Known = func(t string) bool { return t == "echo" || (t == "late" && lateRegistered) }
			c.Types = func() []string { return []string{"echo"} }
		}), steps: []step{
			{do: start, want: started},
			{do: offer(&messages.Work{WorkId: "a", JobType: "late"}), want: []string{"failed a permanent"}, err: "this worker runs echo"},
			{do: func(w *core.Worker, at time.Time) []effect.Effect { lateRegistered = true; return nil }},
			{do: offer(&messages.Work{WorkId: "b", JobType: "late"}), want: []string{"run 0 b"}},
		}},
		{name: "WaiterSaysYesThenLeaves", cfg: config(), steps: []step{
			{do: start, want: started},
			{do: offer(waited("a")), want: []string{"ask 0 a", "timer watch:0:1 +1s", "timer ask:0:1 +3s"}},
			{do: interest(0, 1, "a", core.StillInterested, false), want: []string{"stop ask:0:1", "run 0 a"}},
			{at: time.Second, do: fired("watch:0:1"), want: []string{"timer watch:0:1 +1s"}},
			{do: interest(0, 1, "a", core.NoLongerInterested, false), want: []string{"cancel 0"}},
			{do: interest(0, 1, "a", core.NoLongerInterested, false), want: nil}, // once
			{do: doneErr(0, "a", core.ErrCallerGone), want: []string{"stop watch:0:1", "unwatch 0", "failed a permanent cancelled", "yield flush"}},
		}},
		{name: "WaiterSilentIsGivenUp", cfg: config(), steps: []step{
			{do: start, want: started},
			{do: offer(waited("a")), want: []string{"ask 0 a", "timer watch:0:1 +1s", "timer ask:0:1 +3s"}},
			{at: time.Second, do: fired("watch:0:1"), want: []string{"ask 0 a", "timer watch:0:1 +1s"}},
			{at: 3 * time.Second, do: fired("ask:0:1"), want: []string{"stop watch:0:1", "unwatch 0", "failed a permanent cancelled", "request 2"},
				err: "did not answer AreYouStillInterested within 3s"},
		}},
		{name: "DeadLetterFromTheWaitersNode", cfg: config(), steps: []step{
			{do: start, want: started},
			{do: offer(waited("a")), want: []string{"ask 0 a", "timer watch:0:1 +1s", "timer ask:0:1 +3s"}},
			{do: interest(0, 1, "a", core.DeadLetter, false), want: nil}, // unreachable: asked again at the tick
			{do: interest(0, 1, "a", core.DeadLetter, true), want: []string{"stop ask:0:1", "stop watch:0:1", "unwatch 0", "failed a permanent cancelled", "request 2"},
				err: "dead letter from its node"},
		}},
		{name: "AStaleAnswerIsIgnored", cfg: config(), steps: []step{
			{do: start, want: started},
			{do: offer(waited("a")), want: []string{"ask 0 a", "timer watch:0:1 +1s", "timer ask:0:1 +3s"}},
			{do: interest(0, 7, "a", core.StillInterested, false), want: nil},
			{do: interest(0, 1, "b", core.StillInterested, false), want: nil},
		}},
		{name: "GoneNodeConfirmedOncePerNode", cfg: config(func(c *core.Config) { c.NodeGone = func(string) bool { return true } }), steps: []step{
			{do: start, want: started},
			{do: offer(waited("a")), want: []string{"ask 0 a", "timer watch:0:1 +1s", "timer ask:0:1 +3s"}},
			{at: 1 * time.Second, do: fired("watch:0:1"), want: []string{"ask 0 a", "timer watch:0:1 +1s"}},
			{at: 2 * time.Second, do: fired("watch:0:1"), want: []string{"ask 0 a", "timer watch:0:1 +1s"}},
			{at: 3 * time.Second, do: fired("watch:0:1"), want: []string{"stop ask:0:1", "unwatch 0", "failed a permanent cancelled", "request 2"},
				err: "left the cluster"},
			// The node is confirmed: the next waiter there is given up at once
			// (asked all the same, which re-makes a connection if it is back).
			{at: 3 * time.Second, do: offer(waited("b")), want: []string{"ask 0 b", "timer watch:0:2 +1s", "timer ask:0:2 +3s",
				"stop ask:0:2", "stop watch:0:2", "unwatch 0", "failed b permanent cancelled", "request 2"}},
		}},
		{name: "ResolverFindsLosesAndFindsTheMaster", cfg: config(func(c *core.Config) { c.Masters = []*messages.PID{nil} }), steps: []step{
			{do: start, want: []string{"timer register +10s", "resolve 0"}},
			{do: offer(work("a")), want: []string{"run 0 a"}},
			{do: doneErr(0, "a", errors.New("boom")), want: []string{"yield flush"}}, // no master: held in the outbox
			{do: resolved(0, masterPID), want: []string{"watch master", "register", "failed a", "request 2"}},
			{do: resolved(0, masterPID), want: []string{"register"}},
			{do: terminated(masterPID), want: []string{"resolve 0"}},
			{do: resolved(0, &messages.PID{Address: "m2", Id: "master"}), want: []string{"watch master", "register", "request 2"}},
		}},
		{name: "LimiterPermitPerJob", cfg: config(func(c *core.Config) { c.Limiter = true; c.Window = 1 }), steps: []step{
			{do: start, want: []string{"timer register +10s", "register", "acquire"}},
			{do: permit(1), want: []string{"timer idle +1s", "request 1"}},
			{do: offer(work("a")), want: []string{"run 0 a"}},
			{do: done(0, "a", "1"), want: []string{"release 1", "acquire", "timer resend:a +5s", "yield flush"}},
			{do: fired(core.YieldFlush), want: []string{"done a=1"}},
			{do: permit(2), want: []string{"request 1"}},
			{at: time.Second, do: fired(core.TimerIdle), want: []string{"abandon 2"}},
		}},
		{name: "LimiterClosedHandsBackWaitingWork", cfg: config(func(c *core.Config) { c.Limiter = true; c.Window = 1 }), steps: []step{
			{do: start, want: []string{"timer register +10s", "register", "acquire"}},
			{do: offer(work("a")), want: []string{}},
			{do: offer(work("b")), want: nil},
			{do: func(w *core.Worker, at time.Time) []effect.Effect { return w.PermitFailed(at, errors.New("closed")) },
				want: []string{"failed a", "failed b"}, err: core.ErrLimiterClosed.Error()},
		}},
		{name: "DrainHandsBackQueuedWaitsForAcks", cfg: config(func(c *core.Config) { c.Window = 1 }), steps: []step{
			{do: start, want: []string{"timer register +10s", "register", "request 1"}},
			{do: bundle(work("a"), work("b")), want: []string{"run 0 a"}},
			{do: drain, want: []string{"failed b handed-back"}, err: core.ErrWorkerStopping.Error()},
			{do: done(0, "a", "1"), want: []string{"timer resend:a +5s", "yield flush"}},
			{do: fired(core.YieldFlush), want: []string{"done a=1"}},
			{do: offer(work("c")), want: []string{"failed c handed-back"}},
			{do: ack("a"), want: []string{"stop resend:a", "deregister", "drained"}},
		}},
		{name: "StopHandsBackAndResendsUnackedInIDOrder", cfg: config(func(c *core.Config) { c.Window = 3 }), steps: []step{
			{do: start, want: []string{"timer register +10s", "register", "request 3"}},
			{do: bundle(work("z"), work("y"), work("x"), work("q")), want: []string{"run 0 z", "run 1 y", "run 2 x"}},
			{do: done(0, "z", "1"), want: []string{"timer resend:z +5s", "run 0 q", "yield flush"}},
			{do: done(1, "y", "2"), want: []string{"timer resend:y +5s"}},
			{do: stop, want: []string{"halt", "failed q handed-back", "failed x handed-back", "done y=2", "done z=1", "deregister"}},
			{do: fired(core.YieldFlush), want: nil},
			{do: offer(work("r")), want: []string{"failed r handed-back"}},
		}},
		{name: "PanicFailsTheWorkAndStartsTheNext", cfg: config(func(c *core.Config) { c.Window = 1 }), steps: []step{
			{do: start, want: []string{"timer register +10s", "register", "request 1"}},
			{do: bundle(work("a"), work("b")), want: []string{"run 0 a"}},
			{do: func(w *core.Worker, at time.Time) []effect.Effect {
				return w.RunPanicked(at, 0, errors.New("panic: x"))
			},
				want: []string{"failed a", "run 0 b"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := core.New(tt.cfg)
			for i, s := range tt.steps {
				at := t0.Add(s.at)
				effs := s.do(w, at)
				got := render(at, effs)
				if len(s.want) == 0 {
					require.Empty(t, got, "step %d", i)
				} else {
					require.Equal(t, s.want, got, "step %d", i)
				}
				if s.err != "" {
					require.Contains(t, failure(effs), s.err, "step %d", i)
				}
			}
		})
	}
}

func start(w *core.Worker, at time.Time) []effect.Effect { return w.Start(at) }
func drain(w *core.Worker, at time.Time) []effect.Effect { return w.Drain(at) }
func stop(w *core.Worker, at time.Time) []effect.Effect  { return w.Stop(at) }

func offer(m *messages.Work) func(*core.Worker, time.Time) []effect.Effect {
	return func(w *core.Worker, at time.Time) []effect.Effect { return w.Work(at, m) }
}

func bundle(ms ...*messages.Work) func(*core.Worker, time.Time) []effect.Effect {
	return func(w *core.Worker, at time.Time) []effect.Effect { return w.Bundle(at, ms) }
}

func done(slot int, id, res string) func(*core.Worker, time.Time) []effect.Effect {
	return func(w *core.Worker, at time.Time) []effect.Effect { return w.RunDone(at, slot, id, []byte(res), nil) }
}

func doneErr(slot int, id string, err error) func(*core.Worker, time.Time) []effect.Effect {
	return func(w *core.Worker, at time.Time) []effect.Effect { return w.RunDone(at, slot, id, nil, err) }
}

func fired(name string) func(*core.Worker, time.Time) []effect.Effect {
	return func(w *core.Worker, at time.Time) []effect.Effect { return w.Fired(at, name) }
}

func ack(ids ...string) func(*core.Worker, time.Time) []effect.Effect {
	return func(w *core.Worker, at time.Time) []effect.Effect { return w.Ack(at, ids...) }
}

func interest(slot int, seq uint64, id string, kind core.AnswerKind, gone bool) func(*core.Worker, time.Time) []effect.Effect {
	return func(w *core.Worker, at time.Time) []effect.Effect {
		return w.Interest(at, core.Answer{Slot: slot, Seq: seq, WorkID: id, Kind: kind, Gone: gone})
	}
}

func resolved(k int, pid *messages.PID) func(*core.Worker, time.Time) []effect.Effect {
	return func(w *core.Worker, at time.Time) []effect.Effect { return w.Resolved(at, k, pid, nil) }
}

func terminated(pid *messages.PID) func(*core.Worker, time.Time) []effect.Effect {
	return func(w *core.Worker, at time.Time) []effect.Effect { return w.MasterTerminated(at, pid) }
}

func permit(id uint64) func(*core.Worker, time.Time) []effect.Effect {
	return func(w *core.Worker, at time.Time) []effect.Effect { return w.PermitGranted(at, id) }
}

// TestWorkerCoreIsDeterministic steps two cores through the same inputs,
// with results pending in a map, and requires the same effects.
func TestWorkerCoreIsDeterministic(t *testing.T) {
	t.Parallel()
	runOnce := func() []string {
		w := core.New(config(func(c *core.Config) { c.Window = 64; c.Masters = []*messages.PID{masterPID, {Address: "m", Id: "m1"}} }))
		out := render(t0, w.Start(t0))
		var ws []*messages.Work
		for i := range 64 {
			ws = append(ws, work(fmt.Sprintf("w%02d", i)))
		}
		out = append(out, render(t0, w.Bundle(t0, ws))...)
		for i := range 64 {
			out = append(out, render(t0, w.RunDone(t0, i, fmt.Sprintf("w%02d", i), []byte("r"), nil))...)
		}
		out = append(out, render(t0, w.Resolved(t0, 1, &messages.PID{Address: "m", Id: "m2"}, nil))...)
		return append(out, render(t0, w.Stop(t0))...)
	}
	first := runOnce()
	for range 5 {
		require.Equal(t, first, runOnce())
	}
}
