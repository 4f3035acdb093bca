package master_test

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// loadGate is a real journal whose Loads, once gated, wait for their ctx:
// a journal read that does not answer.
type loadGate struct {
	persistence.Journal
	gated   atomic.Bool
	entered chan struct{} // one send per gated Load
}

func (j *loadGate) Load(ctx context.Context, stream string, fromSeq int64, fn func(persistence.Event) error) error {
	if j.gated.Load() {
		j.entered <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}
	return j.Journal.Load(ctx, stream, fromSeq, fn)
}

// stacksIn returns the stacks of the goroutines that run fn.
func stacksIn(fn string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			out = append(out, g)
		}
	}
	return out
}

// Issue 34 item 4: the master joins its result-feed reads when it stops,
// also one waiting on a journal read: none outlives it (the goroutine-leak
// check of cluster/node's TestClusterTLS found one).
func TestMasterStopJoinsItsFeedReads(t *testing.T) {
	clk := clock.NewManual(t0)
	mem := journal.NewMemory(journal.WithClock(clk))
	t.Cleanup(func() { _ = mem.Close() })
	j := &loadGate{Journal: mem, entered: make(chan struct{}, 1)}
	sys := testkit.NewSystem(t)
	front := testkit.NewProbe(t, sys)
	// A journal timeout longer than the test: only the stop ends the read.
	props, err := master.Props(j, master.WithLeaseTTL(0), master.WithClock(clk), master.WithJournalTimeout(time.Hour))
	require.NoError(t, err)
	m := sys.Root.Spawn(props)
	front.Send(m, &messages.Work{WorkId: "a", JobType: "square", Payload: []byte("2")})
	front.ExpectMsg(&messages.Ack{WorkId: "a"}, testkit.Timeout())
	require.NoError(t, sys.Root.StopFuture(m).Wait())
	// The next master's in-memory tail starts at the durable event, so a
	// read from the start goes to the journal.
	m = sys.Root.Spawn(props)
	front.Send(m, &messages.Work{WorkId: "b", JobType: "square", Payload: []byte("3")})
	front.ExpectMsg(&messages.Ack{WorkId: "b"}, testkit.Timeout()) // recovered

	j.gated.Store(true)
	front.Request(m, &messages.ReadResults{AfterSeq: 0, WaitMs: time.Hour.Milliseconds()})
	select {
	case <-j.entered:
	case <-time.After(testkit.Timeout()):
		t.Fatal("the feed read did not reach the journal")
	}
	require.NoError(t, sys.Root.StopFuture(m).Wait())
	require.Empty(t, stacksIn("(*loadGate).Load"), "a feed read outlived its master")
}

// Issue 34 item 4: the master watches the reader of a held read that asks
// for it (watch_reader) and drops its reads, unanswered, once it
// terminates: its slots are free at once, not when the reads' waits end.
func TestHeldFeedReadsEndWithTheirReader(t *testing.T) {
	t.Parallel()
	b := setup(t) // a manual clock: no read ends by its wait
	reader := testkit.NewProbe(t, b.sys)
	// More held reads than the master has slots (256): the reads beyond
	// them are turned away at once, the others held.
	const reads, slots = 300, 256
	for range reads {
		reader.Request(b.master, &messages.ReadResults{WaitMs: time.Hour.Milliseconds(), WatchReader: true})
	}
	for _, m := range reader.ReceiveN(reads-slots, testkit.Timeout()) {
		require.Contains(t, m.(*messages.ResultsPage).GetError(), "result-feed reads in flight", "a held read was answered")
	}
	other := testkit.NewProbe(t, b.sys)
	other.Request(b.master, &messages.ReadResults{})
	require.Contains(t, testkit.ExpectMsgType[*messages.ResultsPage](other, testkit.Timeout()).GetError(), "in flight")

	require.NoError(t, b.sys.Root.StopFuture(reader.PID()).Wait())
	require.Eventually(t, func() bool {
		other.Request(b.master, &messages.ReadResults{})
		return testkit.ExpectMsgType[*messages.ResultsPage](other, testkit.Timeout()).GetError() == ""
	}, testkit.Timeout(), 10*time.Millisecond, "the reads of a reader that stopped still hold the master's slots")

	// A read whose reader stays is answered as before.
	other.Request(b.master, &messages.ReadResults{WaitMs: time.Hour.Milliseconds(), WatchReader: true})
	b.submit(t, "a")
	b.register(t, b.worker, "w1")
	require.Len(t, b.take(t, 1), 1)
	b.worker.Send(b.master, &messages.WorkIsDone{WorkerId: "w1", WorkId: "a", Result: []byte("4")})
	page := testkit.ExpectMsgType[*messages.ResultsPage](other, testkit.Timeout())
	require.Len(t, page.GetEntries(), 1)
	require.Equal(t, "a", page.GetEntries()[0].GetWorkId())
}
