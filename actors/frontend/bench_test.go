package frontend_test

import (
	"context"
	"log/slog"
	"strconv"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/messages"
)

// BenchmarkClientSubmit measures one Client.Submit round trip (ask, Ack)
// against an instant in-process master: the frontend's own cost per job.
func BenchmarkClientSubmit(b *testing.B) {
	if testing.Short() {
		b.Skip("benchmark skipped in -short mode")
	}
	b.ReportAllocs()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	defer sys.Shutdown()
	master := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if w, ok := c.Message().(*messages.Work); ok {
			c.Respond(&messages.Ack{WorkId: w.GetWorkId()})
		}
	}))
	client, err := frontend.NewClient(sys, route.Fixed(master))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			if err := client.Submit(ctx, &messages.Work{WorkId: strconv.Itoa(i), JobType: "noop"}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
