package membership_test

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
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

// BenchmarkDetectionSIGKILL is BenchmarkDetection with a real process: the
// victim is this test binary re-executed as a member (see runChild), killed
// with SIGKILL once both in-process observers list it.
func BenchmarkDetectionSIGKILL(b *testing.B) {
	if testing.Short() {
		b.Skip("starts a member process per iteration")
	}
	obs := startNodes(b, true, spec{member: true}, spec{member: true})
	waitView(b, testkit.Timeout(), idsOf(obs...), obs...)
	var ds []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		id, cmd := startChild(b, obs[0].p.HTTPAddr())
		want := append(idsOf(obs...), id)
		slices.Sort(want)
		waitView(b, 3*testkit.Timeout(), want, obs...)
		b.StartTimer()
		start := time.Now()
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			b.Fatal(err)
		}
		want = idsOf(obs...)
		for !slices.Equal(obs[0].ids(), want) || !slices.Equal(obs[1].ids(), want) {
			if time.Since(start) > 3*testkit.Timeout() {
				b.Fatalf("not dropped within %v", 3*testkit.Timeout())
			}
			time.Sleep(time.Millisecond) // polling the views: 1 ms resolution
		}
		ds = append(ds, time.Since(start))
		_ = cmd.Wait()
	}
	b.StopTimer()
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "detect-ms-median")
	b.ReportMetric(float64(ds[len(ds)-1].Microseconds())/1000, "detect-ms-max")
	b.ReportMetric(0, "ns/op")
	b.Logf("refresh %v, failures %d: %v", membership.DefaultRefresh, membership.DefaultFailures, ds)
}

// startChild runs this test binary as a member process that knows seed,
// and returns its member id once it has started. The process is killed in
// clean-up if still running.
func startChild(tb testing.TB, seed string) (string, *exec.Cmd) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+seed)
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill() // by PID; an error means it has already exited
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if strings.HasPrefix(s.Text(), "READY ") {
				line <- s.Text()
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case l := <-line:
		return strings.Fields(l)[1], cmd
	case <-time.After(5 * testkit.Timeout()):
		tb.Fatalf("the member process did not start within %v", 5*testkit.Timeout())
		return "", nil
	}
}
