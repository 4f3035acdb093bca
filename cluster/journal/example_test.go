package journal_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/journal"
)

// A master recovers its stream, appends, and is fenced once a newer
// activation acquires the stream.
func Example() {
	dir, err := os.MkdirTemp("", "journal-example")
	if err != nil {
		panic(err)
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			panic(err)
		}
	}()
	ctx := context.Background()

	j, err := journal.OpenSQLite(filepath.Join(dir, "journal.db"))
	if err != nil {
		panic(err)
	}
	defer func() {
		if err := j.Close(); err != nil {
			panic(err) // the journal did not shut down cleanly
		}
	}()

	epoch, last, _ := j.AcquireEpoch(ctx, "master-0")
	fmt.Println("first activation: epoch", epoch, "last seq", last)
	err = j.Append(ctx, "master-0", epoch, []persistence.Event{
		{Seq: last + 1, Msg: wrapperspb.String("work-1 accepted")},
		{Seq: last + 2, Msg: wrapperspb.String("work-2 accepted")},
	})
	fmt.Println("append:", err)

	// A second activation takes over and replays the stream.
	epoch2, last2, _ := j.AcquireEpoch(ctx, "master-0")
	_ = j.Load(ctx, "master-0", 1, func(e persistence.Event) error {
		fmt.Println("replay", e.Seq, e.Msg.(*wrapperspb.StringValue).GetValue())
		return nil
	})
	fmt.Println("second activation: epoch", epoch2, "last seq", last2)

	// The first one is fenced.
	err = j.Append(ctx, "master-0", epoch, []persistence.Event{{Seq: 3, Msg: wrapperspb.String("late")}})
	fmt.Println("old epoch fenced:", errors.Is(err, persistence.ErrFenced))

	// Asynchronous appends complete in call order.
	done := make(chan error, 2)
	j.AppendAsync("master-0", epoch2, []persistence.Event{{Seq: 3, Msg: wrapperspb.String("work-3 accepted")}}, func(err error) { done <- err })
	j.AppendAsync("master-0", epoch2, []persistence.Event{{Seq: 4, Msg: wrapperspb.String("work-4 accepted")}}, func(err error) { done <- err })
	fmt.Println("async:", <-done, <-done)
	// Output:
	// first activation: epoch 1 last seq 0
	// append: <nil>
	// replay 1 work-1 accepted
	// replay 2 work-2 accepted
	// second activation: epoch 2 last seq 2
	// old epoch fenced: true
	// async: <nil> <nil>
}
