package worker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/worker/core"
)

// TestSlotBeaterThrottles: a job beating in a tight loop sends its worker
// one beat per gap, and the last progress of a burst leaves at the gap's
// end; Heartbeat and Progress with a ctx that is not a job's do nothing.
func TestSlotBeaterThrottles(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	self := testkit.NewProbe(t, sys)
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := newSlotBeater(sys, self.PID(), 3, clk, time.Second) // gap 250 ms
	ctx := &jobCtx{Context: context.Background(), b: b, seq: 7}

	for i := range 10000 {
		Heartbeat(ctx)
		Progress(ctx, float64(i)/10000, "busy")
	}
	Progress(ctx, 2, "last") // clamped to 1
	first := testkit.ExpectMsgType[*beatMsg](self, testkit.Timeout())
	require.Equal(t, 3, first.slot)
	require.Equal(t, uint64(7), first.seq)
	require.Nil(t, first.progress, "the first call was a Heartbeat")
	_, more := self.ReceiveOne(50 * time.Millisecond)
	require.False(t, more, "the rest of the burst waits for the gap's end")

	clk.Advance(250 * time.Millisecond)
	trailing := testkit.ExpectMsgType[*beatMsg](self, testkit.Timeout())
	require.Equal(t, &core.Progress{Fraction: 1, Message: "last"}, trailing.progress)
	_, more = self.ReceiveOne(50 * time.Millisecond)
	require.False(t, more, "10,001 calls, two beats")

	// Any other ctx: nothing, no panic.
	Heartbeat(context.Background())
	Progress(context.Background(), 0.5, "x")
	_, more = self.ReceiveOne(50 * time.Millisecond)
	require.False(t, more)
}
