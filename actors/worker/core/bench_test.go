package core_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/foreman-actors/foreman/actors/effect"
	"github.com/foreman-actors/foreman/actors/worker/core"
	"github.com/foreman-actors/foreman/messages"
)

// BenchmarkCoreJob is the core's own cost per job, without actors: a Work,
// its RunDone, the flush and the Ack, as the shell steps them.
func BenchmarkCoreJob(b *testing.B) {
	w := core.New(config(func(c *core.Config) { c.Window = 4; c.Prefetch = 4; c.ResultHold = 500 * time.Microsecond }))
	at := t0
	w.Start(at)
	ids := make([]string, 1024)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		id := ids[i%len(ids)]
		at = at.Add(time.Microsecond)
		var slot int
		for _, e := range w.Work(at, &messages.Work{WorkId: id, JobType: "echo"}) {
			if r, ok := e.(*core.Run); ok {
				slot = r.Slot
			}
		}
		flush := false
		for _, e := range w.RunDone(at, slot, id, nil, nil) {
			if _, ok := e.(core.Yield); ok {
				flush = true
			}
		}
		if flush {
			w.Fired(at, core.YieldFlush)
		}
		sink = w.Ack(at, id)
	}
}

var sink []effect.Effect
