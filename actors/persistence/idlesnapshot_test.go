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

// idleSet is a setActor whose policy declines every snapshot while busy and
// takes it once idle, counting the offers.
type idleSet struct {
	*setActor
	offers *atomic.Int64
	since  *atomic.Int64 // of the last offer
}

func (idleSet) Snapshot(int) (proto.Message, bool) { return nil, false }

func (s idleSet) IdleSnapshot(since int) (proto.Message, bool) {
	s.offers.Add(1)
	s.since.Store(int64(since))
	return s.setActor.Snapshot(since)
}

// TestIdleSnapshot: a runtime that persisted nothing for a whole fence-check
// interval offers an IdleSnapshotter the snapshot its busy policy declined,
// once per quiet spell.
func TestIdleSnapshot(t *testing.T) {
	t.Parallel()
	b := setup(t, persistence.WithFenceCheck(time.Second), persistence.WithSnapshotEvery(1))
	var offers, since atomic.Int64
	rt, err := persistence.New(b.track, stream, b.opts...)
	require.NoError(t, err)
	a := &setActor{rt: rt, track: b.track, violations: &b.violations, recovered: b.events.PID(), resets: &b.resets}
	a.handler = idleSet{setActor: a, offers: &offers, since: &since}
	pid := b.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }))
	b.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())

	for i, k := range []string{"a", "b", "c"} {
		b.add(pid, k)
		b.client.ExpectMsg(wrapperspb.Int64(int64(i+1)), testkit.Timeout())
	}
	snapshot := func() (persistence.Snapshot, bool) {
		snap, ok, err := b.mem.LoadSnapshot(context.Background(), stream)
		require.NoError(t, err)
		return snap, ok
	}
	tick := func() {
		require.Eventually(t, func() bool { return b.clk.Pending() >= 1 }, testkit.Timeout(), time.Millisecond)
		b.clk.Advance(time.Second)
	}

	tick() // the adds were flushed in this interval: busy
	tick()
	require.Eventually(t, func() bool { _, ok := snapshot(); return ok }, testkit.Timeout(), time.Millisecond)
	snap, _ := snapshot()
	require.Equal(t, int64(3), snap.Seq)
	require.Equal(t, int64(1), offers.Load())
	require.Equal(t, int64(3), since.Load())

	tick() // still quiet, nothing new since the snapshot: no offer
	tick()
	require.Eventually(t, func() bool { return b.clk.Pending() >= 1 }, testkit.Timeout(), time.Millisecond) // the tick was handled
	require.Equal(t, int64(1), offers.Load())

	b.add(pid, "d")
	b.client.ExpectMsg(wrapperspb.Int64(4), testkit.Timeout())
	tick()
	tick()
	require.Eventually(t, func() bool { s, _ := snapshot(); return s.Seq == 4 }, testkit.Timeout(), time.Millisecond)
	require.Equal(t, int64(2), offers.Load())
	require.Equal(t, int64(1), since.Load())
	require.Equal(t, []string{"a", "b", "c", "d"}, b.keys(t, pid))
	require.Zero(t, b.violations.Load())
}
