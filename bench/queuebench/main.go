// Command queuebench measures issue 37's queue figures against a running
// Foreman HTTP API (docs/benchmarks/issue37-queue.md):
//
//   - lateness: delayed jobs submitted with run_at spread over a few
//     seconds, under light load; how long after its run_at the master
//     handed each out (the "started" history event).
//   - fairness: key B submits jobs spread over the run, first on an idle
//     cluster, then while key A's flood (one batch burst) is queued; B's
//     waits, and the same flood without fairness keys for comparison. Two
//     waits per job: from the master's receipt (accepted) to the hand-out
//     (started), which includes making the submission durable; and its
//     queue wait, from the durable ack's arrival here to the hand-out,
//     which is what dispatch order decides. Under A's flood the first
//     grows with the journal's commit latency, whatever the order.
//
// Usage: go run ./bench/queuebench --to 127.0.0.1:8721 --mode lateness|fairness
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/foreman-actors/foreman/cluster/httpapi"
)

func main() {
	var (
		to     = flag.String("to", "127.0.0.1:8721", "HTTP API host:port")
		mode   = flag.String("mode", "lateness", "lateness or fairness")
		n      = flag.Int("n", 100, "delayed jobs (lateness), key B's jobs (fairness)")
		flood  = flag.Int("flood", 50000, "key A's jobs at once (fairness)")
		spread = flag.Duration("spread", 5*time.Second, "over how long the delayed / B jobs are spread")
	)
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := httpapi.NewClient("http://" + *to)
	if err != nil {
		fail(err)
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	switch *mode {
	case "lateness":
		lateness(ctx, c, *to, run, *n, *spread)
	case "fairness":
		idle, idleQ := spreadB(ctx, c, *to, run+"-idle", *n, *spread, "B", nil)
		report("B wait, idle cluster", idle)
		report("B queue wait, idle cluster", idleQ)
		fair, fairQ := spreadB(ctx, c, *to, run+"-fair", *n, *spread, "B", func() { burst(ctx, c, run+"-fair", *flood, "A") })
		report(fmt.Sprintf("B wait, A's %d queued (fairness keys)", *flood), fair)
		report(fmt.Sprintf("B queue wait, A's %d queued (fairness keys)", *flood), fairQ)
		fifo, fifoQ := spreadB(ctx, c, *to, run+"-fifo", *n, *spread, "", func() { burst(ctx, c, run+"-fifo", *flood, "") })
		report(fmt.Sprintf("B wait, A's %d queued (no keys: FIFO)", *flood), fifo)
		report(fmt.Sprintf("B queue wait, A's %d queued (no keys: FIFO)", *flood), fifoQ)
		fmt.Printf("p99 ratio loaded/idle (fairness keys): %.2f\n", float64(pct(fair, 99))/float64(max(pct(idle, 99), 1)))
	default:
		fail(errors.New("--mode is lateness or fairness"))
	}
}

// lateness submits n jobs whose run_at is spread over spread, starting a
// second from now, and reports started - run_at.
func lateness(ctx context.Context, c *httpapi.Client, to, run string, n int, spread time.Duration) {
	start := time.Now().Add(time.Second)
	runAt := make(map[string]time.Time, n)
	for i := range n {
		id := fmt.Sprintf("late-%s-%d", run, i)
		at := start.Add(spread * time.Duration(i) / time.Duration(n))
		runAt[id] = at
		if _, err := c.Submit(ctx, httpapi.SubmitRequest{ID: id, Type: "square", Payload: []byte("3"), RunAt: at.UTC().Format(time.RFC3339Nano)}); err != nil {
			fail(err)
		}
	}
	var late []time.Duration
	for id, at := range runAt {
		started, _ := startedOf(ctx, c, to, id)
		late = append(late, started.Sub(at))
	}
	report("hand-out after run_at", late)
}

// spreadB submits n jobs of key over spread (after during starts, which
// loads the cluster) and returns their waits, accepted to started, and
// their queue waits, acked to started (0 when the hand-out came first:
// the ack leaves at durability, the hand-out may beat it here). Both ends
// of a queue wait are read from this host's clock and the node's, the
// same clock on loopback.
func spreadB(ctx context.Context, c *httpapi.Client, to, run string, n int, spread time.Duration, key string, during func()) (waits, queued []time.Duration) {
	if during != nil {
		during()
	}
	ids := make([]string, n)
	acked := make([]time.Time, n)
	for i := range n {
		ids[i] = fmt.Sprintf("b-%s-%d", run, i)
		if _, err := c.Submit(ctx, httpapi.SubmitRequest{ID: ids[i], Type: "square", Payload: []byte("3"), FairnessKey: key}); err != nil {
			fail(err)
		}
		acked[i] = time.Now()
		time.Sleep(spread / time.Duration(n))
	}
	for i, id := range ids {
		started, accepted := startedOf(ctx, c, to, id)
		waits = append(waits, started.Sub(accepted))
		queued = append(queued, max(started.Sub(acked[i]), 0))
	}
	// Let the flood drain before the next scenario.
	for {
		qs, err := c.Queues(ctx)
		if err != nil {
			fail(err)
		}
		busy := false
		for _, q := range qs.Queues {
			busy = busy || q.Pending > 0
		}
		if !busy {
			return waits, queued
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// burst submits n jobs of key in batches of 1000, as fast as they go.
func burst(ctx context.Context, c *httpapi.Client, run string, n int, key string) {
	for i := 0; i < n; i += 1000 {
		reqs := make([]httpapi.SubmitRequest, 0, 1000)
		for j := i; j < min(i+1000, n); j++ {
			reqs = append(reqs, httpapi.SubmitRequest{ID: fmt.Sprintf("a-%s-%d", run, j), Type: "square", Payload: []byte("3"), FairnessKey: key})
		}
		if _, err := c.SubmitMany(ctx, reqs); err != nil {
			fail(err)
		}
	}
}

// startedOf waits for id to be done and returns when it was handed out
// and accepted (its history).
func startedOf(ctx context.Context, c *httpapi.Client, to, id string) (started, accepted time.Time) {
	if _, err := c.Wait(ctx, id, 20*time.Millisecond); err != nil {
		fail(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+to+"/work/"+id+"?history=true", nil)
	if err != nil {
		fail(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fail(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var info httpapi.WorkInfo
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		fail(err)
	}
	for _, h := range info.History {
		switch h.Event {
		case "accepted":
			accepted = h.At
		case "started":
			started = h.At
		}
	}
	return started, accepted
}

// pct is the nearest-rank p-th percentile: the smallest sample that at
// least p% of the samples do not exceed (of 100 samples, p99 is the
// 99th smallest, not the largest).
func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := (len(s)*p + 99) / 100 // ceil(n*p/100), 1-based
	return s[min(max(rank, 1), len(s))-1]
}

func report(what string, ds []time.Duration) {
	fmt.Printf("%s: n=%d p50=%v p99=%v max=%v\n", what, len(ds), pct(ds, 50).Round(time.Microsecond),
		pct(ds, 99).Round(time.Microsecond), slices.Max(ds).Round(time.Microsecond))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "queuebench:", err)
	os.Exit(1)
}
