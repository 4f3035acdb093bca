package master

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/master/core"
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
		return &masterActor{cfg: cfg, rt: rt, j: j, clock: cfg.clock, core: core.New(cfg.core()), timers: make(map[string]stopper),
			pids: make(map[*messages.PID]*actor.PID), feed: newFeedHub(cfg.feedRetention), trace: newMasterTracer(cfg.tracer)}
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
	if snap == nil {
		a.core.Reset(NewWorkState())
		return nil
	}
	st, err := RestoreSnapshot(snap.Msg)
	if err != nil {
		return fmt.Errorf("seq %d: %w", snap.Seq, err)
	}
	a.core.Reset(st) // held hand-out records were applied to the state replaced: never written
	a.snapSize = core.RestoredSize(snap.Msg)
	return nil
}

// RestoreSnapshot rebuilds the state from a snapshot the master wrote: a
// PackedMasterSnapshot, or a MasterSnapshot of a master from before the
// packed encoding. Any other message is ErrBadSnapshot.
func RestoreSnapshot(msg proto.Message) (*WorkState, error) { return core.RestoreSnapshot(msg) }

func (a *masterActor) Replay(ev persistence.Event) error { return a.core.State().Apply(ev.Msg) }

// EventWeight implements persistence.Weigher (core.EventWeight).
func (a *masterActor) EventWeight(msg proto.Message) int { return core.EventWeight(msg) }

// Snapshot and IdleSnapshot follow the core's policy (WorkState.WantsSnapshot).
func (a *masterActor) Snapshot(since int) (proto.Message, bool) {
	if !a.core.State().WantsSnapshot(since, false) {
		return nil, false
	}
	return a.snapshotMsg(), true
}

func (a *masterActor) IdleSnapshot(since int) (proto.Message, bool) {
	if !a.core.State().WantsSnapshot(since, true) {
		return nil, false
	}
	return a.snapshotMsg(), true
}

// snapshotMsg returns the state's PackedMasterSnapshot already in its wire
// form (persistence.Marshaled): the journal stores the bytes the state was
// packed into, with no list of chunks nor marshalled copy beside them. The
// buffer is sized from the previous snapshot (SnapshotSize.predict).
func (a *masterActor) snapshotMsg() proto.Message {
	data, size := a.core.State().PackedWire(a.snapSize)
	a.snapSize = size
	return &persistence.Marshaled{Type: (*messages.PackedMasterSnapshot)(nil).ProtoReflect().Type(), Data: data}
}

func (a *masterActor) RecoveryEvent(now time.Time) proto.Message {
	return &messages.MasterRecovered{AtUnixNano: now.UnixNano()}
}
