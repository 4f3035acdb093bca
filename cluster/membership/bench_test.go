package membership_test

import (
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/membership"
)

// BenchmarkDetection measures, with default settings, the time from an
// abrupt stop of a member (membership endpoint and remote closed at once,
// no leave: what the others see of a SIGKILLed process on loopback) until
// both other members have dropped it. One iteration joins a fresh member
// (about 1 s: protoactor's StartMember sleeps), so run it with -benchtime Nx.
// Reported: detect-ms-median and detect-ms-max over the iterations.
func BenchmarkDetection(b *testing.B) {
	if testing.Short() {
		b.Skip("starts a cluster member per iteration")
	}
	obs := startNodes(b, true, spec{member: true}, spec{member: true})
	waitView(b, testkit.Timeout(), idsOf(obs...), obs...)
	seed := []string{obs[0].p.HTTPAddr()}
	var ds []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		victim := startNodes(b, false, spec{member: true, seeds: seed})[0]
		waitView(b, testkit.Timeout(), idsOf(obs[0], obs[1], victim), obs...)
		b.StartTimer()
		start := time.Now()
		victim.stop(false)
		want := idsOf(obs...)
		for !slices.Equal(obs[0].ids(), want) || !slices.Equal(obs[1].ids(), want) {
			if time.Since(start) > 3*testkit.Timeout() {
				b.Fatalf("not dropped within %v", 3*testkit.Timeout())
			}
			time.Sleep(time.Millisecond) // polling the views: 1 ms resolution
		}
		ds = append(ds, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "detect-ms-median")
	b.ReportMetric(float64(ds[len(ds)-1].Microseconds())/1000, "detect-ms-max")
	b.ReportMetric(0, "ns/op")
	b.Logf("refresh %v, failures %d: %v", membership.DefaultRefresh, membership.DefaultFailures, ds)
}

// BenchmarkProbe measures one GET /members round trip to a member that
// knows three members, the unit of work every node does per peer and
// refresh.
func BenchmarkProbe(b *testing.B) {
	if testing.Short() {
		b.Skip("starts a cluster")
	}
	nodes := startNodes(b, true, spec{member: true}, spec{member: true}, spec{member: true})
	waitView(b, testkit.Timeout(), idsOf(nodes...), nodes...)
	url := "http://" + nodes[0].p.HTTPAddr() + membership.Path
	client := &http.Client{Transport: &http.Transport{}}
	b.Cleanup(client.CloseIdleConnections)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}
