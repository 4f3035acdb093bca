package testkit_test

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/messages"
)

// short is how long the failure tests wait for things that never come.
const short = 30 * time.Millisecond

// TestExpectationsFail runs every expectation against a recording TB in a
// situation where it must fail, and checks the failure text says what was
// expected, what came instead and what is still queued.
func TestExpectationsFail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// queue is sent to the probe (in order) before act runs.
		queue []any
		act   func(p *testkit.Probe)
		want  []string // substrings of the failure text
	}{
		{
			name:  "ExpectMsg wrong message",
			queue: []any{5, "b"},
			act:   func(p *testkit.Probe) { p.ExpectMsg("a", testkit.Timeout()) },
			want:  []string{"ExpectMsg: expected string(\"a\"), got int(5)", "still queued (1): [string(\"b\")]"},
		},
		{
			name: "ExpectMsg timeout",
			act:  func(p *testkit.Probe) { p.ExpectMsg("a", short) },
			want: []string{"ExpectMsg: timeout (30ms) waiting for string(\"a\")", "probe queue is empty"},
		},
		{
			name:  "ExpectMsg proto by value",
			queue: []any{&messages.Ack{WorkId: "w2"}},
			act:   func(p *testkit.Probe) { p.ExpectMsg(&messages.Ack{WorkId: "w1"}, testkit.Timeout()) },
			// protobuf's text form varies its spacing on purpose: match loosely.
			want: []string{"ExpectMsg: expected *messages.Ack{", "\"w1\"}, got *messages.Ack{", "\"w2\"}"},
		},
		{
			name:  "ExpectMsgType wrong type",
			queue: []any{"x"},
			act:   func(p *testkit.Probe) { testkit.ExpectMsgType[*messages.Ack](p, testkit.Timeout()) },
			want:  []string{"ExpectMsgType: expected a message of type *messages.Ack, got string(\"x\")"},
		},
		{
			name: "ExpectMsgType timeout",
			act:  func(p *testkit.Probe) { testkit.ExpectMsgType[int](p, short) },
			want: []string{"ExpectMsgType: timeout (30ms) waiting for a message of type int"},
		},
		{
			name:  "ExpectNoMsg got one",
			queue: []any{"late", 7},
			act:   func(p *testkit.Probe) { p.ExpectNoMsg(short) },
			want:  []string{"ExpectNoMsg: expected no message for 30ms, got string(\"late\")", "still queued (1): [int(7)]"},
		},
		{
			name:  "ExpectMsgAllOf missing and unexpected",
			queue: []any{"a", "z"},
			act:   func(p *testkit.Probe) { p.ExpectMsgAllOf(testkit.Timeout(), "b", "a") },
			want:  []string{"ExpectMsgAllOf: expected 2 messages in any order [string(\"b\"), string(\"a\")]", "got 2: [string(\"a\"), string(\"z\")]", "missing [string(\"b\")]", "unexpected [string(\"z\")]"},
		},
		{
			name:  "ExpectMsgAllOf timeout",
			queue: []any{"a"},
			act:   func(p *testkit.Probe) { p.ExpectMsgAllOf(short, "a", "b") },
			want:  []string{"got 1: [string(\"a\")]", "missing [string(\"b\")]"},
		},
		{
			name:  "FishForMessage no match",
			queue: []any{1, 2},
			act: func(p *testkit.Probe) {
				p.FishForMessage(short, func(m any) bool { return m == 3 })
			},
			want: []string{"FishForMessage: no matching message within 30ms; skipped 2: [int(1), int(2)]"},
		},
		{
			name:  "ReceiveN too few",
			queue: []any{"only"},
			act:   func(p *testkit.Probe) { p.ReceiveN(2, short) },
			want:  []string{"ReceiveN: expected 2 messages within 30ms, got 1: [string(\"only\")]"},
		},
		{
			name:  "ExpectTerminated other message",
			queue: []any{"hello"},
			act:   func(p *testkit.Probe) { p.ExpectTerminated(actor.NewPID("nonhost", "x"), testkit.Timeout()) },
			want:  []string{"ExpectTerminated: expected Terminated of nonhost/x, got string(\"hello\")"},
		},
		{
			name: "ExpectTerminated timeout",
			act:  func(p *testkit.Probe) { p.ExpectTerminated(actor.NewPID("nonhost", "x"), short) },
			want: []string{"ExpectTerminated: timeout (30ms) waiting for Terminated of nonhost/x (did you call Watch?)"},
		},
		{
			name: "Within too fast",
			act:  func(p *testkit.Probe) { p.Within(time.Hour, 2*time.Hour, func() {}) },
			want: []string{"Within(1h0m0s, 2h0m0s): block took", "less than the minimum 1h0m0s"},
		},
		{
			name:  "Within too slow",
			queue: []any{"a"},
			act: func(p *testkit.Probe) {
				p.Within(0, short, func() {
					p.ExpectMsg("a", testkit.Timeout())
					time.Sleep(2 * short) // the block itself is slow: that is what is tested
				})
			},
			want: []string{"Within(0s, 30ms): block took", "more than the maximum 30ms"},
		},
		{
			name: "expectation inside Within is capped at the block's end",
			act: func(p *testkit.Probe) {
				p.Within(0, short, func() { p.ExpectMsg("never", time.Hour) })
			},
			want: []string{"ExpectMsg: timeout (30ms) waiting for string(\"never\")"},
		},
		{
			name: "Reply before any message",
			act:  func(p *testkit.Probe) { p.Reply("r") },
			want: []string{"Reply(string(\"r\")): no message has been received yet"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sys := testkit.NewSystem(t)
			rec := newRecordingTB(t)
			p := testkit.NewProbe(rec, sys)
			for _, m := range tt.queue {
				sys.Root.Send(p.PID(), m)
			}
			if len(tt.queue) > 0 {
				// Wait until all are queued, so the failure text is stable.
				waitQueued(t, p, len(tt.queue))
			}
			completed := rec.run(func() { tt.act(p) })
			require.False(t, completed, "a failed expectation must stop the goroutine (Fatal)")
			require.True(t, rec.Failed())
			got := rec.failure()
			t.Log(got)
			for _, w := range tt.want {
				require.Contains(t, got, w)
			}
		})
	}
}

func TestReplyWithoutSenderFails(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	rec := newRecordingTB(t)
	p := testkit.NewProbe(rec, sys)
	sys.Root.Send(p.PID(), "anonymous")
	completed := rec.run(func() {
		p.ExpectMsg("anonymous", testkit.Timeout())
		p.Reply("r")
	})
	require.False(t, completed)
	require.Contains(t, rec.failure(), "the last message string(\"anonymous\") had no sender")
}

func TestExpectationsPass(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	rec := newRecordingTB(t)
	p := testkit.NewProbe(rec, sys)
	for _, m := range []any{"a", "b", &messages.Ack{WorkId: "w"}, 1, 2, 3, "fish", "x", "y"} {
		sys.Root.Send(p.PID(), m)
	}
	completed := rec.run(func() {
		p.ExpectMsgAllOf(testkit.Timeout(), "b", "a")
		p.ExpectMsg(&messages.Ack{WorkId: "w"}, testkit.Timeout()) // another pointer, same value
		p.Within(0, testkit.Timeout(), func() {
			require.Equal(t, []any{1, 2, 3}, p.ReceiveN(3, p.Remaining()))
		})
		require.Equal(t, "y", p.FishForMessage(testkit.Timeout(), func(m any) bool { return m == "y" }))
		p.ExpectNoMsg(short)
	})
	require.True(t, completed, rec.failure())
	require.False(t, rec.Failed())
}

// waitQueued waits (in real time, bounded) until p has n queued messages.
func waitQueued(t *testing.T, p *testkit.Probe, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(p.Queued()) >= n }, testkit.Timeout(), time.Millisecond)
}
