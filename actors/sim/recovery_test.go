package sim

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	mcore "github.com/foreman-actors/foreman/actors/master/core"
	"github.com/foreman-actors/foreman/messages"
)

// idleHost runs nothing: the frontends and workers of a run that only
// recovers a master.
type idleHost struct{}

func (idleHost) start()                                            {}
func (idleHost) deliver(*messages.PID, string, proto.Message) bool { return false }
func (idleHost) viewChanged()                                      {}

// TestRecoveryReplaysIntoTheResetState: an activation recovers as the
// master's actor shell does (actors/master's Reset, then Replay, driven by
// persistence.Runtime's load; actors/master/core's doc): Reset the core
// with the restored state, then apply the journal's events to the core's
// state, which carries the master's fairness weights (and priority aging,
// key rates, planted bugs) while it replays. The simulator replayed into a
// bare state and Reset it afterwards, so a replayed hand-out of key "a"
// (weight 2) ended a's turn as if its weight were 1, and the recovered
// master served "b" next where the shell's serves "a" again.
func TestRecoveryReplaysIntoTheResetState(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Seed, cfg.Fair = 1, true
	cfg.Backends, cfg.Shards, cfg.Clients = 1, 1, 0
	cfg.Faults = FaultMix{}
	cfg.Duration, cfg.Heal = 100*time.Millisecond, 100*time.Millisecond

	at := epoch0.Add(-time.Second).UnixNano()
	work := func(id, key string) *messages.Work {
		return &messages.Work{WorkId: id, JobType: "t", Payload: []byte(id), FairnessKey: key}
	}
	journaled := []proto.Message{
		&messages.WorkAccepted{Work: work("a1", "a"), AtUnixNano: at},
		&messages.WorkAccepted{Work: work("a2", "a"), AtUnixNano: at + 1},
		&messages.WorkAccepted{Work: work("b1", "b"), AtUnixNano: at + 2},
		&messages.WorkAccepted{Work: work("b2", "b"), AtUnixNano: at + 3},
		// a's turn (weight 2): its first hand-out.
		&messages.WorkStarted{WorkId: "a1", WorkerId: "w0#0", AtUnixNano: at + 4},
		&messages.WorkCompleted{WorkId: "a1", WorkerId: "w0#0", Result: []byte("r"), AtUnixNano: at + 5, JobType: "t"},
	}
	// The shell's recovery, as the core's doc states it: Reset, then Apply.
	shell := mcore.New(mcore.Config{FairnessWeights: fairWeights(true)})
	shell.Reset(mcore.NewWorkState())
	for _, ev := range journaled {
		if err := shell.State().Apply(ev); err != nil {
			t.Fatal(err)
		}
	}

	var b *backendHost
	hosts := func(w *world, n *node) host {
		if n.kind != kindBackend {
			return idleHost{}
		}
		if b == nil { // the first backend: write the journal it recovers from
			s := w.jr.stream(masterID(0))
			epoch, _ := s.js.AcquireEpoch()
			s.js.Append(epoch, 1, len(journaled))
			for _, ev := range journaled {
				s.events = append(s.events, jevent{msg: ev, epoch: epoch})
			}
		}
		b = newBackend(w, n).(*backendHost)
		return b
	}
	rep, err := runWith(t.Context(), cfg, hosts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed() {
		t.Fatalf("%v", rep.Violation)
	}
	act := b.acts[0]
	if act == nil || !act.live() {
		t.Fatal("master/0 does not serve at the end")
	}
	now := epoch0.Add(time.Hour)
	want := shell.State().NextReady(now, nil).GetWorkId()
	if want != "a2" {
		t.Fatalf("the shell's order serves %q next: the test's premise (a's turn not over) is wrong", want)
	}
	if got := act.m.State().NextReady(now, nil).GetWorkId(); got != want {
		t.Errorf("the recovered master serves %q next, the shell's %q: its replay did not see the weights", got, want)
	}
}
