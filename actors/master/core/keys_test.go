package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	routecore "github.com/foreman-actors/foreman/actors/route/core"
	"github.com/foreman-actors/foreman/messages"
)

func uniqueWork(id, key string, period time.Duration, waiter *messages.PID) *messages.Work {
	w := work(id, waiter)
	w.UniqueKey, w.UniqueForNanos = key, int64(period)
	return w
}

func keyedWork(id, key string) *messages.Work {
	w := work(id, nil)
	w.ConcurrencyKey = key
	return w
}

// ackOf returns the Ack among effs (nil when none).
func ackOf(effs []effect.Effect) *messages.Ack {
	for _, r := range replies(effs) {
		if a, ok := r.Msg.(*messages.Ack); ok {
			return a
		}
	}
	return nil
}

func done(worker *messages.PID, id string) Done {
	return Done{From: worker, Msg: &messages.WorkIsDone{WorkId: id, WorkerId: worker.GetId(), Result: []byte("9")}}
}

// replayed returns a state rebuilt from evs, and the same through a
// snapshot (both encodings) taken after them.
func replayed(t *testing.T, evs []proto.Message) map[string]*WorkState {
	t.Helper()
	s := NewWorkState()
	for _, ev := range evs {
		require.NoError(t, s.Apply(ev))
	}
	snap, err := RestoreWorkState(s.Snapshot())
	require.NoError(t, err)
	wire, _ := s.PackedWire(SnapshotSize{})
	var packed messages.PackedMasterSnapshot
	require.NoError(t, proto.Unmarshal(wire, &packed))
	fromWire, err := RestoreSnapshot(&packed)
	require.NoError(t, err)
	return map[string]*WorkState{"replay": s, "snapshot": snap, "packed": fromWire}
}

// TestUniqueKeys: a submission whose unique key another job holds is
// answered with that job's id and status and not run; the key is held
// while the job is pending or running and for its period after it
// finished (done or dead), not after a cancellation; replay and snapshots
// keep it, even past the finished job's retention.
func TestUniqueKeys(t *testing.T) {
	t.Parallel()

	t.Run("DuplicatesAreAnsweredWithTheHolder", func(t *testing.T) {
		t.Parallel()
		h := serving(t, testConfig())
		var journal []proto.Message
		acc := h.step(Submit{From: frontend, Work: uniqueWork("u1", "invoice-42", time.Minute, nil)})
		journal = append(journal, events(acc)...)
		require.Empty(t, ackOf(acc).GetDuplicateOf(), "the first holds the key")
		h.durable(acc)

		for _, tc := range []struct {
			status messages.WorkStatus
			step   func()
		}{
			{statusAccepted, func() {}},
			{statusRunning, func() {
				h.step(register(worker1))
				out := h.step(request(worker1, 1))
				journal = append(journal, events(out)...)
				require.Equal(t, []string{"u1"}, handedOut(out, worker1))
			}},
			{statusDone, func() {
				d := h.step(done(worker1, "u1"))
				journal = append(journal, events(d)...)
				h.durable(d)
			}},
		} {
			tc.step()
			dup := h.step(Submit{From: frontend, Work: uniqueWork(fmt.Sprintf("u-%d", tc.status), "invoice-42", time.Minute, nil)})
			require.Empty(t, events(dup), "%v: a duplicate journals nothing", tc.status)
			a := ackOf(dup)
			require.Equal(t, "u1", a.GetDuplicateOf(), "%v", tc.status)
			require.Equal(t, tc.status, a.GetDuplicateStatus())
			require.True(t, replies(dup)[0].AfterDurable, "answered once what it read is durable")
		}
		// A retry of the holder's own submission is the usual duplicate.
		require.Empty(t, ackOf(h.step(Submit{From: frontend, Work: uniqueWork("u1", "invoice-42", time.Minute, nil)})).GetDuplicateOf())

		for name, st := range replayed(t, journal) {
			id, status, ok := st.UniqueHolder("invoice-42", h.now.UnixNano())
			require.True(t, ok, name)
			require.Equal(t, "u1", id, name)
			require.Equal(t, statusDone, status, name)
			_, _, ok = st.UniqueHolder("invoice-42", h.now.Add(time.Minute).UnixNano())
			require.False(t, ok, "%s: the period ended", name)
		}

		h.now = h.now.Add(time.Minute)
		again := h.step(Submit{From: frontend, Work: uniqueWork("u2", "invoice-42", time.Minute, nil)})
		require.Empty(t, ackOf(again).GetDuplicateOf(), "after the period the key is free")
		require.Len(t, events(again), 1)
	})

	t.Run("ADuplicateCallerWaitsForTheHolder", func(t *testing.T) {
		t.Parallel()
		h := serving(t, testConfig())
		h.durable(h.step(Submit{From: frontend, Work: uniqueWork("u1", "k", 0, waiterA)}))
		dup := h.step(Submit{From: frontend, Work: uniqueWork("u2", "k", 0, waiterB)})
		require.Equal(t, []proto.Message{&messages.WaiterAdded{WorkId: "u1", Waiter: waiterB}}, events(dup))
		h.durable(dup)
		h.step(register(worker1))
		require.Equal(t, []string{"u1"}, handedOut(h.step(request(worker1, 1)), worker1))
		told := h.durable(h.step(done(worker1, "u1")))
		require.Len(t, sentTo(told, waiterB, false), 1, "the duplicate's caller is told the holder's outcome")
		// Period 0: the key is free once the holder finished.
		require.Empty(t, ackOf(h.step(Submit{From: frontend, Work: uniqueWork("u3", "k", 0, nil)})).GetDuplicateOf())
	})

	t.Run("ACancelledHolderFreesItsKey", func(t *testing.T) {
		t.Parallel()
		s := NewWorkState()
		for _, ev := range []proto.Message{
			&messages.WorkAccepted{Work: uniqueWork("u1", "k", time.Hour, nil), AtUnixNano: 1},
			&messages.WorkStarted{WorkId: "u1", WorkerId: "w", AtUnixNano: 2},
			&messages.WorkerFailed{WorkId: "u1", WorkerId: "w", Cancelled: true, AtUnixNano: 3},
		} {
			require.NoError(t, s.Apply(ev))
		}
		_, _, ok := s.UniqueHolder("k", 4)
		require.False(t, ok)
	})

	t.Run("ABatchHoldsOneJobPerKey", func(t *testing.T) {
		t.Parallel()
		h := serving(t, testConfig())
		effs := h.step(SubmitBatch{From: frontend, Batch: &messages.WorkBatch{Works: []*messages.Work{
			uniqueWork("b1", "k", time.Hour, nil), uniqueWork("b2", "k", time.Hour, nil), uniqueWork("b3", "other", time.Hour, nil),
		}}})
		var ack *messages.WorkBatchAck
		for _, r := range replies(effs) {
			ack, _ = r.Msg.(*messages.WorkBatchAck)
		}
		require.NotNil(t, ack)
		out := ack.GetOutcomes()
		require.True(t, out[0].GetAccepted())
		require.Empty(t, out[0].GetDuplicateOf())
		require.True(t, out[1].GetAccepted())
		require.Equal(t, "b1", out[1].GetDuplicateOf())
		require.Equal(t, statusAccepted, out[1].GetDuplicateStatus())
		require.Empty(t, out[2].GetDuplicateOf())
		require.Equal(t, 2, h.m.State().Counts().Pending)
	})

	t.Run("AForgottenHolderKeepsItsKeyForItsPeriod", func(t *testing.T) {
		t.Parallel()
		hour := int64(time.Hour)
		evs := []proto.Message{
			&messages.WorkAccepted{Work: uniqueWork("u1", "k", time.Hour, nil), AtUnixNano: 1},
			&messages.WorkStarted{WorkId: "u1", WorkerId: "w", AtUnixNano: 2},
			&messages.WorkerFailed{WorkId: "u1", WorkerId: "w", Dead: true, AtUnixNano: 3},
			&messages.FinishedForgotten{BeforeUnixNano: 10}, // the retention is shorter than the period
		}
		for name, st := range replayed(t, evs) {
			require.Nil(t, st.Work("u1"), name)
			id, status, ok := st.UniqueHolder("k", 3+hour-1)
			require.True(t, ok, name)
			require.Equal(t, "u1", id)
			require.Equal(t, statusDead, status)
			_, _, ok = st.UniqueHolder("k", 3+hour)
			require.False(t, ok, name)
		}
		s := replayed(t, append(evs, &messages.FinishedForgotten{BeforeUnixNano: 3 + hour}))["packed"]
		require.Nil(t, s.Snapshot().GetKeys(), "an expired key is dropped")
	})

	t.Run("BadKeysAreRejected", func(t *testing.T) {
		t.Parallel()
		cfg := testConfig()
		cfg.Shards, cfg.Shard = 4, 0
		onShard := func(key string, k int) string {
			for i := 0; ; i++ {
				if s := fmt.Sprint(key, "-", i); routecore.ShardOf(s, 4) == k {
					return s
				}
			}
		}
		key := onShard("tenant", 0)
		other := onShard("tenant", 1)
		ok := uniqueWork(onShard("job", 0), key, time.Minute, nil)
		require.Nil(t, cfg.Check(ok))
		for name, w := range map[string]*messages.Work{
			"negative period": uniqueWork(ok.GetWorkId(), key, -time.Second, nil),
			"period alone":    uniqueWork(ok.GetWorkId(), "", time.Second, nil),
			"long key":        uniqueWork(ok.GetWorkId(), string(make([]byte, MaxKeyLen+1)), 0, nil),
			"keys apart": func() *messages.Work {
				w := uniqueWork(ok.GetWorkId(), key, 0, nil)
				w.ConcurrencyKey = other
				return w
			}(),
		} {
			r := cfg.Check(w)
			require.NotNil(t, r, name)
			require.Equal(t, messages.RejectCode_REJECT_CODE_INVALID, r.GetCode(), name)
		}
		// Key on shard 0, id on shard 0 only through the key: an id of
		// shard 0 whose key lives on shard 1 is rejected.
		r := cfg.Check(keyedWork(ok.GetWorkId(), other))
		require.NotNil(t, r)
		require.Contains(t, r.GetReason(), "not on the shard of its key")
	})
}

// TestConcurrencyKeys: no more works of a concurrency key run at once than
// its limit; a finish, a failure, a timeout or a hand-back frees a slot;
// works of other keys and without a key pass the blocked ones; a recovery
// keeps the slots of the runs it requeued until their results arrive or
// their work timeout passes, so a failover never doubles the limit.
func TestConcurrencyKeys(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Concurrency = ConcurrencyLimits{Default: 1, PerKey: map[string]int{"a": 2}}

	submitAll := func(h *harness, ws ...*messages.Work) {
		for _, w := range ws {
			h.durable(h.step(Submit{From: frontend, Work: w}))
		}
	}

	t.Run("TheLimitHoldsAndFreedSlotsAreUsed", func(t *testing.T) {
		t.Parallel()
		h := serving(t, cfg)
		h.step(register(worker1))
		submitAll(h, keyedWork("a1", "a"), keyedWork("a2", "a"), keyedWork("a3", "a"), keyedWork("a4", "a"),
			keyedWork("b1", "b"), keyedWork("b2", "b"), work("plain", nil))
		require.Equal(t, []string{"a1", "a2", "b1", "plain"}, h.handOut(request(worker1, 10), worker1))
		require.Equal(t, 3, h.m.State().Counts().Pending, "parked works stay pending")
		require.Equal(t, []string{"a3", "a4", "b2"}, h.m.State().PendingIDs())
		require.Empty(t, h.handOut(request(worker1, 10), worker1))

		h.durable(h.step(done(worker1, "a1")))
		require.Equal(t, []string{"a3"}, h.handOut(request(worker1, 10), worker1))
		// A failure frees the slot too; the failed work waits its backoff.
		h.step(Failed{Msg: &messages.WorkFailed{WorkId: "b1", WorkerId: worker1.GetId(), Error: "boom"}})
		require.Equal(t, []string{"b2"}, h.handOut(request(worker1, 10), worker1))
		h.now = h.now.Add(time.Second)
		require.Empty(t, h.handOut(request(worker1, 10), worker1), "b1's retry waits for b2's slot")
		// A timeout frees the slots of a2 and a3 (and b2), which wait
		// out their backoff: a4 and b1 take them.
		h.now = h.now.Add(cfg.WorkTimeout)
		h.step(effect.Fired{Name: h.m.cleanupName})
		require.Equal(t, []string{"a4", "b1"}, h.handOut(request(worker1, 10), worker1))
		h.now = h.now.Add(time.Second)
		require.Equal(t, []string{"a2", "plain"}, h.handOut(request(worker1, 10), worker1), "plain timed out too")
		require.Equal(t, []KeyCount{{Key: "a", Running: 2, Waiting: 1}, {Key: "b", Running: 1, Waiting: 1}}, h.m.State().KeyRunning())
	})

	t.Run("AFailoverKeepsTheSlotsOfWhatRan", func(t *testing.T) {
		t.Parallel()
		h := serving(t, cfg)
		h.step(register(worker1))
		var journal []proto.Message
		for _, w := range []*messages.Work{keyedWork("a1", "a"), keyedWork("a2", "a"), keyedWork("a3", "a")} {
			effs := h.step(Submit{From: frontend, Work: w})
			journal = append(journal, events(effs)...)
			h.durable(effs)
		}
		out := h.step(request(worker1, 10))
		require.Empty(t, handedOut(out, worker1), "a keyed hand-out waits for its WorkStarted to be durable")
		require.Equal(t, []string{"a1", "a2"}, handedOut(h.durable(out), worker1))
		journal = append(journal, events(out)...)
		journal = append(journal, &messages.MasterRecovered{AtUnixNano: h.now.Add(time.Second).UnixNano()})

		for name, st := range replayed(t, journal) {
			t.Run(name, func(t *testing.T) {
				n := &harness{t: t, m: New(cfg), now: h.now.Add(time.Second)}
				n.m.Reset(st)
				n.step(Serving{Until: forever})
				n.step(Recovered{})
				n.step(register(worker2))
				require.Empty(t, n.handOut(request(worker2, 10), worker2), "the requeued runs still hold both slots")
				require.Equal(t, []KeyCount{{Key: "a", Held: 2, Waiting: 3}}, n.m.State().KeyRunning())
				// The old worker's result frees one.
				n.durable(n.step(done(worker1, "a1")))
				got := n.handOut(request(worker2, 10), worker2)
				require.Len(t, got, 1)
				// The other one is held a work timeout from the recovery,
				// on this master's clock: not from its start, which the old
				// master stamped on its own clock (seed 3002231: a new
				// master 1.3 s ahead of the old one freed it at once, and a
				// failover doubled the key's limit).
				n.now = h.now.Add(cfg.WorkTimeout)
				require.Empty(t, n.handOut(request(worker2, 10), worker2), "held a work timeout from the recovery, not from the start")
				n.now = h.now.Add(time.Second + cfg.WorkTimeout)
				require.Len(t, n.handOut(request(worker2, 10), worker2), 1)
				require.Empty(t, n.handOut(request(worker2, 10), worker2), "two run")
			})
		}
	})
}

// handOut steps in and reports its Appends durable: the works sent to to
// (a keyed hand-out is sent once its WorkStarted is durable).
func (h *harness) handOut(in any, to *messages.PID) []string {
	effs := h.step(in)
	return append(handedOut(effs, to), handedOut(h.durable(effs), to)...)
}
