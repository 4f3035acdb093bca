package master_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// benchRun is one end-to-end run: submitters keep a window of Work in
// flight each, no-op workers pull windows of work, and the run ends when
// every result has been published.
type benchRun struct {
	total    int
	next     atomic.Int64 // next job number to submit
	sentAt   []atomic.Int64
	mu       sync.Mutex // guards ackLat
	ackLat   []time.Duration
	resLat   []time.Duration // written by the master's goroutine only
	results  atomic.Int64
	finished chan struct{}
}

// submitter sends window Works and one more after each Ack.
type submitter struct {
	run    *benchRun
	master *actor.PID
	window int
	lat    []time.Duration
}

func (s *submitter) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		for range s.window {
			s.sendNext(c)
		}
	case *messages.Ack:
		i, _ := strconv.Atoi(m.GetWorkId()[1:])
		s.lat = append(s.lat, time.Duration(time.Now().UnixNano()-s.run.sentAt[i].Load()))
		s.sendNext(c)
	case *messages.WorkRejected:
		panic("rejected: " + m.GetReason())
	case *actor.Stopping:
		s.run.mu.Lock()
		s.run.ackLat = append(s.run.ackLat, s.lat...)
		s.run.mu.Unlock()
	}
}

func (s *submitter) sendNext(c actor.Context) {
	i := s.run.next.Add(1) - 1
	if int(i) >= s.run.total {
		return
	}
	s.run.sentAt[i].Store(time.Now().UnixNano())
	c.Request(s.master, &messages.Work{WorkId: "j" + strconv.Itoa(int(i)), JobType: "noop", Payload: []byte("x")})
}

// benchWorker runs each Work at once (a no-op) and asks for the next window
// when the previous one has been served or on WorkIsReady; it does not wait
// for the Ack of its WorkIsDone to pull more.
type benchWorker struct {
	id       string
	master   *actor.PID
	window   int
	awaiting int // works still expected from the last request
}

func (w *benchWorker) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		c.Request(w.master, &messages.RegisterWorker{WorkerId: w.id, Worker: pids.Wire(c.Self())})
		w.ask(c)
	case *messages.WorkIsReady:
		w.ask(c)
	case *messages.Work:
		c.Request(w.master, &messages.WorkIsDone{WorkerId: w.id, WorkId: m.GetWorkId(), Result: m.GetPayload()})
		w.served(c, 1)
	case *messages.WorkBundle:
		done := make([]*messages.WorkIsDone, len(m.GetWorks()))
		for i, work := range m.GetWorks() {
			done[i] = &messages.WorkIsDone{WorkId: work.GetWorkId(), Result: work.GetPayload()}
		}
		c.Request(w.master, &messages.WorkIsDoneBatch{WorkerId: w.id, Done: done})
		w.served(c, len(done))
	}
}

func (w *benchWorker) served(c actor.Context, n int) {
	w.awaiting -= n
	if w.awaiting <= 0 {
		w.ask(c)
	}
}

func (w *benchWorker) ask(c actor.Context) {
	w.awaiting = w.window
	c.Request(w.master, &messages.WorkerRequestsWork{WorkerId: w.id, Worker: pids.Wire(c.Self()), Capacity: int32(w.window), Bundles: true})
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

// BenchmarkMasterEndToEnd measures jobs/s through one master on the SQLite
// journal (fsync on): submit, durable ack, hand out, no-op execution,
// durable completion, result published. Each b.N is one job.
func BenchmarkMasterEndToEnd(b *testing.B) {
	if testing.Short() {
		b.Skip("benchmark uses a real SQLite file with fsync")
	}
	cases := []struct {
		journal                               string
		submitters, window, workers, capacity int
		await                                 bool
	}{
		{"sqlite", 1, 1, 1, 1, false},     // light load: latency
		{"sqlite", 1, 1, 1, 1, true},      // the same, awaiting WorkStarted
		{"sqlite", 64, 1, 8, 32, false},   // the 64 concurrent submitters
		{"sqlite", 64, 8, 8, 64, false},   // frontends with a window each
		{"sqlite", 64, 8, 8, 64, true},    // the same, awaiting WorkStarted
		{"sqlite", 256, 4, 16, 64, false}, // heavy
		{"memory", 64, 8, 8, 64, false},   // the master's own cost, no disk
	}
	for _, tc := range cases {
		name := fmt.Sprintf("journal=%s/submitters=%d/window=%d/workers=%d/capacity=%d/await=%t",
			tc.journal, tc.submitters, tc.window, tc.workers, tc.capacity, tc.await)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var j persistence.Journal
			var err error
			if tc.journal == "memory" {
				j = journal.NewMemory()
			} else {
				var sj *journal.SQLite
				sj, err = journal.OpenSQLite(filepath.Join(b.TempDir(), "journal.db"))
				require.NoError(b, err)
				j = sj
			}
			defer func() { _ = j.Close() }()
			sys := testkit.NewSystem(b, testkit.WithDiscardLogs())
			run := &benchRun{total: b.N, sentAt: make([]atomic.Int64, b.N), finished: make(chan struct{})}
			pub := master.PublisherFunc(func(r *messages.WorkResult) {
				i, _ := strconv.Atoi(r.GetWorkId()[1:])
				run.resLat = append(run.resLat, time.Duration(time.Now().UnixNano()-run.sentAt[i].Load()))
				if run.results.Add(1) == int64(run.total) {
					close(run.finished)
				}
			})
			m := sys.Root.Spawn(mustProps(b, j, master.WithPublisher(pub), master.WithLogger(discardLogger()),
				master.WithAwaitStarted(tc.await)))
			_, err = sys.Root.RequestFuture(m, &messages.GetMasterStatus{}, time.Minute).Result()
			require.NoError(b, err)
			for i := range tc.workers {
				sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
					return &benchWorker{id: fmt.Sprintf("w%d", i), master: m, window: tc.capacity}
				}))
			}
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime()
			var subs []*actor.PID
			for range tc.submitters {
				subs = append(subs, sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
					return &submitter{run: run, master: m, window: tc.window}
				})))
			}
			select {
			case <-run.finished:
			case <-time.After(5*time.Minute + time.Duration(b.N)*time.Millisecond):
				b.Fatalf("only %d of %d results after the timeout", run.results.Load(), b.N)
			}
			elapsed, cpu := time.Since(start), cpuTime()-cpu0
			b.StopTimer()
			for _, s := range subs {
				_ = sys.Root.StopFuture(s).Wait()
			}
			_ = sys.Root.StopFuture(m).Wait()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/job")
			b.ReportMetric(float64(percentile(run.ackLat, 0.5).Microseconds()), "ack-p50-µs")
			b.ReportMetric(float64(percentile(run.ackLat, 0.99).Microseconds()), "ack-p99-µs")
			b.ReportMetric(float64(percentile(run.resLat, 0.5).Microseconds()), "result-p50-µs")
		})
	}
}

// cpuTime is the CPU time (user + system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
