package frontend_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/journal"
)

// Issue 34 item 4: a held feed read whose reader left (its ctx ended) frees
// its slot at the master at once, instead of holding it until the read's
// wait ends (up to 5 minutes): abandoned long polls must not starve the
// other readers.
func TestAbandonedFeedReadsFreeTheirSlots(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	mem := journal.NewMemory()
	t.Cleanup(func() { _ = mem.Close() })
	// A manual clock that never moves: a held read ends only when its
	// reader goes (or the master stops), never by its wait.
	props, err := master.Props(mem, master.WithLeaseTTL(0), master.WithClock(clock.NewManual(time.Unix(1_700_000_000, 0))))
	require.NoError(t, err)
	client, err := frontend.NewClient(sys, route.Fixed(sys.Root.Spawn(props)), frontend.WithAskTimeout(testkit.Timeout()))
	require.NoError(t, err)

	// Take every slot: reads held an hour each, until one is turned away.
	ctx, leave := context.WithCancel(context.Background())
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		busy int
		errs []error
	)
	full := make(chan struct{})
	var once sync.Once
	const readers = 400 // more than the master's 256 slots
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := client.ReadFeed(ctx, frontend.Cursor{}, 10, time.Hour)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && strings.Contains(err.Error(), "result-feed reads in flight"):
				busy++
				once.Do(func() { close(full) })
			case errors.Is(err, context.Canceled):
			default:
				errs = append(errs, err)
			}
		}()
	}
	select {
	case <-full:
	case <-time.After(testkit.Timeout()):
		leave()
		wg.Wait()
		t.Fatalf("no read was turned away: the test needs the master's slots full (errors: %v)", errs)
	}
	// Every reader leaves.
	leave()
	wg.Wait()
	require.Empty(t, errs, "a held read ended otherwise than by its reader leaving")
	require.Positive(t, busy)

	// Their slots are free again: a new read is served, not turned away.
	var last error
	if !assert.Eventually(t, func() bool {
		_, last = client.ReadFeed(context.Background(), frontend.Cursor{}, 10, 0)
		return last == nil
	}, testkit.Timeout(), 20*time.Millisecond) {
		t.Fatalf("the reads of readers that left still hold the master's slots: %v", last)
	}
}
