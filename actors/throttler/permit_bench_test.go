package throttler_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/throttler"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// BenchmarkGrantPermits is the throttler's decision for one request of 10
// permits, granted at once (the new period's vouchers), with the event that
// records them: PermitCore's Request and Tick.
func BenchmarkGrantPermits(b *testing.B) {
	c, err := throttler.NewPermitCore[int]("square", throttler.PerSecond(10), false)
	if err != nil {
		b.Fatal(err)
	}
	now := t0
	c.Serve(now)
	b.ReportAllocs()
	for b.Loop() {
		if st := c.Request(now, 1, 10); len(st.Grants) != 1 || len(st.Grants[0].Permits) != 10 {
			b.Fatalf("granted %v", st.Grants)
		}
		now = now.Add(time.Second)
		c.Tick(now)
	}
}

// BenchmarkPermitRoundTrip is one permit request answered by a throttler
// actor at an unlimited rate, the grant sent once its event is durable in
// the journal (memory, or SQLite with its group commit's fsync).
func BenchmarkPermitRoundTrip(b *testing.B) {
	for _, kind := range []string{"memory", "sqlite"} {
		b.Run("journal="+kind, func(b *testing.B) {
			var j persistence.Journal
			if kind == "sqlite" {
				var err error
				if j, err = journal.OpenSQLite(filepath.Join(b.TempDir(), "j.db")); err != nil {
					b.Fatal(err)
				}
			} else {
				j = journal.NewMemory()
			}
			defer func() { _ = j.Close() }()
			sys := testkit.NewSystem(b)
			props, err := throttler.PermitThrottlerProps(j, "square", throttler.Rate{Calls: throttler.MaxStrictCalls, Per: time.Millisecond}, false,
				throttler.WithPermitLogger(sys.Logger()))
			if err != nil {
				b.Fatal(err)
			}
			thr := sys.Root.Spawn(props)
			got := make(chan struct{}, 1)
			pool := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
				if _, ok := c.Message().(*messages.PermitGrant); ok {
					got <- struct{}{}
				}
			}))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				sys.Root.RequestWithCustomSender(thr, &messages.PermitRequest{JobType: "square", Want: 1, Pool: 1}, pool)
				<-got
			}
			b.StopTimer()
			_ = sys.Root.StopFuture(thr).Wait()
		})
	}
}
