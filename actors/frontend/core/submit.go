package core

import (
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	routecore "github.com/foreman-actors/foreman/actors/route/core"
	"github.com/foreman-actors/foreman/messages"
)

// Defaults of a submission (the frontend package's).
const (
	DefaultAskTimeout      = 5 * time.Second
	DefaultMinRetryBackoff = 100 * time.Millisecond
	DefaultMaxRetryBackoff = 3 * time.Second
	// DefaultPollInterval is how often a Call that waits for its outcome
	// asks the master for the work's status too: the outcome message to
	// the call's interest is sent once and may be lost.
	DefaultPollInterval = 2 * time.Second
)

// Timer names of a Submission. An ask's timer carries its attempt number
// after the prefix, so that a stale one is told apart.
const (
	TimerAskPrefix = "ask#"
	TimerBackoff   = "backoff"
	TimerDeadline  = "deadline"
	TimerPoll      = "poll"
)

// SubmitConfig configures a Submission.
type SubmitConfig struct {
	// Shards is how many shards (masters) the cluster has; a work goes to
	// shard ShardOf(id, Shards).
	Shards int
	// AskTimeout bounds one attempt (default DefaultAskTimeout).
	AskTimeout time.Duration
	// Backoff between attempts (default DefaultMinRetryBackoff doubling to
	// DefaultMaxRetryBackoff, no jitter).
	Backoff Backoff
	// Deadline is the caller's: past it the submission gives up. Zero: no
	// deadline (the caller leaves with CallerLeft).
	Deadline time.Time
	// Wait makes it a Call (Client.Do): once acknowledged it waits for the
	// work's outcome (Delivered from the call's interest, or a status
	// poll every PollInterval) and ends with Outcome.
	Wait bool
	// PollInterval is the Call's status poll (default DefaultPollInterval).
	PollInterval time.Duration
}

func (c SubmitConfig) withDefaults() SubmitConfig {
	if c.AskTimeout <= 0 {
		c.AskTimeout = DefaultAskTimeout
	}
	if c.Backoff.Min <= 0 {
		c.Backoff.Min = DefaultMinRetryBackoff
	}
	if c.Backoff.Max < c.Backoff.Min {
		c.Backoff.Max = max(DefaultMaxRetryBackoff, c.Backoff.Min)
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	return c
}

// Inputs of Submission.Step (besides effect.Fired).
type (
	// Begin sends the first attempt.
	Begin struct{}
	// Answered is the master's answer to the ask of Attempt: Ack,
	// WorkRejected, WorkBatchAck or (a Call's poll) WorkStatusReply.
	Answered struct {
		Attempt uint64
		Msg     proto.Message
	}
	// Unreachable is the route's news about the ask of Attempt: no master
	// found or a dead letter (Gone false), or the master's node left the
	// cluster while the ask was in flight (Gone true).
	Unreachable struct {
		Attempt uint64
		Gone    bool
	}
	// Delivered is the work's outcome, sent by the master to the call's
	// interest (a Call only).
	Delivered struct{ Result *messages.WorkResult }
	// CallerLeft is the caller's context ending (cancelled; its deadline
	// is SubmitConfig.Deadline's timer).
	CallerLeft struct{}
)

// Effects of Submission.Step (besides effect.Timer, StopTimer and Log).
type (
	// Ask sends Msg to the master of shard Shard, as the runner's route
	// finds it, with a reply address of this submission: the answer comes
	// back as Answered{Attempt}, a failure to reach it as Unreachable.
	Ask struct {
		Shard   int
		Attempt uint64
		Msg     proto.Message
	}
	// Forget tells the route that shard Shard's master did not answer in
	// time: the next ask looks it up again (route.Master.Forget).
	Forget struct{ Shard int }
	// Submitted ends the submission: one outcome per work, in order.
	Submitted struct{ Outcomes []WorkOutcome }
	// Outcome ends a Call's wait: the work's final result, or nil when
	// the caller left first (or the submission was not acknowledged).
	Outcome struct{ Result *messages.WorkResult }
)

// IsEffect marks Ask as an effect.Effect.
func (Ask) IsEffect() {}

// IsEffect marks Forget as an effect.Effect.
func (Forget) IsEffect() {}

// IsEffect marks Submitted as an effect.Effect.
func (Submitted) IsEffect() {}

// IsEffect marks Outcome as an effect.Effect.
func (Outcome) IsEffect() {}

// Status is how one work's submission ended.
type Status uint8

const (
	// StatusAccepted means acknowledged, the work is durable.
	StatusAccepted Status = iota + 1
	// StatusRejected means refused for good (Code, Reason).
	StatusRejected
	// StatusGaveUp means the caller left (or its deadline passed) before an
	// acknowledgement; Last is the last attempt's result.
	StatusGaveUp
	// StatusFailed means an answer not worth retrying (Last is Failed).
	StatusFailed
)

// String returns the status's name.
func (s Status) String() string {
	switch s {
	case StatusAccepted:
		return "accepted"
	case StatusRejected:
		return "rejected"
	case StatusGaveUp:
		return "gave_up"
	case StatusFailed:
		return "failed"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// WorkOutcome is how one work's submission ended.
type WorkOutcome struct {
	WorkID   string
	Status   Status
	Code     messages.RejectCode // StatusRejected, or the last UNAVAILABLE
	Reason   string
	Last     Result // the last attempt's result
	Attempts int    // asks sent with this work
}

type phase uint8

const (
	phaseIdle phase = iota
	phaseAsking
	phaseBackoff
	phaseWaiting // a Call, acknowledged, waiting for the outcome
	phaseDone
)

// Submission is one call of the frontend's Client: Submit (one work),
// a SubmitMany chunk (the works of one shard, sent as WorkBatch, each
// retry carrying only the works still pending) or Call/Do (Submit, then
// wait for the outcome). It routes to the shard's master, waits for the
// answer at most the ask timeout, retries with backoff (the same work ids:
// the master acknowledges an id it already accepted again) and gives up at
// the caller's deadline. Not safe for concurrent use.
type Submission struct {
	cfg     SubmitConfig
	works   []*messages.Work
	batch   bool
	shard   int
	retry   Retry
	pending []int // indexes of works not yet answered for good
	out     []WorkOutcome
	last    Result
	attempt uint64 // the current ask's number; asks count from 1
	phase   phase
	polling uint64 // a Call's status poll in flight (its attempt), 0: none
}

// NewSubmission returns the submission of works: one work is sent as
// Work, several as a WorkBatch (they must all belong to one shard, as
// SubmitMany's chunks do). Works with an empty id fail at Begin as
// StatusFailed without being sent.
func NewSubmission(cfg SubmitConfig, works ...*messages.Work) *Submission {
	cfg = cfg.withDefaults()
	s := &Submission{cfg: cfg, works: works, batch: len(works) > 1, retry: NewRetry(cfg.Backoff)}
	s.out = make([]WorkOutcome, len(works))
	for i, w := range works {
		s.out[i] = WorkOutcome{WorkID: w.GetWorkId()}
		if w.GetWorkId() == "" {
			s.out[i].Status, s.out[i].Last = StatusFailed, Failed
			continue
		}
		s.pending = append(s.pending, i)
	}
	if len(s.pending) > 0 {
		s.shard = routecore.ShardOf(works[s.pending[0]].GetWorkId(), cfg.Shards)
	}
	return s
}

// Done reports whether the submission (and a Call's wait) has ended.
func (s *Submission) Done() bool { return s.phase == phaseDone }

// Outcomes returns each work's outcome so far, in order.
func (s *Submission) Outcomes() []WorkOutcome { return s.out }

// Step takes one input (Begin, Answered, Unreachable, Delivered,
// CallerLeft, effect.Fired) at now and returns the effects.
func (s *Submission) Step(now time.Time, in any) []effect.Effect {
	if s.phase == phaseDone {
		return nil
	}
	switch m := in.(type) {
	case Begin:
		if s.phase != phaseIdle {
			return nil
		}
		var out []effect.Effect
		if !s.cfg.Deadline.IsZero() {
			out = append(out, effect.Timer{Name: TimerDeadline, At: s.cfg.Deadline})
		}
		if len(s.pending) == 0 {
			return s.finish(now, out)
		}
		return s.ask(now, out)
	case Answered:
		if m.Attempt == s.polling && s.phase == phaseWaiting {
			return s.polled(m.Msg)
		}
		if m.Attempt != s.attempt || s.phase != phaseAsking {
			return nil // a late answer to an earlier attempt
		}
		return s.answered(now, m.Msg)
	case Unreachable:
		if m.Attempt != s.attempt || s.phase != phaseAsking {
			return nil
		}
		r := NoMaster
		if m.Gone {
			r = MasterGone
		}
		return s.after(now, r, []effect.Effect{effect.StopTimer{Name: s.askTimer()}})
	case Delivered:
		if s.phase == phaseWaiting && m.Result != nil {
			return s.end(nil, m.Result)
		}
	case CallerLeft:
		return s.giveUp()
	case effect.Fired:
		return s.fired(now, m.Name)
	}
	return nil
}

func (s *Submission) fired(now time.Time, name string) []effect.Effect {
	switch {
	case name == TimerDeadline:
		return s.giveUp()
	case name == TimerBackoff && s.phase == phaseBackoff:
		return s.ask(now, nil)
	case name == TimerPoll && s.phase == phaseWaiting:
		s.attempt++
		s.polling = s.attempt
		id := s.works[0].GetWorkId()
		return []effect.Effect{
			Ask{Shard: s.shard, Attempt: s.attempt, Msg: &messages.GetWorkStatus{WorkId: id}},
			effect.Timer{Name: TimerPoll, At: now.Add(s.cfg.PollInterval)},
		}
	case name == s.askTimer() && s.phase == phaseAsking:
		// The deadline's timer ends an ask that the caller's deadline cuts
		// short, so this is a full ask timeout: the master did not answer,
		// and the route looks it up again (the Client's askTo).
		return s.after(now, TimedOut, []effect.Effect{Forget{Shard: s.shard}})
	}
	return nil
}

func (s *Submission) askTimer() string {
	return TimerAskPrefix + strconv.FormatUint(s.attempt, 10)
}

// ask sends the next attempt with the works still pending.
func (s *Submission) ask(now time.Time, out []effect.Effect) []effect.Effect {
	s.attempt++
	s.phase = phaseAsking
	for _, i := range s.pending {
		s.out[i].Attempts++
	}
	var msg proto.Message
	if s.batch {
		b := &messages.WorkBatch{Works: make([]*messages.Work, len(s.pending))}
		for j, i := range s.pending {
			b.Works[j] = s.works[i]
		}
		msg = b
	} else {
		msg = s.works[0]
	}
	return append(out,
		Ask{Shard: s.shard, Attempt: s.attempt, Msg: msg},
		effect.Timer{Name: s.askTimer(), At: now.Add(s.cfg.AskTimeout)})
}

// answered folds the master's answer into the outcomes.
func (s *Submission) answered(now time.Time, msg proto.Message) []effect.Effect {
	out := []effect.Effect{effect.StopTimer{Name: s.askTimer()}}
	r := Failed
	if m, ok := msg.(*messages.WorkBatchAck); ok && s.batch {
		r = s.batchAnswered(m)
	} else if !s.batch {
		r = JudgeAnswer(s.works[0].GetWorkId(), msg)
		switch r {
		case Acked:
			s.out[0].Status = StatusAccepted
		case Rejected, Unavailable:
			rej := msg.(*messages.WorkRejected)
			s.rejected(0, rej.GetCode(), rej.GetReason())
		}
	}
	if r == Acked || r == Rejected {
		s.pending = s.pending[:0]
	}
	return s.after(now, r, out)
}

func (s *Submission) rejected(i int, code messages.RejectCode, reason string) Result {
	s.out[i].Code, s.out[i].Reason = code, reason
	if code == messages.RejectCode_REJECT_CODE_UNAVAILABLE {
		return Unavailable
	}
	s.out[i].Status = StatusRejected
	return Rejected
}

// JudgeAnswer classifies the master's answer msg to the Work workID:
// Acked (an Ack for that id), Rejected or Unavailable (a WorkRejected,
// UNAVAILABLE being temporary), Failed (an Ack for another id, or any
// other message: an unexpected reply). The Client's SubmitOnce and the
// Submission judge by it.
func JudgeAnswer(workID string, msg any) Result {
	switch m := msg.(type) {
	case *messages.Ack:
		if m.GetWorkId() == workID {
			return Acked
		}
	case *messages.WorkRejected:
		if m.GetCode() == messages.RejectCode_REJECT_CODE_UNAVAILABLE {
			return Unavailable
		}
		return Rejected
	}
	return Failed
}

// batchAnswered applies a WorkBatchAck (outcomes by position in the batch
// sent): works rejected as UNAVAILABLE stay pending.
func (s *Submission) batchAnswered(m *messages.WorkBatchAck) Result {
	outs := m.GetOutcomes()
	if len(outs) != len(s.pending) {
		return Failed
	}
	for j, o := range outs {
		if o.GetWorkId() != s.works[s.pending[j]].GetWorkId() {
			return Failed
		}
	}
	var still []int
	for j, o := range outs {
		i := s.pending[j]
		if o.GetAccepted() {
			s.out[i].Status = StatusAccepted
			continue
		}
		if s.rejected(i, o.GetCode(), o.GetReason()) == Unavailable {
			still = append(still, i)
		}
	}
	s.pending = still
	if len(still) > 0 {
		return Unavailable
	}
	return Acked
}

// after applies the retry policy to the attempt's result.
func (s *Submission) after(now time.Time, r Result, out []effect.Effect) []effect.Effect {
	s.last = r
	d := s.retry.After(r, false)
	switch d.Action {
	case Again:
		out = append(out, effect.Log{Level: slog.LevelDebug, Msg: "master gone, trying again at once", Attrs: []any{"attempt", d.Attempt}})
		return s.ask(now, out)
	case Wait:
		s.phase = phaseBackoff
		out = append(out, effect.Log{Level: slog.LevelDebug, Msg: "failed, retrying", Attrs: []any{"attempt", d.Attempt, "backoff", d.Wait, "result", r.String()}})
		return append(out, effect.Timer{Name: TimerBackoff, At: now.Add(d.Wait)})
	}
	for _, i := range s.pending {
		s.out[i].Status, s.out[i].Last = StatusFailed, r
	}
	s.pending = s.pending[:0]
	return s.finish(now, out)
}

// finish reports the submission's outcomes; a Call then waits.
func (s *Submission) finish(now time.Time, out []effect.Effect) []effect.Effect {
	for i := range s.out {
		if s.out[i].Last == 0 {
			s.out[i].Last = s.last
		}
	}
	out = append(out, Submitted{Outcomes: s.out})
	if s.cfg.Wait && !s.batch && s.out[0].Status == StatusAccepted {
		s.phase = phaseWaiting
		return append(out, effect.Timer{Name: TimerPoll, At: now.Add(s.cfg.PollInterval)})
	}
	return s.end(out, nil)
}

// giveUp ends the submission (or the Call's wait) for a caller that left.
func (s *Submission) giveUp() []effect.Effect {
	switch s.phase {
	case phaseWaiting:
		return s.end(nil, nil)
	case phaseIdle, phaseAsking, phaseBackoff:
		out := []effect.Effect{effect.StopTimer{Name: s.askTimer()}, effect.StopTimer{Name: TimerBackoff}}
		for _, i := range s.pending {
			s.out[i].Status, s.out[i].Last = StatusGaveUp, s.last
		}
		s.pending = s.pending[:0]
		out = append(out, Submitted{Outcomes: s.out})
		return s.end(out, nil)
	}
	return nil
}

// end stops the timers and ends the submission; a Call reports its
// outcome (nil: none).
func (s *Submission) end(out []effect.Effect, r *messages.WorkResult) []effect.Effect {
	s.phase = phaseDone
	out = append(out, effect.StopTimer{Name: TimerDeadline}, effect.StopTimer{Name: TimerPoll})
	if s.cfg.Wait {
		out = append(out, Outcome{Result: r})
	}
	return out
}

// polled handles a Call's status poll answer: a final status ends the
// wait.
func (s *Submission) polled(msg proto.Message) []effect.Effect {
	s.polling = 0
	st, ok := msg.(*messages.WorkStatusReply)
	if !ok {
		return nil
	}
	if r, final := FinalResult(st); final {
		return s.end(nil, r)
	}
	return nil
}

// FinalResult is the outcome that a status answer shows, when the work
// has ended (DONE, DEAD or CANCELLED): what a waiting Call settles with
// when the outcome's own message was lost.
func FinalResult(st *messages.WorkStatusReply) (*messages.WorkResult, bool) {
	switch st.GetStatus() {
	case messages.WorkStatus_WORK_STATUS_DONE, messages.WorkStatus_WORK_STATUS_DEAD, messages.WorkStatus_WORK_STATUS_CANCELLED:
		return &messages.WorkResult{WorkId: st.GetWorkId(), JobType: st.GetJobType(), Result: st.GetResult(),
			Status: st.GetStatus(), Error: st.GetLastError()}, true
	}
	return nil, false
}
