package adaptive_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/foreman-actors/foreman/actors/adaptive"
	"github.com/foreman-actors/foreman/actors/adaptive/sim"
)

// BenchmarkPolicyObserve is the cost of one decision: one completion folded
// into each policy's state.
func BenchmarkPolicyObserve(b *testing.B) {
	for _, kind := range adaptive.PolicyKinds() {
		b.Run("policy="+kind.String(), func(b *testing.B) {
			p, err := adaptive.NewPolicy(kind, adaptive.Config{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			now := epoch
			for b.Loop() {
				now = now.Add(time.Millisecond)
				l := p.Limit()
				p.Observe(adaptive.Observation{Arrival: now.Add(-10 * time.Millisecond), Started: now.Add(-5 * time.Millisecond), InFlight: l, Limit: l, Queued: 3, CPU: -1}, now)
			}
		})
	}
}

// BenchmarkCorePushDone is the scheduler's bookkeeping per job: a push and
// a completion through the queue and the default policy.
func BenchmarkCorePushDone(b *testing.B) {
	p, err := adaptive.NewHillClimb(adaptive.Config{})
	if err != nil {
		b.Fatal(err)
	}
	c := adaptive.NewCore[int](p)
	var running []adaptive.Ticket
	now := epoch
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		_, ss := c.Push(now, 1)
		for _, s := range ss {
			running = append(running, s.Ticket)
		}
		if len(running) > 0 {
			t := running[0]
			running = running[1:]
			for _, s := range c.Done(now, t, -1) {
				running = append(running, s.Ticket)
			}
		}
	}
}

// BenchmarkLimiter is one Acquire and Release, uncontended and with
// GOMAXPROCS goroutines contending.
func BenchmarkLimiter(b *testing.B) {
	for _, parallel := range []bool{false, true} {
		b.Run(fmt.Sprintf("parallel=%v", parallel), func(b *testing.B) {
			l, err := adaptive.NewLimiter(adaptive.WithCustomPolicy(adaptive.Fixed(4)))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			if !parallel {
				for b.Loop() {
					p, _ := l.Acquire(ctx)
					p.Release()
				}
				return
			}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p, _ := l.Acquire(ctx)
					p.Release()
				}
			})
		})
	}
}

// BenchmarkSimulate300s is a 300 s simulated run of the congested resource
// (about 120 000 jobs) with the default policy: the cost of one line of the
// evaluation.
func BenchmarkSimulate300s(b *testing.B) {
	if testing.Short() {
		b.Skip("long")
	}
	for b.Loop() {
		p, _ := adaptive.NewHillClimb(adaptive.Config{})
		sim.Run(sim.Scenario{Service: sim.Congested{K: 20}, Load: sim.Backlog{Depth: 100}, Work: 50 * time.Millisecond, WorkJitter: 0.3, Duration: 300 * time.Second, Seed: 1}, p)
	}
}
