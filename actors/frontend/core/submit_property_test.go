package core

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/messages"
)

// TestSubmissionRandomSchedules drives Submissions with random answers,
// losses, stale timers and callers leaving, as the simulator will, and
// checks after every step: at most one ask of a submission is answered
// (older attempts are ignored), every ask carries only works still
// pending and only ids of this submission, Submitted comes exactly once
// and gives every work a final status, a work is accepted only after an
// answer accepted it, and nothing follows the end. The same seed gives
// the same effects.
func TestSubmissionRandomSchedules(t *testing.T) {
	t.Parallel()
	for seed := range uint64(300) {
		a := runSchedule(t, seed)
		b := runSchedule(t, seed)
		require.Equal(t, a, b, "seed %d: the same seed must give the same run", seed)
	}
}

// runSchedule runs one seeded schedule and returns a digest of its
// effects.
func runSchedule(t *testing.T, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 35))
	n := 1 + rng.IntN(4)
	var works []*messages.Work
	for i := range n {
		works = append(works, &messages.Work{WorkId: string(rune('a' + i))})
	}
	cfg := SubmitConfig{Shards: 1, AskTimeout: time.Second, Wait: n == 1 && rng.IntN(2) == 0,
		Backoff: Backoff{Min: 50 * time.Millisecond, Max: 400 * time.Millisecond, Jitter: rng}}
	if rng.IntN(2) == 0 {
		cfg.Deadline = t0.Add(time.Duration(1+rng.IntN(10)) * time.Second)
	}
	s := NewSubmission(cfg, works...)
	if s == nil {
		t.Fatal("no submission")
	}
	now := t0
	var digest []string
	accepted := map[string]bool{} // ids an answer accepted
	submitted := 0
	var asks []Ask
	timers := map[string]time.Time{}
	apply := func(effs []effect.Effect) {
		for _, e := range effs {
			digest = append(digest, effectName(e))
			switch e := e.(type) {
			case Ask:
				asks = append(asks, e)
				if b, ok := e.Msg.(*messages.WorkBatch); ok {
					for _, w := range b.GetWorks() {
						o := s.Outcomes()[w.GetWorkId()[0]-'a']
						require.Zero(t, o.Status, "seed %d: %s sent again after it ended %v", seed, w.GetWorkId(), o.Status)
					}
				}
			case effect.Timer:
				timers[e.Name] = e.At
			case effect.StopTimer:
				delete(timers, e.Name)
			case Submitted:
				submitted++
				require.Equal(t, 1, submitted, "seed %d: Submitted twice", seed)
				for i, o := range e.Outcomes {
					require.NotZero(t, o.Status, "seed %d: work %d has no final status", seed, i)
					if o.Status == StatusAccepted {
						require.True(t, accepted[o.WorkID], "seed %d: %s accepted without an answer accepting it", seed, o.WorkID)
					}
				}
			}
		}
	}
	apply(s.Step(now, Begin{}))
	for step := 0; step < 200 && !s.Done(); step++ {
		now = now.Add(time.Duration(rng.IntN(300)) * time.Millisecond)
		var in any
		switch k := rng.IntN(10); {
		case k < 5 && len(asks) > 0: // answer some ask, maybe an old one
			a := asks[rng.IntN(len(asks))]
			in = answer(rng, a, accepted)
		case k < 6 && len(asks) > 0:
			in = Unreachable{Attempt: asks[rng.IntN(len(asks))].Attempt, Gone: rng.IntN(2) == 0}
		case k < 9 && len(timers) > 0: // fire the earliest timer, or a stale name
			name, at := earliest(timers)
			if rng.IntN(5) == 0 {
				name = TimerAskPrefix + "1"
			}
			now = maxTime(now, at)
			in = effect.Fired{Name: name}
		case k == 9 && rng.IntN(10) == 0:
			in = CallerLeft{}
		default:
			continue
		}
		digest = append(digest, inputName(in))
		apply(s.Step(now, in))
	}
	if s.Done() {
		require.Equal(t, 1, submitted, "seed %d: ended without Submitted", seed)
		require.Nil(t, s.Step(now.Add(time.Hour), Begin{}))
	}
	return digest
}

// answer makes the master's answer to ask a: accepts, refuses or is
// unavailable at random, work by work.
func answer(rng *rand.Rand, a Ask, accepted map[string]bool) Answered {
	verdict := func(id string) (*messages.BatchOutcome, bool) {
		switch rng.IntN(4) {
		case 0:
			return &messages.BatchOutcome{WorkId: id, Code: messages.RejectCode_REJECT_CODE_UNAVAILABLE}, false
		case 1:
			return &messages.BatchOutcome{WorkId: id, Code: messages.RejectCode_REJECT_CODE_INVALID}, false
		}
		return &messages.BatchOutcome{WorkId: id, Accepted: true}, true
	}
	var msg proto.Message
	switch m := a.Msg.(type) {
	case *messages.Work:
		o, ok := verdict(m.GetWorkId())
		if ok {
			msg = &messages.Ack{WorkId: m.GetWorkId()}
		} else {
			msg = &messages.WorkRejected{WorkId: m.GetWorkId(), Code: o.GetCode()}
		}
	case *messages.WorkBatch:
		ack := &messages.WorkBatchAck{}
		for _, w := range m.GetWorks() {
			o, _ := verdict(w.GetWorkId())
			ack.Outcomes = append(ack.Outcomes, o)
		}
		msg = ack
	case *messages.GetWorkStatus:
		msg = &messages.WorkStatusReply{WorkId: m.GetWorkId(), Status: messages.WorkStatus(rng.IntN(7))}
	}
	return Answered{Attempt: a.Attempt, Msg: markAccepted(msg, accepted)}
}

// markAccepted records the ids msg accepts: a Submission may count them
// as accepted only if this answer is the one it takes, which the check
// of Submitted allows (accepted is a superset).
func markAccepted(msg proto.Message, accepted map[string]bool) proto.Message {
	switch m := msg.(type) {
	case *messages.Ack:
		accepted[m.GetWorkId()] = true
	case *messages.WorkBatchAck:
		for _, o := range m.GetOutcomes() {
			if o.GetAccepted() {
				accepted[o.GetWorkId()] = true
			}
		}
	}
	return msg
}

func earliest(timers map[string]time.Time) (string, time.Time) {
	var name string
	var at time.Time
	for n, a := range timers {
		if name == "" || a.Before(at) || a.Equal(at) && n < name {
			name, at = n, a
		}
	}
	return name, at
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func effectName(e effect.Effect) string {
	switch e := e.(type) {
	case Ask:
		return "ask " + string(proto.MessageName(e.Msg).Name()) + " #" + strconv.FormatUint(e.Attempt, 10)
	case effect.Timer:
		return "timer " + e.Name + " " + e.At.Format(time.StampMilli)
	case effect.StopTimer:
		return "stop " + e.Name
	case Submitted:
		out := "submitted"
		for _, o := range e.Outcomes {
			out += " " + o.WorkID + "=" + o.Status.String()
		}
		return out
	case Outcome:
		return "outcome " + e.Result.GetStatus().String()
	case Forget:
		return "forget"
	case effect.Log:
		return "log " + e.Msg
	}
	return "?"
}

func inputName(in any) string {
	switch in := in.(type) {
	case Answered:
		return "answered " + string(proto.MessageName(in.Msg).Name())
	case Unreachable:
		return "unreachable"
	case effect.Fired:
		return "fired " + in.Name
	case CallerLeft:
		return "caller left"
	}
	return "?"
}
