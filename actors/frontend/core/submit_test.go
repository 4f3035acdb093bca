package core

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/messages"
)

var t0 = time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)

// TestRetryTable: the Client's policy. Each row is a run of attempt
// results and the decisions they must get.
func TestRetryTable(t *testing.T) {
	t.Parallel()
	b := Backoff{Min: 100 * time.Millisecond, Max: 300 * time.Millisecond}
	type d = Decision
	tests := []struct {
		name    string
		results []Result
		left    []bool // caller left after that attempt; nil: never
		want    []Decision
	}{
		{"acked at once", []Result{Acked}, nil, []d{{Action: Stop, Attempt: 1}}},
		{"rejected for good is final", []Result{Rejected}, nil, []d{{Action: Stop, Attempt: 1}}},
		{"unexpected reply is final", []Result{Failed}, nil, []d{{Action: Stop, Attempt: 1}}},
		{"timeouts back off, doubling to the cap",
			[]Result{TimedOut, NoMaster, Unavailable, TimedOut, Acked}, nil,
			[]d{{Wait, 100 * time.Millisecond, 1}, {Wait, 200 * time.Millisecond, 2}, {Wait, 300 * time.Millisecond, 3}, {Wait, 300 * time.Millisecond, 4}, {Stop, 0, 5}}},
		{"the master's node left: again at once, once in a row",
			[]Result{MasterGone, MasterGone, MasterGone, TimedOut, MasterGone}, nil,
			[]d{{Again, 0, 1}, {Wait, 100 * time.Millisecond, 2}, {Again, 0, 3}, {Wait, 200 * time.Millisecond, 4}, {Again, 0, 5}}},
		{"the caller left: no more attempts", []Result{TimedOut, TimedOut}, []bool{false, true},
			[]d{{Wait, 100 * time.Millisecond, 1}, {Stop, 0, 2}}},
		{"the caller left: not even the at-once retry", []Result{MasterGone}, []bool{true}, []d{{Stop, 0, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := NewRetry(b)
			for i, r := range tt.results {
				left := tt.left != nil && tt.left[i]
				require.Equal(t, tt.want[i], p.After(r, left), "attempt %d (%v)", i+1, r)
			}
			require.Equal(t, len(tt.results), p.Attempts())
		})
	}
}

// TestRetryJitter: with a seeded source the pauses stay within [d/2, d]
// and the same seed gives the same pauses.
func TestRetryJitter(t *testing.T) {
	t.Parallel()
	run := func(seed uint64) []time.Duration {
		p := NewRetry(Backoff{Min: 100 * time.Millisecond, Max: time.Second, Jitter: rand.New(rand.NewPCG(seed, 0))})
		var out []time.Duration
		for range 6 {
			out = append(out, p.After(TimedOut, false).Wait)
		}
		return out
	}
	a := run(7)
	require.Equal(t, a, run(7))
	require.NotEqual(t, a, run(8))
	full := 100 * time.Millisecond
	for i, w := range a {
		require.GreaterOrEqual(t, w, full/2, "pause %d", i)
		require.LessOrEqual(t, w, full, "pause %d", i)
		full = min(2*full, time.Second)
	}
}

// sub is a Submission under test with the effects of its last step.
type sub struct {
	t    *testing.T
	s    *Submission
	effs []effect.Effect
}

func (x *sub) step(at time.Duration, in any) *sub {
	x.effs = x.s.Step(t0.Add(at), in)
	return x
}

// asks returns the Ask effects of the last step.
func (x *sub) asks() []Ask {
	var out []Ask
	for _, e := range x.effs {
		if a, ok := e.(Ask); ok {
			out = append(out, a)
		}
	}
	return out
}

func (x *sub) timers() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, e := range x.effs {
		if tm, ok := e.(effect.Timer); ok {
			out[tm.Name] = tm.At.Sub(t0)
		}
	}
	return out
}

func (x *sub) has(want effect.Effect) bool {
	for _, e := range x.effs {
		if a, ok := e.(Forget); ok && a == want {
			return true
		}
	}
	return false
}

func (x *sub) submitted() []WorkOutcome {
	for _, e := range x.effs {
		if s, ok := e.(Submitted); ok {
			return s.Outcomes
		}
	}
	return nil
}

func (x *sub) outcome() (*messages.WorkResult, bool) {
	for _, e := range x.effs {
		if o, ok := e.(Outcome); ok {
			return o.Result, true
		}
	}
	return nil, false
}

func newSub(t *testing.T, cfg SubmitConfig, works ...*messages.Work) *sub {
	if cfg.Shards == 0 {
		cfg.Shards = 1
	}
	cfg.Backoff = Backoff{Min: 100 * time.Millisecond, Max: 400 * time.Millisecond}
	cfg.AskTimeout = time.Second
	return &sub{t: t, s: NewSubmission(cfg, works...)}
}

func work(id string) *messages.Work { return &messages.Work{WorkId: id, JobType: "square"} }

func TestSubmissionAckedAtOnce(t *testing.T) {
	t.Parallel()
	x := newSub(t, SubmitConfig{}, work("w1")).step(0, Begin{})
	require.Len(t, x.asks(), 1)
	a := x.asks()[0]
	require.True(t, proto.Equal(work("w1"), a.Msg))
	require.Equal(t, map[string]time.Duration{"ask#1": time.Second}, x.timers())
	x.step(10*time.Millisecond, Answered{Attempt: a.Attempt, Msg: &messages.Ack{WorkId: "w1"}})
	require.Equal(t, []WorkOutcome{{WorkID: "w1", Status: StatusAccepted, Last: Acked, Attempts: 1}}, x.submitted())
	require.True(t, x.s.Done())
	_, isCall := x.outcome()
	require.False(t, isCall, "a Submit is no Call")
}

// TestSubmissionRetriesTheSameWork: a timeout makes the route forget the
// master and backs off; a late Ack to the first attempt is ignored; the
// retry carries the same work id, which the master acks again.
func TestSubmissionRetriesTheSameWork(t *testing.T) {
	t.Parallel()
	x := newSub(t, SubmitConfig{}, work("w1")).step(0, Begin{})
	x.step(time.Second, effect.Fired{Name: "ask#1"})
	require.True(t, x.has(Forget{Shard: 0}))
	require.Equal(t, map[string]time.Duration{TimerBackoff: 1100 * time.Millisecond}, x.timers())
	x.step(1050*time.Millisecond, Answered{Attempt: 1, Msg: &messages.Ack{WorkId: "w1"}})
	require.Empty(t, x.effs, "an answer to an attempt that timed out is not this attempt's")
	x.step(1100*time.Millisecond, effect.Fired{Name: TimerBackoff})
	require.Len(t, x.asks(), 1)
	require.Equal(t, uint64(2), x.asks()[0].Attempt)
	require.Equal(t, "w1", x.asks()[0].Msg.(*messages.Work).GetWorkId())
	x.step(1200*time.Millisecond, effect.Fired{Name: "ask#1"})
	require.Empty(t, x.effs, "a stale timer of attempt 1")
	x.step(1200*time.Millisecond, Unreachable{Attempt: 2, Gone: true})
	require.Len(t, x.asks(), 1, "the master's node left: again at once")
	x.step(1300*time.Millisecond, Answered{Attempt: 3, Msg: &messages.WorkRejected{WorkId: "w1", Code: messages.RejectCode_REJECT_CODE_UNAVAILABLE}})
	require.Equal(t, map[string]time.Duration{TimerBackoff: 1500 * time.Millisecond}, x.timers(), "the doubled backoff")
	x.step(1500*time.Millisecond, effect.Fired{Name: TimerBackoff})
	x.step(1510*time.Millisecond, Answered{Attempt: 4, Msg: &messages.Ack{WorkId: "w1"}})
	require.Equal(t, StatusAccepted, x.submitted()[0].Status)
	require.Equal(t, 4, x.submitted()[0].Attempts, "four asks, one work id")
}

func TestSubmissionEnds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		cfg    SubmitConfig
		inputs []any // after Begin, at 10 ms steps
		want   WorkOutcome
	}{
		{"rejected for good", SubmitConfig{}, []any{
			Answered{Attempt: 1, Msg: &messages.WorkRejected{WorkId: "w1", Code: messages.RejectCode_REJECT_CODE_INVALID, Reason: "bad"}},
		}, WorkOutcome{WorkID: "w1", Status: StatusRejected, Code: messages.RejectCode_REJECT_CODE_INVALID, Reason: "bad", Last: Rejected, Attempts: 1}},
		{"an Ack for another id is an unexpected reply", SubmitConfig{}, []any{
			Answered{Attempt: 1, Msg: &messages.Ack{WorkId: "other"}},
		}, WorkOutcome{WorkID: "w1", Status: StatusFailed, Last: Failed, Attempts: 1}},
		{"the caller's deadline passes while retrying", SubmitConfig{Deadline: t0.Add(15 * time.Millisecond)}, []any{
			Unreachable{Attempt: 1}, effect.Fired{Name: TimerDeadline},
		}, WorkOutcome{WorkID: "w1", Status: StatusGaveUp, Last: NoMaster, Attempts: 1}},
		{"the caller leaves", SubmitConfig{}, []any{CallerLeft{}},
			WorkOutcome{WorkID: "w1", Status: StatusGaveUp, Attempts: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x := newSub(t, tt.cfg, work("w1")).step(0, Begin{})
			for i, in := range tt.inputs {
				x.step(time.Duration(i+1)*10*time.Millisecond, in)
			}
			require.Equal(t, []WorkOutcome{tt.want}, x.submitted())
			require.True(t, x.s.Done())
			require.Nil(t, x.step(time.Minute, Answered{Attempt: 1, Msg: &messages.Ack{WorkId: "w1"}}).effs, "nothing after the end")
		})
	}
}

// TestSubmissionBatch: a WorkBatch retried with only the works still
// pending (UNAVAILABLE), each work's outcome in order.
func TestSubmissionBatch(t *testing.T) {
	t.Parallel()
	x := newSub(t, SubmitConfig{}, work("a"), work("b"), work(""), work("c")).step(0, Begin{})
	b := x.asks()[0].Msg.(*messages.WorkBatch)
	require.Len(t, b.GetWorks(), 3, "the work without an id is not sent")
	unavailable := messages.RejectCode_REJECT_CODE_UNAVAILABLE
	x.step(10*time.Millisecond, Answered{Attempt: 1, Msg: &messages.WorkBatchAck{Outcomes: []*messages.BatchOutcome{
		{WorkId: "a", Accepted: true},
		{WorkId: "b", Code: unavailable},
		{WorkId: "c", Code: messages.RejectCode_REJECT_CODE_TOO_LARGE, Reason: "big"},
	}}})
	require.Contains(t, x.timers(), TimerBackoff)
	x.step(110*time.Millisecond, effect.Fired{Name: TimerBackoff})
	b = x.asks()[0].Msg.(*messages.WorkBatch)
	require.Equal(t, "b", b.GetWorks()[0].GetWorkId())
	require.Len(t, b.GetWorks(), 1, "only the pending work is retried")
	x.step(120*time.Millisecond, Answered{Attempt: 2, Msg: &messages.WorkBatchAck{Outcomes: []*messages.BatchOutcome{{WorkId: "b", Accepted: true}}}})
	out := x.submitted()
	require.Equal(t, []Status{StatusAccepted, StatusAccepted, StatusFailed, StatusRejected},
		[]Status{out[0].Status, out[1].Status, out[2].Status, out[3].Status})
	require.Equal(t, 2, out[1].Attempts)
}

// TestCallWaits: a Call settles with the outcome its interest delivers,
// or with a status poll's when that message was lost, or with nothing
// when the caller leaves.
func TestCallWaits(t *testing.T) {
	t.Parallel()
	done := &messages.WorkResult{WorkId: "w1", Status: messages.WorkStatus_WORK_STATUS_DONE, Result: []byte("49")}
	acked := Answered{Attempt: 1, Msg: &messages.Ack{WorkId: "w1"}}
	t.Run("delivered", func(t *testing.T) {
		t.Parallel()
		x := newSub(t, SubmitConfig{Wait: true}, work("w1")).step(0, Begin{})
		x.step(time.Millisecond, acked)
		require.Equal(t, StatusAccepted, x.submitted()[0].Status)
		require.Equal(t, 2*time.Second+time.Millisecond, x.timers()[TimerPoll])
		require.False(t, x.s.Done())
		x.step(time.Second, Delivered{Result: done})
		r, ok := x.outcome()
		require.True(t, ok)
		require.Same(t, done, r)
		require.True(t, x.s.Done())
	})
	t.Run("polled", func(t *testing.T) {
		t.Parallel()
		x := newSub(t, SubmitConfig{Wait: true}, work("w1")).step(0, Begin{})
		x.step(time.Millisecond, acked)
		x.step(2*time.Second, effect.Fired{Name: TimerPoll})
		poll := x.asks()[0]
		require.Equal(t, "w1", poll.Msg.(*messages.GetWorkStatus).GetWorkId())
		x.step(2100*time.Millisecond, Answered{Attempt: poll.Attempt, Msg: &messages.WorkStatusReply{WorkId: "w1", Status: messages.WorkStatus_WORK_STATUS_RUNNING}})
		_, ok := x.outcome()
		require.False(t, ok, "still running")
		x.step(4*time.Second, effect.Fired{Name: TimerPoll})
		poll = x.asks()[0]
		x.step(4100*time.Millisecond, Answered{Attempt: poll.Attempt, Msg: &messages.WorkStatusReply{WorkId: "w1", Status: messages.WorkStatus_WORK_STATUS_DEAD, LastError: "boom"}})
		r, ok := x.outcome()
		require.True(t, ok)
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DEAD, r.GetStatus())
		require.Equal(t, "boom", r.GetError())
	})
	t.Run("the caller left", func(t *testing.T) {
		t.Parallel()
		x := newSub(t, SubmitConfig{Wait: true}, work("w1")).step(0, Begin{})
		x.step(time.Millisecond, acked)
		x.step(time.Second, CallerLeft{})
		r, ok := x.outcome()
		require.True(t, ok)
		require.Nil(t, r)
		require.Nil(t, x.step(2*time.Second, Delivered{Result: done}).effs)
	})
}
