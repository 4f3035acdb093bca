package persistence_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/journal/journaltest"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

const stream = "set"

// Commands of the test actor, a set of keys on the runtime. Events are
// wrapperspb.StringValue (the key added).
type (
	add     struct{ key string }
	query   struct{}
	block   struct{ entered, until chan struct{} }
	keysMsg struct{ keys []string }
	// phaseQuery is answered with the runtime's phase, as a StringValue.
	phaseQuery struct{}
	// servingQuery is answered with Recovered(), as a BoolValue: whether
	// the actor would decide (hand out, answer) at this instant.
	servingQuery struct{}
)

// tracking records the highest sequence number the journal has confirmed,
// before the runtime hears of it: anything observed must be at or below it.
// It also counts the Lease calls that reach it.
type tracking struct {
	persistence.Journal
	durable atomic.Int64
	leases  atomic.Int64 // Lease calls made
	granted atomic.Int64 // Lease calls that returned a grant
	epochs  atomic.Int64 // AcquireEpoch calls made
	// afterGrant, when set, runs after a granted Lease call and before
	// its answer returns: a pause of the caller, or an answer that took
	// long.
	afterGrant func()
}

func (t *tracking) Lease(ctx context.Context, s, holder string, ttl time.Duration) (persistence.LeaseState, error) {
	t.leases.Add(1)
	st, err := t.Journal.Lease(ctx, s, holder, ttl)
	if err == nil {
		t.granted.Add(1)
		if t.afterGrant != nil {
			t.afterGrant()
		}
	}
	return st, err
}

func (t *tracking) AcquireEpoch(ctx context.Context, s string) (int64, int64, error) {
	t.epochs.Add(1)
	return t.Journal.AcquireEpoch(ctx, s)
}

func (t *tracking) AppendAsync(s string, epoch int64, events []persistence.Event, done func(error)) {
	last := events[len(events)-1].Seq
	t.Journal.AppendAsync(s, epoch, events, func(err error) {
		if err == nil {
			for {
				cur := t.durable.Load()
				if last <= cur || t.durable.CompareAndSwap(cur, last) {
					break
				}
			}
		}
		done(err)
	})
}

// awayJournal fails reads too while its error is set: with a Faulty's
// FailWrites, a journal that is down (Faulty never fails reads).
type awayJournal struct {
	persistence.Journal
	mu  sync.Mutex
	err error // guarded by mu
}

func (a *awayJournal) fail(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.err = err
}

func (a *awayJournal) down() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

func (a *awayJournal) Load(ctx context.Context, s string, from int64, fn func(persistence.Event) error) error {
	if err := a.down(); err != nil {
		return err
	}
	return a.Journal.Load(ctx, s, from, fn)
}

func (a *awayJournal) LoadSnapshot(ctx context.Context, s string) (persistence.Snapshot, bool, error) {
	if err := a.down(); err != nil {
		return persistence.Snapshot{}, false, err
	}
	return a.Journal.LoadSnapshot(ctx, s)
}

// setActor keeps a decision set (every key persisted) and a visible set
// (keys whose event is durable, changed only in then).
type setActor struct {
	rt         *persistence.Runtime
	track      *tracking
	decided    map[string]int64
	visible    map[string]int64
	violations *atomic.Int64
	recovered  *actor.PID // told "recovered" after each recovery
	resets     *atomic.Int64
	afters     *actor.PID          // told the visible keys after each confirmed append
	handler    persistence.Handler // nil: the actor itself
}

// AfterDurable reports the keys made visible so far, once per confirmed
// append, after its thens.
func (a *setActor) AfterDurable(c actor.Context) {
	if a.afters != nil {
		c.Send(a.afters, &keysMsg{keys: sortedKeys(a.visible)})
	}
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (a *setActor) Reset(snap *persistence.Snapshot) error {
	a.resets.Add(1)
	a.decided, a.visible = map[string]int64{}, map[string]int64{}
	if snap != nil {
		for _, k := range snap.Msg.(*wrapperspb.StringValue).GetValue() {
			a.decided[string(k)], a.visible[string(k)] = snap.Seq, snap.Seq
		}
	}
	return nil
}

func (a *setActor) Replay(ev persistence.Event) error {
	k := ev.Msg.(*wrapperspb.StringValue).GetValue()
	if k == "" {
		return nil // a recovery marker
	}
	a.decided[k], a.visible[k] = ev.Seq, ev.Seq
	return nil
}

// markedSet is a setActor that journals a recovery marker (the key "",
// never added) on every recovery, as a cluster singleton does.
type markedSet struct{ *setActor }

func (markedSet) RecoveryEvent(time.Time) proto.Message { return wrapperspb.String("") }

// Snapshot stores the keys as one string of one-letter keys.
func (a *setActor) Snapshot(int) (proto.Message, bool) {
	var s []byte
	for k := range a.decided {
		if len(k) != 1 {
			return nil, false
		}
		s = append(s, k[0])
	}
	return wrapperspb.String(string(s)), true
}

func (a *setActor) observe(seq int64) {
	if seq > a.track.durable.Load() {
		a.violations.Add(1)
	}
}

func (a *setActor) Receive(c actor.Context) {
	if a.rt.Handle(c) {
		return
	}
	switch m := c.Message().(type) {
	case *actor.Started:
		h := a.handler
		if h == nil {
			h = a
		}
		a.rt.Start(c, h, func(c actor.Context) {
			if a.recovered != nil {
				c.Send(a.recovered, wrapperspb.String("recovered"))
			}
		})
	case *add:
		if !a.rt.Recovered() {
			c.Respond(wrapperspb.String("unavailable"))
			return
		}
		if seq, dup := a.decided[m.key]; dup {
			a.rt.Reply(c.Sender(), wrapperspb.Int64(seq))
			return
		}
		seq := a.rt.LastSeq() + 1
		a.decided[m.key] = seq // applied before Persist, which may snapshot
		a.rt.Persist([]proto.Message{wrapperspb.String(m.key)}, nil)
		a.rt.Persist(nil, func() { // an empty Persist defers
			a.observe(seq)
			a.visible[m.key] = seq
		})
		a.rt.Reply(c.Sender(), wrapperspb.Int64(seq))
	case *query:
		sender := c.Sender()
		a.rt.Defer(func() {
			keys := make([]string, 0, len(a.visible))
			for k, seq := range a.visible {
				a.observe(seq)
				keys = append(keys, k)
			}
			sort.Strings(keys)
			c.Send(sender, &keysMsg{keys: keys})
		})
	case *block:
		if m.entered != nil {
			close(m.entered)
		}
		<-m.until
	case *phaseQuery:
		c.Respond(wrapperspb.String(a.rt.Phase().String()))
	case *servingQuery:
		c.Respond(wrapperspb.Bool(a.rt.Recovered()))
	}
}

type bundle struct {
	sys        *actor.ActorSystem
	mem        *journal.Memory
	faulty     *journaltest.Faulty
	track      *tracking
	clk        *clock.Manual
	client     *testkit.Probe
	events     *testkit.Probe
	violations atomic.Int64
	resets     atomic.Int64
	opts       []persistence.Option
	marked     bool // actors journal a recovery marker (markedSet)
}

func setup(t *testing.T, opts ...persistence.Option) *bundle {
	t.Helper()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	mem := journal.NewMemory(journal.WithClock(clk)) // leases run on the runtime's clock
	t.Cleanup(func() { _ = mem.Close() })
	b := &bundle{sys: testkit.NewSystem(t), mem: mem, clk: clk}
	b.faulty = journaltest.NewFaulty(mem)
	b.track = &tracking{Journal: b.faulty}
	b.client = testkit.NewProbe(t, b.sys)
	b.events = testkit.NewProbe(t, b.sys)
	b.opts = append([]persistence.Option{persistence.WithClock(b.clk)}, opts...)
	return b
}

func (b *bundle) start(t *testing.T) *actor.PID {
	t.Helper()
	rt, err := persistence.New(b.track, stream, b.opts...)
	require.NoError(t, err)
	a := &setActor{rt: rt, track: b.track, violations: &b.violations, recovered: b.events.PID(), resets: &b.resets}
	if b.marked {
		a.handler = markedSet{a}
	}
	return b.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }))
}

func (b *bundle) startRecovered(t *testing.T) *actor.PID {
	t.Helper()
	pid := b.start(t)
	b.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
	return pid
}

func (b *bundle) add(pid *actor.PID, key string) { b.client.Request(pid, &add{key: key}) }

func (b *bundle) keys(t *testing.T, pid *actor.PID) []string {
	t.Helper()
	b.client.Request(pid, &query{})
	return testkit.ExpectMsgType[*keysMsg](b.client, testkit.Timeout()).keys
}

func TestRuntime(t *testing.T) {
	t.Parallel()

	t.Run("ReplyAndThenWaitForDurability", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		pid := b.startRecovered(t)
		b.faulty.HoldWrites()
		b.add(pid, "a")
		b.client.ExpectNoMsg(100 * time.Millisecond) // not durable: no ack
		b.client.Request(pid, &query{})
		b.client.ExpectNoMsg(50 * time.Millisecond) // the query waits too
		require.Equal(t, 1, b.faulty.ReleaseWrites())
		b.client.ExpectMsg(wrapperspb.Int64(1), testkit.Timeout())
		require.Equal(t, []string{"a"}, testkit.ExpectMsgType[*keysMsg](b.client, testkit.Timeout()).keys)
		require.Zero(t, b.violations.Load())
	})

	t.Run("MessagesHandledDuringAWriteShareOneGroupCommit", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		pid := b.startRecovered(t)
		b.faulty.HoldWrites()
		until := make(chan struct{})
		b.client.Send(pid, &block{until: until})
		for i := range 10 {
			b.add(pid, fmt.Sprint(i))
		}
		close(until) // all ten are queued before the runtime's flush
		require.Eventually(t, func() bool { return b.faulty.HeldWrites() == 1 }, testkit.Timeout(), time.Millisecond)
		b.client.ExpectNoMsg(50 * time.Millisecond)
		require.Equal(t, 1, b.faulty.ReleaseWrites(), "ten messages' events in one append")
		require.Len(t, b.client.ReceiveN(10, testkit.Timeout()), 10)
		require.Zero(t, b.violations.Load())
	})

	t.Run("DuplicateWhileInFlightIsRecognisedAndAckedAfterIt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		pid := b.startRecovered(t)
		b.faulty.HoldWrites()
		b.add(pid, "a")
		b.add(pid, "a")
		b.client.ExpectNoMsg(50 * time.Millisecond)
		b.faulty.ReleaseWrites()
		b.client.ExpectMsg(wrapperspb.Int64(1), testkit.Timeout())
		b.client.ExpectMsg(wrapperspb.Int64(1), testkit.Timeout())
		last, err := lastSeq(b.mem)
		require.NoError(t, err)
		require.Equal(t, int64(1), last, "the duplicate journaled nothing")
	})

	t.Run("WriteErrorNeverActsAndRecoversFromTheJournal", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		pid := b.startRecovered(t)
		b.add(pid, "a")
		b.client.ExpectMsg(wrapperspb.Int64(1), testkit.Timeout())
		b.faulty.FailWrites(errors.New("disk full"))
		b.add(pid, "b")
		b.client.ExpectNoMsg(100 * time.Millisecond) // never acked
		// The runtime drops memory and recovers; recovery fails too and
		// is retried on the clock.
		require.Eventually(t, func() bool { return b.clk.Pending() > 0 }, testkit.Timeout(), time.Millisecond)
		b.faulty.FailWrites(nil)
		b.clk.Advance(persistence.DefaultMaxRetryBackoff)
		b.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		require.Equal(t, []string{"a"}, b.keys(t, pid), "b was never durable")
		b.add(pid, "b")
		b.client.ExpectMsg(wrapperspb.Int64(2), testkit.Timeout())
		require.Zero(t, b.violations.Load())
	})

	t.Run("FencedMidBatchStopsWithoutActing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		pid := b.startRecovered(t)
		b.client.Watch(pid)
		b.faulty.HoldWrites()
		b.add(pid, "a")
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
		defer cancel()
		_, _, err := b.mem.AcquireEpoch(ctx, stream) // a newer activation
		require.NoError(t, err)
		b.faulty.ReleaseWrites()
		b.client.ExpectTerminated(pid, testkit.Timeout())
		b.client.ExpectNoMsg(50 * time.Millisecond)
	})

	t.Run("RecoveryProbesTheJournalWhileItIsAway", func(t *testing.T) {
		t.Parallel()
		// Reads and writes fail for 10 s (a database that is down): the
		// runtime probes it at most maxProbeEvery (250 ms) apart, never
		// after a backoff grown to seconds, and recovers at the first
		// probe after its return (issue 34 item 13).
		b := setup(t)
		down := &awayJournal{Journal: b.faulty}
		b.track = &tracking{Journal: down}
		away := errors.New("connection refused")
		down.fail(away)
		b.faulty.FailWrites(away)
		pid := b.start(t)
		b.client.Request(pid, &add{key: "a"})
		b.client.ExpectMsg(wrapperspb.String("unavailable"), testkit.Timeout())
		nextWait := func() time.Duration {
			require.Eventually(t, func() bool { return b.clk.Pending() == 1 }, testkit.Timeout(), time.Millisecond)
			return b.clk.NextDue()[0].Sub(b.clk.Now())
		}
		for start := b.clk.Now(); b.clk.Since(start) < 10*time.Second; {
			wait := nextWait()
			require.LessOrEqual(t, wait, 250*time.Millisecond, "at %v into the outage the next look at the journal is %v away", b.clk.Since(start), wait)
			b.clk.Advance(wait)
		}
		down.fail(nil)
		b.faulty.FailWrites(nil)
		// The probe in flight may find it back already; else the next one.
		require.Eventually(t, func() bool { return b.clk.Pending() == 1 || len(b.events.Queued()) > 0 },
			testkit.Timeout(), time.Millisecond)
		if len(b.events.Queued()) == 0 {
			wait := b.clk.NextDue()[0].Sub(b.clk.Now())
			require.LessOrEqual(t, wait, 250*time.Millisecond, "the journal is back: the next look at it is %v away", wait)
			b.clk.Advance(wait)
		}
		b.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
	})

	t.Run("RecoveryBacksOffWhileTheJournalAnswersButFails", func(t *testing.T) {
		t.Parallel()
		// Reads answer, writes fail: a probe that succeeds does not tell
		// that recovery will, so the backoff still spaces the attempts.
		b := setup(t, persistence.WithRecoveryRetry(time.Second, 4*time.Second))
		b.faulty.FailWrites(errors.New("read-only"))
		pid := b.start(t)
		b.client.Request(pid, &add{key: "a"})
		b.client.ExpectMsg(wrapperspb.String("unavailable"), testkit.Timeout())
		looks := 0
		for start := b.clk.Now(); b.clk.Since(start) < 20*time.Second; looks++ {
			require.Eventually(t, func() bool { return b.clk.Pending() == 1 }, testkit.Timeout(), time.Millisecond)
			b.clk.Advance(b.clk.NextDue()[0].Sub(b.clk.Now()))
		}
		// 1+2+4+4+4+4 s of backoff, each followed by a probe and the
		// attempt it leads to: about a dozen looks, not 80 probes.
		require.LessOrEqual(t, looks, 14, "looks at the journal in 20 s")
		b.faulty.FailWrites(nil)
		for range 3 { // the next look, or the probe and the attempt it leads to
			require.Eventually(t, func() bool { return b.clk.Pending() == 1 || len(b.events.Queued()) > 0 },
				testkit.Timeout(), time.Millisecond)
			if len(b.events.Queued()) > 0 {
				break
			}
			b.clk.Advance(b.clk.NextDue()[0].Sub(b.clk.Now()))
		}
		b.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
	})

	t.Run("RecoversFromSnapshotAndReplay", func(t *testing.T) {
		t.Parallel()
		b := setup(t, persistence.WithSnapshotEvery(3))
		pid := b.startRecovered(t)
		for _, k := range []string{"a", "b", "c", "d"} {
			b.add(pid, k)
			testkit.ExpectMsgType[*wrapperspb.Int64Value](b.client, testkit.Timeout())
		}
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
		defer cancel()
		require.Eventually(t, func() bool {
			snap, ok, err := b.mem.LoadSnapshot(ctx, stream)
			return err == nil && ok && snap.Seq == 3
		}, testkit.Timeout(), time.Millisecond, "a snapshot after three events")
		b.sys.Root.Stop(pid)
		pid = b.startRecovered(t)
		require.Equal(t, []string{"a", "b", "c", "d"}, b.keys(t, pid))
	})

	t.Run("EventsDecidedBeforeAStopAreWritten", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		pid := b.startRecovered(t)
		b.client.Watch(pid)
		entered, until := make(chan struct{}), make(chan struct{})
		b.add(pid, "a") // handled: its flush is queued behind the block
		b.client.Send(pid, &block{entered: entered, until: until})
		<-entered
		b.sys.Root.Stop(pid) // a system message: overtakes the queued flush
		close(until)
		// Acked (it is durable) and stopped, in either order: the ack leaves
		// from the journal's goroutine.
		got := b.client.ReceiveN(2, testkit.Timeout())
		require.ElementsMatch(t, []string{"*wrapperspb.Int64Value", "*actor.Terminated"},
			[]string{fmt.Sprintf("%T", got[0]), fmt.Sprintf("%T", got[1])})
		last, err := lastSeq(b.mem)
		require.NoError(t, err)
		require.Equal(t, int64(1), last, "the event decided before the stop was not written")
	})

	t.Run("AfterDurableRunsOncePerAppendAfterItsThens", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		afters := testkit.NewProbe(t, b.sys)
		rt, err := persistence.New(b.track, stream, b.opts...)
		require.NoError(t, err)
		a := &setActor{rt: rt, track: b.track, violations: &b.violations, recovered: b.events.PID(), resets: &b.resets, afters: afters.PID()}
		pid := b.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }))
		b.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		b.faulty.HoldWrites()
		until := make(chan struct{})
		b.client.Send(pid, &block{until: until})
		b.add(pid, "a")
		b.add(pid, "b")
		close(until)
		require.Eventually(t, func() bool { return b.faulty.HeldWrites() == 1 }, testkit.Timeout(), time.Millisecond)
		afters.ExpectNoMsg(50 * time.Millisecond)
		b.faulty.ReleaseWrites()
		require.Equal(t, []string{"a", "b"}, testkit.ExpectMsgType[*keysMsg](afters, testkit.Timeout()).keys)
		afters.ExpectNoMsg(50 * time.Millisecond) // once for the one append
	})

	t.Run("StaleActivationSeesTheNewerOneAndStops", func(t *testing.T) {
		t.Parallel()
		b := setup(t, persistence.WithFenceCheck(time.Second))
		b.marked = true
		older := b.startRecovered(t)
		b.client.Watch(older)
		b.add(older, "a")
		b.client.ExpectMsg(wrapperspb.Int64(2), testkit.Timeout()) // 1 is older's marker
		newer := b.startRecovered(t)                               // journals its recovery marker, 3
		require.Equal(t, []string{"a"}, b.keys(t, newer))
		// The older one never writes again; its next fence check finds the
		// marker it did not write.
		require.Eventually(t, func() bool { return b.clk.Pending() >= 2 }, testkit.Timeout(), time.Millisecond)
		b.clk.Advance(time.Second)
		b.client.ExpectTerminated(older, testkit.Timeout())
		b.add(newer, "b")
		b.client.ExpectMsg(wrapperspb.Int64(4), testkit.Timeout()) // 1 a, 2 and 3 markers
	})

	t.Run("InvalidOptions", func(t *testing.T) {
		t.Parallel()
		mem := journal.NewMemory()
		t.Cleanup(func() { _ = mem.Close() })
		tests := []struct {
			name   string
			j      persistence.Journal
			stream string
			opt    persistence.Option
		}{
			{name: "NilJournal", stream: "s", opt: persistence.WithSnapshotEvery(1)},
			{name: "EmptyStream", j: mem, opt: persistence.WithSnapshotEvery(1)},
			{name: "NilClock", j: mem, stream: "s", opt: persistence.WithClock(nil)},
			{name: "NegativeSnapshot", j: mem, stream: "s", opt: persistence.WithSnapshotEvery(-1)},
			{name: "ZeroTimeout", j: mem, stream: "s", opt: persistence.WithJournalTimeout(0)},
			{name: "NegativeFenceCheck", j: mem, stream: "s", opt: persistence.WithFenceCheck(-time.Second)},
			{name: "ZeroBatch", j: mem, stream: "s", opt: persistence.WithMaxBatch(0, 1)},
			{name: "RetryMaxBelowMin", j: mem, stream: "s", opt: persistence.WithRecoveryRetry(time.Second, time.Millisecond)},
			{name: "NegativeLease", j: mem, stream: "s", opt: persistence.WithLease(-time.Second)},
			{name: "LeaseTooShortToRenew", j: mem, stream: "s", opt: persistence.WithLease(time.Microsecond)},
			{name: "NegativeLeaseMaxWait", j: mem, stream: "s", opt: persistence.WithLeaseMaxWait(-time.Second)},
		}
		for _, tc := range tests {
			_, err := persistence.New(tc.j, tc.stream, tc.opt)
			require.ErrorIs(t, err, persistence.ErrInvalidOption, tc.name)
		}
	})
}

// TestNothingObservableBeforeDurable is a property test: whatever order adds,
// duplicates, queries and journal stalls come in, no reply and no then sees
// an event the journal has not confirmed, every add is answered once, and
// a restart recovers exactly the keys answered.
func TestNothingObservableBeforeDurable(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 7))
			b := setup(t, persistence.WithSnapshotEvery(1+rng.IntN(5)), persistence.WithMaxBatch(1+rng.IntN(4), 1<<20))
			pid := b.startRecovered(t)
			var (
				mu      sync.Mutex
				answers int
				late    int // replies whose seq was not durable on arrival
			)
			rec := b.sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
				if v, ok := c.Message().(*wrapperspb.Int64Value); ok {
					mu.Lock()
					answers++
					if v.GetValue() > b.track.durable.Load() {
						late++
					}
					mu.Unlock()
				}
			}))
			adds, queries := 0, 0
			for range 60 {
				switch op := rng.IntN(10); {
				case op < 6:
					b.sys.Root.RequestWithCustomSender(pid, &add{key: string(rune('a' + rng.IntN(8)))}, rec)
					adds++
				case op < 7:
					b.client.Request(pid, &query{})
					queries++
				case op < 8:
					b.faulty.HoldWrites()
				default:
					b.faulty.ReleaseWrites()
				}
				if rng.IntN(4) == 0 {
					time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond) // vary the interleaving
				}
			}
			b.faulty.ReleaseWrites()
			for range queries {
				testkit.ExpectMsgType[*keysMsg](b.client, testkit.Timeout())
			}
			require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return answers == adds },
				testkit.Timeout(), time.Millisecond, "every add is answered once")
			mu.Lock()
			require.Zero(t, late, "replies that arrived before their event was durable")
			mu.Unlock()
			require.Zero(t, b.violations.Load(), "thens or queries that saw a non-durable event")
			live := b.keys(t, pid)
			b.sys.Root.Stop(pid)
			pid = b.startRecovered(t)
			require.Equal(t, live, b.keys(t, pid), "recovery gives the state that was observed")
		})
	}
}

func lastSeq(j persistence.Journal) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer cancel()
	var last int64
	err := j.Load(ctx, stream, 1, func(ev persistence.Event) error { last = ev.Seq; return nil })
	return last, err
}
