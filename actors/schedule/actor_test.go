package schedule_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/schedule"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// countingSubmitter passes submissions to a real master and counts them by
// work id (a count above one is a re-fire the master must dedupe).
type countingSubmitter struct {
	next *frontend.Client
	mu   sync.Mutex // guards sent
	sent map[string]int
}

func (s *countingSubmitter) Submit(ctx context.Context, w *messages.Work) error {
	s.mu.Lock()
	s.sent[w.GetWorkId()]++
	s.mu.Unlock()
	return s.next.Submit(ctx, w)
}

type testBundle struct {
	sys *actor.ActorSystem
	j   persistence.Journal
	sub *countingSubmitter
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	j, err := journal.OpenSQLite(filepath.Join(t.TempDir(), "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	props, err := master.Props(j, master.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	m := sys.Root.Spawn(props)
	client, err := frontend.NewClient(sys, route.Fixed(m), frontend.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sys.Root.PoisonFuture(m).Wait()
		sys.Shutdown()
		_ = j.Close()
	})
	return &testBundle{sys: sys, j: j, sub: &countingSubmitter{next: client, sent: map[string]int{}}}
}

func (b *testBundle) spawn(t *testing.T) *actor.PID {
	t.Helper()
	props, err := schedule.Props(b.j, b.sub, schedule.WithLease(300*time.Millisecond), schedule.WithFenceCheck(100*time.Millisecond),
		schedule.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	return b.sys.Root.Spawn(props)
}

func (b *testBundle) ask(t *testing.T, pid *actor.PID, req *messages.ScheduleRequest) *messages.ScheduleReply {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		res, err := b.sys.Root.RequestFuture(pid, req, 2*time.Second).Result()
		switch {
		case err == nil:
			rep := res.(*messages.ScheduleReply)
			if rep.GetCode() != "unavailable" || time.Now().After(deadline) {
				return rep
			}
		case errors.Is(err, actor.ErrDeadLetter):
			return nil // the activation stopped
		case time.Now().After(deadline):
			t.Fatalf("ask %v: %v", req, err)
		}
		time.Sleep(50 * time.Millisecond) // recovering or waiting for the lease
	}
}

// accepted returns the work ids the master journaled as accepted, with
// how often each was.
func (b *testBundle) accepted(t *testing.T) map[string]int {
	t.Helper()
	got := map[string]int{}
	err := b.j.Load(t.Context(), master.DefaultStream, 1, func(ev persistence.Event) error {
		switch m := ev.Msg.(type) {
		case *messages.WorkAccepted:
			got[m.GetWork().GetWorkId()]++
		case *messages.WorksAccepted:
			for _, w := range m.GetWorks() {
				got[w.GetWorkId()]++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSchedulerFailover runs two activations of the scheduler on one real
// SQLite journal: the second waits for the first's lease, takes over when
// the first stops, and between them every tick of an @every 1s schedule is
// accepted by the master exactly once, with no gap.
func TestSchedulerFailover(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.spawn(t)
	add := &messages.ScheduleRequest{Op: "add", Schedule: &messages.Schedule{Name: "beat", Spec: "@every 1s", JobType: "square", Payload: []byte("3"),
		Missed: messages.MissedPolicy_MISSED_POLICY_CATCH_UP, CatchUpMax: 100}}
	if rep := b.ask(t, first, add); rep.GetCode() != "" {
		t.Fatalf("add: %v", rep)
	}
	// A stray activation (as a node with an out-of-date view places one)
	// finds the lease held, fires nothing and gives up.
	stray := b.spawn(t)
	time.Sleep(2500 * time.Millisecond)
	if rep := b.ask(t, stray, &messages.ScheduleRequest{Op: "list"}); rep != nil && rep.GetCode() == "" {
		t.Fatalf("the stray activation served: %v", rep)
	}
	if err := b.sys.Root.StopFuture(first).Wait(); err != nil {
		t.Fatal(err)
	}
	second := b.spawn(t)
	rep := b.ask(t, second, &messages.ScheduleRequest{Op: "list"}) // served once it took over
	if len(rep.GetSchedules()) != 1 {
		t.Fatalf("the successor lists %v", rep)
	}
	time.Sleep(2500 * time.Millisecond)
	rep = b.ask(t, second, &messages.ScheduleRequest{Op: "list"})
	if err := b.sys.Root.StopFuture(second).Wait(); err != nil {
		t.Fatal(err)
	}
	s := rep.GetSchedules()[0].GetSchedule()

	acc := b.accepted(t)
	var ticks []int64
	for id, n := range acc {
		if n != 1 {
			t.Errorf("work %s accepted %d times", id, n)
		}
		tick, err := strconv.ParseInt(strings.TrimPrefix(id, "sched:beat:"), 10, 64)
		if err != nil {
			t.Fatalf("unexpected work id %q", id)
		}
		ticks = append(ticks, tick)
	}
	slices.Sort(ticks)
	if len(ticks) < 4 {
		t.Fatalf("only %d ticks fired in 5 s: %v", len(ticks), ticks)
	}
	for i := 1; i < len(ticks); i++ {
		if ticks[i] != ticks[i-1]+1 {
			t.Fatalf("ticks %v: a gap or a repeat between %d and %d", ticks, ticks[i-1], ticks[i])
		}
	}
	if s.GetFired() < int64(len(ticks))-1 || s.GetSkipped() != 0 {
		t.Fatalf("the scheduler counts fired %d skipped %d; the master accepted %d ticks", s.GetFired(), s.GetSkipped(), len(ticks))
	}
}

// TestSchedulerRefusesBadInput: an invalid schedule is answered with what
// is wrong and nothing is journaled.
func TestSchedulerRefusesBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pid := b.spawn(t)
	rep := b.ask(t, pid, &messages.ScheduleRequest{Op: "add", Schedule: &messages.Schedule{Name: "bad", Spec: "0 61 * * * *", JobType: "square"}})
	if rep.GetCode() != "invalid" || !strings.Contains(rep.GetError(), `minute "61"`) {
		t.Fatalf("reply %v, want invalid naming the minute field", rep)
	}
	if rep := b.ask(t, pid, &messages.ScheduleRequest{Op: "list"}); len(rep.GetSchedules()) != 0 {
		t.Fatalf("listed %v", rep)
	}
}

// gatedJournal holds back the appends that carry a SchedulePaused until
// open is closed: a pause whose write is still under way.
type gatedJournal struct {
	persistence.Journal
	open chan struct{}
}

func (g *gatedJournal) AppendAsync(stream string, epoch int64, events []persistence.Event, done func(error)) {
	for _, ev := range events {
		if _, ok := ev.Msg.(*messages.SchedulePaused); ok {
			go func() {
				<-g.open
				g.Journal.AppendAsync(stream, epoch, events, done)
			}()
			return
		}
	}
	g.Journal.AppendAsync(stream, epoch, events, done)
}

// TestSchedulerAnswersNothingAheadOfTheJournal: a request that records
// nothing (a pause asked again) is answered only once the events persisted
// before it are durable, not at once from the scheduler's memory, which is
// ahead of the journal while the first pause is written (the simulator's
// seed 6000003 with --schedules: that write failed, and the schedule the
// caller was told is paused ran on).
func TestSchedulerAnswersNothingAheadOfTheJournal(t *testing.T) {
	b := setup(t)
	g := &gatedJournal{Journal: b.j, open: make(chan struct{})}
	props, err := schedule.Props(g, b.sub, schedule.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	pid := b.sys.Root.Spawn(props)
	add := &messages.ScheduleRequest{Op: "add", Schedule: &messages.Schedule{Name: "yearly", Spec: "@yearly", JobType: "square"}}
	if rep := b.ask(t, pid, add); rep.GetCode() != "" {
		t.Fatalf("add: %v", rep)
	}
	pause := &messages.ScheduleRequest{Op: "pause", Name: "yearly"}
	first := b.sys.Root.RequestFuture(pid, pause, 10*time.Second)
	time.Sleep(100 * time.Millisecond) // the first pause is being written
	if res, err := b.sys.Root.RequestFuture(pid, pause, 300*time.Millisecond).Result(); err == nil {
		t.Fatalf("the second pause was answered (%v) while the first one's write was under way", res)
	}
	close(g.open)
	if _, err := first.Result(); err != nil {
		t.Fatalf("first pause: %v", err)
	}
	if rep := b.ask(t, pid, pause); rep.GetCode() != "" || !rep.GetSchedules()[0].GetSchedule().GetPaused() {
		t.Fatalf("pause once durable: %v", rep)
	}
}
