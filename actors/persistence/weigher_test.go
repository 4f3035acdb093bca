package persistence_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/testkit"
)

// weighedSet is a setActor whose events weigh what weights says (1 for the
// others), recording the since of the last Snapshot offered.
type weighedSet struct {
	*setActor
	weights map[string]int
	offered *atomic.Int64
}

func (s weighedSet) EventWeight(msg proto.Message) int {
	if w, ok := s.weights[msg.(*wrapperspb.StringValue).GetValue()]; ok {
		return w
	}
	return 1
}

func (s weighedSet) Snapshot(since int) (proto.Message, bool) {
	s.offered.Store(int64(since))
	return s.setActor.Snapshot(since)
}

// TestWeigherCountsTowardSnapshots: a heavy event brings the snapshot as
// soon as that many light ones would, also when its weight was replayed by
// a recovery before the events that complete the interval.
func TestWeigherCountsTowardSnapshots(t *testing.T) {
	t.Parallel()
	b := setup(t, persistence.WithSnapshotEvery(10))
	weights := map[string]int{"b": 9, "c": 4, "d": 6}
	var offered atomic.Int64
	start := func() *actor.PID {
		rt, err := persistence.New(b.track, stream, b.opts...)
		require.NoError(t, err)
		a := &setActor{rt: rt, track: b.track, violations: &b.violations, recovered: b.events.PID(), resets: &b.resets}
		a.handler = weighedSet{setActor: a, weights: weights, offered: &offered}
		pid := b.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }))
		b.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
		return pid
	}
	snapSeq := func() int64 {
		snap, ok, err := b.mem.LoadSnapshot(context.Background(), stream)
		require.NoError(t, err)
		if !ok {
			return 0
		}
		return snap.Seq
	}
	add := func(pid *actor.PID, key string, seq int64) {
		b.add(pid, key)
		b.client.ExpectMsg(wrapperspb.Int64(seq), testkit.Timeout())
	}

	pid := start()
	add(pid, "a", 1)
	require.Zero(t, offered.Load(), "one event of weight 1: no snapshot yet")
	add(pid, "b", 2) // 1 + 9
	require.Eventually(t, func() bool { return snapSeq() == 2 }, testkit.Timeout(), time.Millisecond)
	require.Equal(t, int64(10), offered.Load(), "since is the weight, not the count")

	add(pid, "c", 3) // 4 since the snapshot
	require.NoError(t, b.sys.Root.StopFuture(pid).Wait())
	pid = start() // replays c: 4 since the snapshot still
	add(pid, "d", 4)
	require.Eventually(t, func() bool { return snapSeq() == 4 }, testkit.Timeout(), time.Millisecond,
		"the replayed event's weight counts: 4 + 6 reach the interval")
	require.Equal(t, int64(10), offered.Load())
	require.Zero(t, b.violations.Load())
}
