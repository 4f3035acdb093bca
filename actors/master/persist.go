package master

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/messages"
)

// The master on the persistence runtime: its props, and how WorkState is
// recovered and snapshotted.

// Props returns the props of a Master that journals to j, or the error of an
// invalid option.
//
// The master recovers in Started, so the same props serve as a plain actor
// and as a cluster grain: each activation takes a new epoch and fences the
// previous one.
func Props(j persistence.Journal, opts ...Option) (*actor.Props, error) {
	if j == nil {
		return nil, fmt.Errorf("%w: journal is nil", ErrInvalidOption)
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.observeLimiters()
	if _, err := persistence.New(j, cfg.stream, cfg.runtimeOptions()...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	return actor.PropsFromProducer(func() actor.Actor {
		rt, err := persistence.New(j, cfg.stream, cfg.runtimeOptions()...)
		if err != nil {
			panic(err) // validated above
		}
		return &masterActor{cfg: cfg, rt: rt, j: j, clock: cfg.clock, policy: cfg.policy(), workers: newWorkerRegistry(), feed: newFeedHub(cfg.feedRetention)}
	}), nil
}

var (
	_ persistence.Handler         = (*masterActor)(nil)
	_ persistence.IdleSnapshotter = (*masterActor)(nil)
	_ persistence.RecoveryMarker  = (*masterActor)(nil)
)

// Reset, Replay, Snapshot, IdleSnapshot and RecoveryEvent implement
// persistence.Handler, persistence.IdleSnapshotter and
// persistence.RecoveryMarker.

func (a *masterActor) Reset(snap *persistence.Snapshot) error {
	a.heldStarts = nil // applied to the state being replaced, never written
	if snap == nil {
		a.state = NewWorkState()
		return nil
	}
	st, err := RestoreSnapshot(snap.Msg)
	if err != nil {
		return fmt.Errorf("seq %d: %w", snap.Seq, err)
	}
	a.state = st
	a.snapSize = restoredSize(snap.Msg)
	return nil
}

// RestoreSnapshot rebuilds the state from a snapshot the master wrote: a
// PackedMasterSnapshot, or a MasterSnapshot of a master from before the
// packed encoding. Any other message is ErrBadSnapshot.
func RestoreSnapshot(msg proto.Message) (*WorkState, error) {
	switch m := msg.(type) {
	case *messages.PackedMasterSnapshot:
		return RestoreWorkState(m.GetSnapshot())
	case *messages.MasterSnapshot:
		return RestoreWorkState(m)
	}
	return nil, fmt.Errorf("%w: the snapshot is a %T", ErrBadSnapshot, msg)
}

// restoredSize is what the entries of a restored snapshot weighed, as one
// average for finished works and the others (the chunks do not tell them
// apart): the activation's first snapshot is sized from it.
func restoredSize(msg proto.Message) snapshotSize {
	m, ok := msg.(*messages.PackedMasterSnapshot)
	if !ok || m.GetSnapshot().GetChunkEntries() <= 0 {
		return snapshotSize{}
	}
	bytes := 0
	for _, c := range m.GetSnapshot().GetChunks() {
		bytes += len(c)
	}
	n := int(m.GetSnapshot().GetChunkEntries())
	return snapshotSize{otherBytes: bytes, others: n}
}

func (a *masterActor) Replay(ev persistence.Event) error { return a.state.Apply(ev.Msg) }

// EventWeight implements persistence.Weigher: each work of a WorksAccepted
// counts as an event, since replay accepts each (the snapshot policy below
// then bounds replay in works, as before batches were grouped). A
// WorksStarted counts one: replaying a hand-out costs next to nothing.
func (a *masterActor) EventWeight(msg proto.Message) int {
	if g, ok := msg.(*messages.WorksAccepted); ok {
		return len(g.GetWorks())
	}
	return 1
}

// The snapshot policy. A snapshot costs in proportion to the works the
// state holds (built on the master's goroutine, which blocks every caller
// while it runs, then written off it in one journal transaction that the
// acknowledgements behind it wait for); recovery replays the events written
// after the newest one. While busy, the master takes a snapshot once the
// events since the previous one reach the works the state holds, so each
// event pays for at most one work's worth of snapshot and a restart under
// load replays at most as many events as the state holds works. The
// earlier rule, half, snapshotted a state that grows by one work per ~2
// events (accepted, completed) each time it grew by a quarter: its stalls
// cost the one-process bench about a tenth of its throughput and doubled
// its p99 (BENCHMARKS.md, "Issue 17 on a faster machine").
// Once idle for a fence-check interval (persistence.IdleSnapshotter), it
// takes one already at a sixteenth: after a burst of submissions, the master
// has the time, and a restart then replays next to nothing. Each work of a
// WorksAccepted counts as an event (EventWeight).
const (
	busySnapshotDivisor = 1
	idleSnapshotDivisor = 16
)

func (a *masterActor) Snapshot(since int) (proto.Message, bool) {
	if since*busySnapshotDivisor < a.state.Len() {
		return nil, false
	}
	return a.snapshotMsg(), true
}

func (a *masterActor) IdleSnapshot(since int) (proto.Message, bool) {
	if since*idleSnapshotDivisor < a.state.Len() {
		return nil, false
	}
	return a.snapshotMsg(), true
}

// snapshotMsg returns the state's PackedMasterSnapshot already in its wire
// form (persistence.Marshaled): the journal stores the bytes the state was
// packed into, with no list of chunks nor marshalled copy beside them. The
// buffer is sized from the previous snapshot (snapshotSize.predict).
func (a *masterActor) snapshotMsg() proto.Message {
	data, size := a.state.packedWire(a.snapSize)
	a.snapSize = size
	return &persistence.Marshaled{Type: (*messages.PackedMasterSnapshot)(nil).ProtoReflect().Type(), Data: data}
}

func (a *masterActor) RecoveryEvent(now time.Time) proto.Message {
	return &messages.MasterRecovered{AtUnixNano: now.UnixNano()}
}
