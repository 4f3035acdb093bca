package pulling_test

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/pulling"
)

// A master over an Epic of names and two workers that greet them.
func Example() {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	defer sys.Shutdown()

	props, err := pulling.MasterProps[string](pulling.WithBatchSize(2))
	if err != nil {
		panic(err)
	}
	master := sys.Root.Spawn(props)

	var mu sync.Mutex
	var greetings []string
	for range 2 {
		worker, err := pulling.WorkerProps(master, func(_ context.Context, name string) error {
			mu.Lock()
			defer mu.Unlock()
			greetings = append(greetings, "hello "+name)
			return nil
		})
		if err != nil {
			panic(err)
		}
		sys.Root.Spawn(worker)
	}

	epic := pulling.SliceEpic([]string{"ada", "grace", "barbara", "frances", "edsger"})
	stats, err := pulling.Run(context.Background(), sys.Root, master, epic)
	if err != nil {
		panic(err)
	}
	sort.Strings(greetings)
	fmt.Println(strings.Join(greetings, ", "))
	fmt.Printf("confirmed %d, remaining %d\n", stats.Confirmed, stats.Remaining)
	// Output:
	// hello ada, hello barbara, hello edsger, hello frances, hello grace
	// confirmed 5, remaining 0
}
