package core_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/throttler/core"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type fsm = core.FSM[string, int]
type effects = core.Effects[string, int]

func newFSM(t *testing.T, rate core.Rate, opts ...core.Option) *fsm {
	t.Helper()
	f, err := core.NewFSM[string, int](rate, opts...)
	require.NoError(t, err)
	return f
}

// copyInts copies an effects slice, which the next step reuses.
func copyInts(s []int) []int {
	if len(s) == 0 {
		return nil
	}
	return append([]int(nil), s...)
}

// Setups that put a 3/s timer-mode FSM in each shape the seed's transitions
// start from.
var setups = map[string]func(f *fsm){
	"IdleNoTarget":       func(*fsm) {},
	"IdleNoTargetQueued": func(f *fsm) { f.Enqueue(1, t0); f.Enqueue(2, t0) },
	"IdleTarget":         func(f *fsm) { f.SetTarget("a", t0) },
	"ActiveVouchersLeft": func(f *fsm) { f.SetTarget("a", t0); f.Enqueue(1, t0) },
	"ActiveNoVouchersQueue": func(f *fsm) {
		f.SetTarget("a", t0)
		f.Enqueue(1, t0)
		f.Enqueue(2, t0)
		f.Enqueue(3, t0)
		f.Enqueue(4, t0)
		f.Enqueue(5, t0)
	},
	"ActiveNoVouchersEmpty": func(f *fsm) { f.SetTarget("a", t0); f.Enqueue(1, t0); f.Enqueue(2, t0); f.Enqueue(3, t0) },
}

func TestFSMTimerModeTransitions(t *testing.T) {
	t.Parallel()
	later := t0.Add(time.Second)
	tests := []struct {
		name  string
		setup string
		step  func(f *fsm) effects
		// expected
		from, to     core.State
		target       string
		deliver      []int
		timer        core.TimerOp
		timerAfter   time.Duration
		queued       int
		vouchersLeft int
	}{
		{
			// Reference: seed 002, "When a SetTarget message arrives and our queue is non-empty, we can start sending messages."
			name: "IdleSetTargetWithQueueGoesActiveDelivering", setup: "IdleNoTargetQueued",
			step: func(f *fsm) effects { return f.SetTarget("a", t0) },
			from: core.StateIdle, to: core.StateActive, target: "a", deliver: []int{1, 2},
			timer: core.TimerStartPeriodic, timerAfter: time.Second, vouchersLeft: 1,
		},
		{
			// Reference: seed 002, "When a SetTarget message arrives and our queue is empty, we stay, recording the new target."
			name: "IdleSetTargetEmptyQueueStays", setup: "IdleNoTarget",
			step: func(f *fsm) effects { return f.SetTarget("a", t0) },
			from: core.StateIdle, to: core.StateIdle, target: "a", vouchersLeft: 3,
		},
		{
			// Reference: seed 002, "case Event(SetTarget(t), d) => stay using d.copy(target = t)"
			name: "IdleUnsetTargetStays", setup: "IdleNoTargetQueued",
			step: func(f *fsm) effects { return f.SetTarget("", t0) },
			from: core.StateIdle, to: core.StateIdle, queued: 2, vouchersLeft: 3,
		},
		{
			// Reference: seed 002, "When a Queue message arrives and the target is not set, we stay in Idle, after adding the new message to our queue."
			name: "IdleQueueNoTargetStaysQueued", setup: "IdleNoTargetQueued",
			step: func(f *fsm) effects { return f.Enqueue(3, t0) },
			from: core.StateIdle, to: core.StateIdle, queued: 3, vouchersLeft: 3,
		},
		{
			// Reference: seed 002, "When a Queue message arrives and the target is set, we jump to Active, delivering the message that we just received."
			name: "IdleQueueWithTargetGoesActiveDelivering", setup: "IdleTarget",
			step: func(f *fsm) effects { return f.Enqueue(7, t0) },
			from: core.StateIdle, to: core.StateActive, target: "a", deliver: []int{7},
			timer: core.TimerStartPeriodic, timerAfter: time.Second, vouchersLeft: 2,
		},
		{
			// Reference: seed 002, "When a SetTarget message arrives to unset the target, we hop to Idle."
			name: "ActiveUnsetTargetGoesIdleAndStopsTimer", setup: "ActiveNoVouchersQueue",
			step: func(f *fsm) effects { return f.SetTarget("", t0) },
			from: core.StateActive, to: core.StateIdle, timer: core.TimerStop, queued: 2,
		},
		{
			// Reference: seed 002, "When a SetTarget message arrives to change the target to another one, we update our internal state, d."
			name: "ActiveChangeTargetStays", setup: "ActiveNoVouchersQueue",
			step: func(f *fsm) effects { return f.SetTarget("b", t0) },
			from: core.StateActive, to: core.StateActive, target: "b", queued: 2,
		},
		{
			// Reference: seed 002, "when we've run out of vouchers, we put the message at the end of our queue."
			name: "ActiveQueueNoVouchersQueues", setup: "ActiveNoVouchersEmpty",
			step: func(f *fsm) effects { return f.Enqueue(4, t0) },
			from: core.StateActive, to: core.StateActive, target: "a", queued: 1,
		},
		{
			// Reference: seed 002, "When a Queue message arrives and we have vouchers left, we use them"
			name: "ActiveQueueWithVouchersDelivers", setup: "ActiveVouchersLeft",
			step: func(f *fsm) effects { return f.Enqueue(2, t0) },
			from: core.StateActive, to: core.StateActive, target: "a", deliver: []int{2}, vouchersLeft: 1,
		},
		{
			// Reference: seed 002, "When a Tick message arrives, we check whether the queue is empty, in which case there is no more work to do and we can transition back to Idle, deactivating the timer."
			name: "ActiveTickEmptyQueueGoesIdle", setup: "ActiveNoVouchersEmpty",
			step: func(f *fsm) effects { return f.Tick(later) },
			from: core.StateActive, to: core.StateIdle, target: "a", timer: core.TimerStop, vouchersLeft: 3,
		},
		{
			// Reference: seed 002, "Period ends and we get more occasions to send messages"
			name: "ActiveTickWithQueueDeliversNewVouchers", setup: "ActiveNoVouchersQueue",
			step: func(f *fsm) effects { return f.Tick(later) },
			from: core.StateActive, to: core.StateActive, target: "a", deliver: []int{4, 5}, vouchersLeft: 1,
		},
		{
			// A tick of a timer stopped on the way to Idle changes nothing.
			name: "IdleTickIsIgnored", setup: "IdleNoTargetQueued",
			step: func(f *fsm) effects { return f.Tick(later) },
			from: core.StateIdle, to: core.StateIdle, queued: 2, vouchersLeft: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFSM(t, core.PerSecond(3))
			setups[tt.setup](f)
			require.Equal(t, tt.from, f.State(), "setup %s", tt.setup)
			eff := tt.step(f)
			require.Equal(t, tt.from, eff.From)
			require.Equal(t, tt.to, eff.To)
			require.Equal(t, tt.to, f.State())
			require.Equal(t, tt.target, eff.Target)
			require.Equal(t, tt.target, f.Target())
			require.Equal(t, tt.deliver, copyInts(eff.Deliver))
			require.Equal(t, tt.timer, eff.Timer)
			require.Equal(t, tt.timerAfter, eff.TimerAfter)
			require.Equal(t, tt.queued, f.Len())
			require.Equal(t, tt.vouchersLeft, f.Stats().VouchersLeft)
			require.Empty(t, eff.Rejected)
			require.Empty(t, eff.Dropped)
		})
	}
}

// TestFSMSeedScenario replays the seed's test at the FSM level: 7 messages
// at 3/s are delivered 1,2,3 then 4,5,6 one period later, then 7.
func TestFSMSeedScenario(t *testing.T) {
	t.Parallel()
	// Reference: seed 002, "respect the rate (3 msg/s)"
	f := newFSM(t, core.PerSecond(3))
	f.SetTarget("echo", t0)
	var got []int
	timerOn := false
	for i := 1; i <= 7; i++ {
		eff := f.Enqueue(i, t0)
		got = append(got, eff.Deliver...)
		if eff.Timer == core.TimerStartPeriodic {
			timerOn = true
		}
	}
	require.True(t, timerOn)
	require.Equal(t, []int{1, 2, 3}, got)
	eff := f.Tick(t0.Add(time.Second))
	require.Equal(t, []int{4, 5, 6}, eff.Deliver)
	eff = f.Tick(t0.Add(2 * time.Second))
	require.Equal(t, []int{7}, eff.Deliver)
	require.Equal(t, core.StateActive, f.State(), "the period of the latest delivery is still running")
	eff = f.Tick(t0.Add(3 * time.Second))
	require.Equal(t, core.TimerStop, eff.Timer)
	require.Equal(t, core.StateIdle, f.State())
	require.Equal(t, uint64(7), f.Stats().Delivered)
}

func TestFSMSetRate(t *testing.T) {
	t.Parallel()

	t.Run("ActiveCutsPeriodAndCountsUsedVouchers", func(t *testing.T) {
		t.Parallel()
		f := newFSM(t, core.PerSecond(3))
		f.SetTarget("a", t0)
		f.Enqueue(1, t0)
		f.Enqueue(2, t0)
		for i := 3; i <= 8; i++ {
			f.Enqueue(i, t0)
		}
		require.Equal(t, 5, f.Len())
		eff, err := f.SetRate(core.Rate{Calls: 5, Per: 2 * time.Second}, t0.Add(100*time.Millisecond))
		require.NoError(t, err)
		// 3 used in the cut period count against the new 5.
		require.Equal(t, []int{4, 5}, eff.Deliver)
		require.Equal(t, core.TimerStartPeriodic, eff.Timer)
		require.Equal(t, 2*time.Second, eff.TimerAfter)
		eff = f.Tick(t0.Add(2100 * time.Millisecond))
		require.Equal(t, []int{6, 7, 8}, eff.Deliver)
	})

	t.Run("IdleRefillsToNewCalls", func(t *testing.T) {
		t.Parallel()
		f := newFSM(t, core.PerSecond(3))
		eff, err := f.SetRate(core.PerMinute(10), t0)
		require.NoError(t, err)
		require.Equal(t, core.TimerNone, eff.Timer)
		require.Equal(t, 10, f.Stats().VouchersLeft)
		require.Equal(t, core.PerMinute(10), f.Rate())
	})

	t.Run("InvalidRateChangesNothing", func(t *testing.T) {
		t.Parallel()
		for _, mode := range []core.Mode{core.ModeTimer, core.ModeSlidingWindow, core.ModeTokenBucket} {
			f := newFSM(t, core.PerSecond(3), core.WithMode(mode))
			_, err := f.SetRate(core.Rate{Calls: 0, Per: time.Second}, t0)
			require.ErrorIs(t, err, core.ErrInvalidRate)
			_, err = f.SetRate(core.Rate{Calls: 1, Per: -time.Second}, t0)
			require.ErrorIs(t, err, core.ErrInvalidRate)
			require.Equal(t, core.PerSecond(3), f.Rate())
		}
	})

	t.Run("StrictKeepsHistory", func(t *testing.T) {
		t.Parallel()
		f := newFSM(t, core.PerSecond(3), core.WithMode(core.ModeSlidingWindow))
		f.SetTarget("a", t0)
		for i := 1; i <= 4; i++ {
			f.Enqueue(i, t0)
		}
		eff, err := f.SetRate(core.PerSecond(2), t0.Add(500*time.Millisecond))
		require.NoError(t, err)
		require.Empty(t, eff.Deliver, "3 deliveries in the last second already exceed the new 2")
		require.Equal(t, core.TimerStartOnce, eff.Timer)
		require.Equal(t, 500*time.Millisecond, eff.TimerAfter)
	})
}

func TestFSMOverflow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		policy   core.Overflow
		queue    []int
		rejected []int
		dropped  []int
	}{
		{name: "Reject", policy: core.OverflowReject, queue: []int{1, 2}, rejected: []int{3}},
		{name: "DropNewest", policy: core.OverflowDropNewest, queue: []int{1, 2}, dropped: []int{3}},
		{name: "DropOldest", policy: core.OverflowDropOldest, queue: []int{2, 3}, dropped: []int{1}},
	}
	for _, tt := range tests {
		for _, mode := range []core.Mode{core.ModeTimer, core.ModeSlidingWindow, core.ModeTokenBucket} {
			t.Run(tt.name+"/"+mode.String(), func(t *testing.T) {
				t.Parallel()
				f := newFSM(t, core.PerSecond(1), core.WithMode(mode),
					core.WithMaxQueue(2), core.WithOverflow(tt.policy))
				f.Enqueue(1, t0)
				f.Enqueue(2, t0)
				eff := f.Enqueue(3, t0)
				require.Equal(t, tt.rejected, copyInts(eff.Rejected))
				require.Equal(t, tt.dropped, copyInts(eff.Dropped))
				st := f.Stats()
				require.Equal(t, uint64(len(tt.rejected)), st.Rejected)
				require.Equal(t, uint64(len(tt.dropped)), st.Dropped)
				require.Equal(t, 2, st.Queued)
				eff = f.SetTarget("a", t0)
				require.Equal(t, tt.queue[:1], copyInts(eff.Deliver), "at 1/s one goes now")
				eff = f.Tick(t0.Add(time.Second))
				require.Equal(t, tt.queue[1:], copyInts(eff.Deliver))
			})
		}
	}
}

func TestFSMStrictModes(t *testing.T) {
	t.Parallel()

	t.Run("SlidingWindowBurstsThenWaits", func(t *testing.T) {
		t.Parallel()
		f := newFSM(t, core.PerSecond(3), core.WithMode(core.ModeSlidingWindow))
		f.SetTarget("a", t0)
		var got []int
		for i := 1; i <= 7; i++ {
			eff := f.Enqueue(i, t0.Add(time.Duration(i)*100*time.Millisecond))
			got = append(got, eff.Deliver...)
			if i == 4 {
				require.Equal(t, core.TimerStartOnce, eff.Timer)
				require.Equal(t, 700*time.Millisecond, eff.TimerAfter, "1 went at 100ms, so 4 may go at 1.1s")
				require.Equal(t, core.StateActive, eff.To)
			} else if i > 4 {
				require.Equal(t, core.TimerNone, eff.Timer, "the wake-up time does not move")
			}
		}
		require.Equal(t, []int{1, 2, 3}, got)
		eff := f.Tick(t0.Add(1100 * time.Millisecond))
		require.Equal(t, []int{4}, eff.Deliver)
		require.Equal(t, core.TimerStartOnce, eff.Timer)
		require.Equal(t, 100*time.Millisecond, eff.TimerAfter)
	})

	t.Run("TokenBucketPaces", func(t *testing.T) {
		t.Parallel()
		f := newFSM(t, core.PerSecond(4), core.WithMode(core.ModeTokenBucket), core.WithBurst(2))
		f.SetTarget("a", t0)
		var got []int
		for i := 1; i <= 5; i++ {
			got = append(got, f.Enqueue(i, t0).Deliver...)
		}
		require.Equal(t, []int{1, 2}, got, "burst of 2")
		require.Equal(t, core.StateActive, f.State())
		eff := f.Tick(t0.Add(250 * time.Millisecond))
		require.Equal(t, []int{3}, eff.Deliver)
		require.Equal(t, core.TimerStartOnce, eff.Timer)
		require.Equal(t, 250*time.Millisecond, eff.TimerAfter)
	})

	t.Run("QueueEmptiesToIdle", func(t *testing.T) {
		t.Parallel()
		f := newFSM(t, core.PerSecond(1), core.WithMode(core.ModeSlidingWindow))
		f.SetTarget("a", t0)
		require.Equal(t, []int{1}, copyInts(f.Enqueue(1, t0).Deliver))
		require.Equal(t, core.StateIdle, f.State(), "no timer is needed when nothing waits")
		eff := f.Enqueue(2, t0)
		require.Equal(t, core.StateActive, eff.To)
		eff = f.SetTarget("", t0)
		require.Equal(t, core.TimerStop, eff.Timer)
		require.Equal(t, core.StateIdle, eff.To)
		eff = f.SetTarget("b", t0.Add(2*time.Second))
		require.Equal(t, []int{2}, copyInts(eff.Deliver))
		require.Equal(t, "b", eff.Target)
		require.Equal(t, core.StateIdle, eff.To)
	})
}

func TestNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, "idle", core.StateIdle.String())
	require.Equal(t, "active", core.StateActive.String())
	require.Equal(t, "State(0)", core.State(0).String())
	require.Equal(t, "3/1s", core.PerSecond(3).String())
	for _, s := range []string{"timer", "sliding_window", "token_bucket"} {
		m, err := core.ParseMode(s)
		require.NoError(t, err)
		require.Equal(t, s, m.String())
	}
	_, err := core.ParseMode("fast")
	require.ErrorIs(t, err, core.ErrInvalidOption)
	require.Equal(t, "drop_oldest", core.OverflowDropOldest.String())
	require.Equal(t, "start_once", core.TimerStartOnce.String())
}
