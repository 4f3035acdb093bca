package testkit_test

import (
	"testing"

	"github.com/foreman-actors/foreman/actors/testkit"
)

// BenchmarkProbeRoundTrip: probe -> echo actor -> probe, checked with
// ExpectMsg. The cost of one request/expectation step in a test.
func BenchmarkProbeRoundTrip(b *testing.B) {
	sys := testkit.NewSystem(b)
	p := testkit.NewProbe(b, sys)
	echo := sys.Root.Spawn(echoProps())
	b.ReportAllocs()
	for b.Loop() {
		p.Request(echo, "x")
		p.ExpectMsg("x", testkit.Timeout())
	}
}

// BenchmarkProbeBurst: 100 messages into the probe, taken with ReceiveN;
// reported per message.
func BenchmarkProbeBurst(b *testing.B) {
	sys := testkit.NewSystem(b)
	p := testkit.NewProbe(b, sys)
	const n = 100
	b.ReportAllocs()
	for b.Loop() {
		for i := range n {
			sys.Root.Send(p.PID(), i)
		}
		p.ReceiveN(n, testkit.Timeout())
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
}

// BenchmarkStopAll: the clean-up scan of NewSystem over a system with one
// probe (protoactor's registry has 1024 buckets of 32 shards).
func BenchmarkStopAll(b *testing.B) {
	sys := testkit.NewSystem(b)
	for b.Loop() {
		_ = testkit.NewProbe(b, sys)
		testkit.StopAll(sys)
	}
}
