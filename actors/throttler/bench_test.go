package throttler_test

import (
	"cmp"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/throttler"
)

// unlimited is a rate no benchmark reaches, per mode: the timer mode's
// vouchers never run out, the strict modes' windows are 1µs long while the
// benchmarks' clock moves 1µs per message.
func unlimited(mode throttler.Mode) throttler.Rate {
	if mode == throttler.ModeTimer {
		return throttler.Rate{Calls: 1 << 62, Per: time.Hour}
	}
	return throttler.Rate{Calls: 1000, Per: time.Microsecond}
}

// BenchmarkFSMEnqueue is the pure per-message cost of the state machine at
// an unlimited rate.
func BenchmarkFSMEnqueue(b *testing.B) {
	for _, mode := range allModes {
		b.Run("mode="+mode.String(), func(b *testing.B) {
			f, err := throttler.NewFSM[string, int](unlimited(mode), throttler.WithMode(mode))
			if err != nil {
				b.Fatal(err)
			}
			f.SetTarget("a", t0)
			now := t0
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				now = now.Add(time.Microsecond)
				if eff := f.Enqueue(i, now); len(eff.Deliver) != 1 {
					b.Fatalf("message %d not delivered at once", i)
				}
			}
		})
	}
}

// counter is a target that signals once it has received n messages.
type counter struct {
	mu   sync.Mutex
	n    int
	want int
	done chan struct{}
	at   []time.Time // arrival times, if recording
	rec  bool
}

func newCounter(want int, rec bool) *counter {
	return &counter{want: want, done: make(chan struct{}), rec: rec}
}

func (c *counter) receive(ctx actor.Context) {
	if _, ok := ctx.Message().(int); !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	if c.rec {
		c.at = append(c.at, time.Now())
	}
	if c.n == c.want {
		close(c.done)
	}
}

// BenchmarkActor is the cost per message through a throttler actor at an
// unlimited rate, against sending straight to the target (mode=direct).
func BenchmarkActor(b *testing.B) {
	if testing.Short() {
		b.Skip("actor benchmarks skipped in -short mode")
	}
	for _, mode := range append([]throttler.Mode{0}, allModes...) {
		name := "direct"
		if mode != 0 {
			name = mode.String()
		}
		b.Run("mode="+name, func(b *testing.B) {
			sys := testkit.NewSystem(b)
			c := newCounter(b.N, false)
			target := sys.Root.Spawn(actor.PropsFromFunc(c.receive))
			to := target
			if mode != 0 {
				props, err := throttler.Props(unlimited(mode), throttler.WithMode(mode),
					throttler.WithTarget(target), throttler.WithMaxQueue(1<<30))
				if err != nil {
					b.Fatal(err)
				}
				to = sys.Root.Spawn(props)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				sys.Root.Send(to, i)
			}
			<-c.done
		})
	}
}

// BenchmarkAccuracy measures, on the wall clock, the rate achieved under a
// backlog over 10 periods of 100 calls per 200ms (or per 1s), as the error against the
// configured rate in percent (rate_err_%; negative = slower).
func BenchmarkAccuracy(b *testing.B) {
	if testing.Short() {
		b.Skip("accuracy benchmarks skipped in -short mode")
	}
	const periods = 10
	for _, tc := range []struct {
		name string
		per  time.Duration // default 200ms
		opts []throttler.Option
	}{
		{name: "mode=timer", opts: []throttler.Option{throttler.WithMode(throttler.ModeTimer)}},
		{name: "mode=sliding_window", opts: []throttler.Option{throttler.WithMode(throttler.ModeSlidingWindow)}},
		{name: "mode=sliding_window/per=1s", per: time.Second, opts: []throttler.Option{throttler.WithMode(throttler.ModeSlidingWindow)}},
		{name: "mode=token_bucket/burst=1", opts: []throttler.Option{throttler.WithMode(throttler.ModeTokenBucket)}},
		{name: "mode=token_bucket/burst=1/per=1s", per: time.Second, opts: []throttler.Option{throttler.WithMode(throttler.ModeTokenBucket)}},
		{name: "mode=token_bucket/burst=2", opts: []throttler.Option{throttler.WithMode(throttler.ModeTokenBucket), throttler.WithBurst(2)}},
		{name: "mode=token_bucket/burst=10", opts: []throttler.Option{throttler.WithMode(throttler.ModeTokenBucket), throttler.WithBurst(10)}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			rate := throttler.Rate{Calls: 100, Per: cmp.Or(tc.per, 200*time.Millisecond)}
			var errSum float64
			for range b.N {
				sys := testkit.NewSystem(b)
				total := (periods + 1) * rate.Calls
				c := newCounter(total, true)
				target := sys.Root.Spawn(actor.PropsFromFunc(c.receive))
				props, err := throttler.Props(rate, append(tc.opts, throttler.WithTarget(target))...)
				if err != nil {
					b.Fatal(err)
				}
				thr := sys.Root.Spawn(props)
				for i := range total {
					sys.Root.Send(thr, i)
				}
				<-c.done
				c.mu.Lock()
				elapsed := c.at[periods*rate.Calls].Sub(c.at[0])
				c.mu.Unlock()
				achieved := float64(periods*rate.Calls) / elapsed.Seconds()
				configured := float64(rate.Calls) / rate.Per.Seconds()
				errSum += (achieved/configured - 1) * 100
				sys.Root.Stop(thr)
			}
			b.ReportMetric(errSum/float64(b.N), "rate_err_%")
		})
	}
}
