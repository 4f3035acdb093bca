package sim

import (
	"bytes"
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/messages"
)

// pingHost exercises the engine and the models without the cluster's
// cores: every node pings a random other node on a timer, and journals
// each ping it receives.
type pingHost struct {
	w *world
	n *node
	a *actor
	k int
}

func (p *pingHost) start() {
	p.a = p.w.newActor(p.n, "ping")
	p.a.stream = p.w.jr.stream("ping/" + p.n.name)
	p.a.epoch, _, _, _ = p.w.jr.acquire(p.a.stream)
	p.a.onFired = func(string) {
		to := p.w.procs[p.w.e.intn(len(p.w.procs))]
		p.k++
		p.a.apply([]effect.Effect{
			effect.Send{To: &messages.PID{Address: to.name, Id: "ping"}, Msg: &messages.Ack{WorkId: "p"}},
			effect.Timer{Name: "t", At: p.a.now().Add(p.w.e.between(time.Millisecond, 30*time.Millisecond))},
		})
	}
	p.a.onDurable = func(uint64) {}
	p.a.onFailed = func(error) {}
	p.a.apply([]effect.Effect{effect.Timer{Name: "t", At: p.a.now().Add(time.Millisecond)}})
}

func (p *pingHost) deliver(from *messages.PID, _ string, msg proto.Message) bool {
	p.k++
	p.a.apply([]effect.Effect{effect.Append{Events: []proto.Message{&messages.Ack{WorkId: from.GetAddress()}}, Token: uint64(p.k)}})
	return true
}

func (p *pingHost) viewChanged() {}

func pingHosts(w *world, n *node) host { return &pingHost{w: w, n: n} }

func pingRun(t *testing.T, seed uint64) ([]byte, Report) {
	t.Helper()
	var buf bytes.Buffer
	cfg := DefaultConfig()
	cfg.Seed, cfg.Trace = seed, &buf
	cfg.Duration, cfg.Heal = time.Second, 500*time.Millisecond
	cfg.Faults.Crash, cfg.Faults.Pause, cfg.Faults.Suspicion, cfg.Faults.Partition = 5, 5, 5, 5
	rep, err := runWith(t.Context(), cfg, pingHosts)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), rep
}

func TestSameSeedSameTrace(t *testing.T) {
	a, ra := pingRun(t, 7)
	b, rb := pingRun(t, 7)
	if len(a) < 10_000 {
		t.Fatalf("trace of %d bytes: the run did too little to prove anything", len(a))
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("seed 7 gave two traces (%d and %d bytes)", len(a), len(b))
	}
	if ra.Events != rb.Events {
		t.Fatalf("events %d and %d", ra.Events, rb.Events)
	}
	c, _ := pingRun(t, 8)
	if bytes.Equal(a, c) {
		t.Fatal("seeds 7 and 8 gave the same trace")
	}
	// Tracing must not change the schedule: it draws nothing.
	cfg := DefaultConfig()
	cfg.Seed, cfg.Duration, cfg.Heal = 7, time.Second, 500*time.Millisecond
	cfg.Faults.Crash, cfg.Faults.Pause, cfg.Faults.Suspicion, cfg.Faults.Partition = 5, 5, 5, 5
	rq, err := runWith(context.Background(), cfg, pingHosts)
	if err != nil {
		t.Fatal(err)
	}
	if rq.Events != ra.Events {
		t.Fatalf("with tracing %d events, without %d", ra.Events, rq.Events)
	}
	var kinds int
	for _, f := range ra.Faults {
		if f.Count > 0 {
			kinds++
		}
	}
	if kinds < 6 {
		t.Fatalf("only %d kinds of fault exercised: %v", kinds, ra.Faults)
	}
}

// TestClusterSameSeedSameTrace: the whole cluster on the real cores
// replays byte for byte.
func TestClusterSameSeedSameTrace(t *testing.T) {
	trace := func(seed uint64) []byte {
		var buf bytes.Buffer
		cfg := DefaultConfig()
		cfg.Seed, cfg.Trace = seed, &buf
		if _, err := Run(t.Context(), cfg); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	a, b := trace(3), trace(3)
	if len(a) < 50_000 {
		t.Fatalf("trace of %d bytes: the run did too little", len(a))
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("seed 3 gave two traces (%d and %d bytes)", len(a), len(b))
	}
	if bytes.Equal(a, trace(4)) {
		t.Fatal("seeds 3 and 4 gave the same trace")
	}
}
