package pulling_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/pulling"
)

// BenchmarkState measures the pure state: one hand-out and one confirmation
// per item, with w workers asking in turn.
func BenchmarkState(b *testing.B) {
	for _, workers := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			b.ReportAllocs()
			s, err := pulling.NewState[int](pulling.DefaultStateConfig())
			if err != nil {
				b.Fatal(err)
			}
			now := time.Unix(0, 0)
			ids := make([]pulling.WorkerID, workers)
			for i := range ids {
				ids[i] = pulling.WorkerID(fmt.Sprintf("w%d", i))
				s.Register(ids[i], 1, now)
			}
			eff, err := s.StartEpic(-1, now)
			if err != nil || eff.Fetch == 0 {
				b.Fatal(err, eff)
			}
			batch := make([]int, pulling.DefaultBatchSize)
			s.Fetched(1, batch, nil, now)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w := ids[i%workers]
				eff := s.Request(w, 1, now)
				for eff.Fetch > 0 || len(eff.Deliver) > 0 {
					for _, d := range eff.Deliver {
						s.Done(d.Worker, d.ID, "", 0, now)
					}
					if eff.Fetch > 0 {
						eff = s.Fetched(1, batch, nil, now)
						continue
					}
					break
				}
			}
			b.StopTimer()
			if st := s.Stats(); st.Confirmed != uint64(b.N) || st.InFlight != 0 {
				b.Fatalf("stats %+v after %d items", st, b.N)
			}
		})
	}
}

// BenchmarkMasterLocal measures items per second through a master and local
// workers whose work does nothing: the pattern's own overhead.
func BenchmarkMasterLocal(b *testing.B) {
	for _, window := range []int{1, 8} {
		b.Run(fmt.Sprintf("workers=4/window=%d", window), func(b *testing.B) {
			b.ReportAllocs()
			sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
				return slog.New(slog.DiscardHandler)
			}))
			defer sys.Shutdown()
			props, err := pulling.MasterProps[int]()
			if err != nil {
				b.Fatal(err)
			}
			master := sys.Root.Spawn(props)
			for range 4 {
				wp, err := pulling.AsyncWorkerProps(master, func(_ context.Context, _ int, done func(error)) { done(nil) },
					pulling.WithWindow(window))
				if err != nil {
					b.Fatal(err)
				}
				sys.Root.Spawn(wp)
			}
			items := make([]int, b.N)
			b.ResetTimer()
			st, err := pulling.Run(context.Background(), sys.Root, master, pulling.SliceEpic(items))
			if err != nil || st.Confirmed != uint64(b.N) {
				b.Fatalf("%v %+v", err, st)
			}
		})
	}
}
