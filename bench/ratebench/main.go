// Command ratebench measures the cluster-wide rate limit on dispatch times
// from the journal (issue 36, item 5).
//
// Each run starts real foreman processes on loopback: 3 backends on one
// SQLite journal with --shards 4 and --rate square=R/s (":strict" in the
// strict scenarios), a frontend (its HTTP API takes the backlog) and 2
// worker nodes. It submits R*seconds square jobs at once, reads every
// hand-out (WorkStarted / WorksStarted, stamped by the master that handed
// the work out) from the 4 shards' journal streams while they run, and
// computes, over the hand-out times:
//
//   - the overall rate: (hand-outs - 1) / (last - first);
//   - the most hand-outs in any 1 s window, wherever it starts;
//   - the longest gap between two hand-outs.
//
// Scenarios:
//
//	timer   --rate square=R/s (the seed's timer periods)
//	strict  --rate square=R/s:strict (every 1 s window bounded)
//	kill    strict (-event-mode timer: timer); at -event-at, SIGKILL the backend hosting the throttler
//	        (GET /status's throttlers); reports the time from the kill to
//	        the end of the longest gap after it ("dispatch resumes") and the
//	        most hand-outs in a 1 s window from 5 s before to 10 s after
//	join    strict (or -event-mode), 2 backends; at -event-at a third starts; reports the
//	        longest gap from the start to 15 s after it
//
// Usage:
//
//	go build -o /tmp/foreman-rates ./cmd/foreman
//	go run ./bench/ratebench -foreman /tmp/foreman-rates -runs 3
//
// Every process it starts is stopped by PID (SIGTERM, then SIGKILL) before
// the next run; each run's logs and journal stay under -dir.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/node"
)

type config struct {
	bin       string
	dir       string
	runs      int
	scenarios []string
	rate      int
	seconds   int
	shards    int
	eventAt   time.Duration
	portBase  int
	frontPort int
	workers   int
	window    int
	limit     float64
	eventMode string
}

func main() {
	var c config
	var scen string
	flag.StringVar(&c.bin, "foreman", "", "the foreman binary to run (go build -o /tmp/foreman-rates ./cmd/foreman)")
	flag.StringVar(&c.dir, "dir", "", "where each run's logs and journal go (default: a new temporary directory)")
	flag.IntVar(&c.runs, "runs", 3, "runs of each scenario")
	flag.StringVar(&scen, "scenarios", "timer,strict,kill,join", "comma-separated scenarios: timer, strict, kill, join")
	flag.IntVar(&c.rate, "rate", 100, "the limit, square=RATE/s")
	flag.IntVar(&c.seconds, "seconds", 60, "the backlog, in seconds at the rate (RATE*SECONDS jobs)")
	flag.IntVar(&c.shards, "shards", 4, "shards (--shards on every node)")
	flag.DurationVar(&c.eventAt, "event-at", 20*time.Second, "when the kill or join happens, after the first hand-out")
	flag.IntVar(&c.portBase, "backend-port", 2700, "the backends' ports: this and the next two")
	flag.IntVar(&c.frontPort, "frontend-port", 3700, "the frontend's port (its HTTP API on PORT+5000)")
	flag.IntVar(&c.workers, "workers", 4, "workers on each of the 2 worker nodes")
	flag.IntVar(&c.window, "window", 4, "jobs each worker may hold")
	flag.StringVar(&c.eventMode, "event-mode", "strict", "the mode of the kill and join scenarios: strict or timer")
	flag.Float64Var(&c.limit, "limit", 2.5, "end a run that has not handed out every job after LIMIT times the backlog's time (-seconds), and report it incomplete")
	flag.Parse()
	c.scenarios = strings.Split(scen, ",")
	if c.eventMode != "strict" && c.eventMode != "timer" {
		fmt.Fprintf(os.Stderr, "ratebench: -event-mode %q: want strict or timer\n", c.eventMode)
		os.Exit(2)
	}
	if c.bin == "" {
		fmt.Fprintln(os.Stderr, "ratebench: -foreman is required: go build -o /tmp/foreman-rates ./cmd/foreman")
		os.Exit(2)
	}
	for _, s := range c.scenarios {
		if !slices.Contains([]string{"timer", "strict", "kill", "join"}, s) {
			fmt.Fprintf(os.Stderr, "ratebench: scenario %q: want timer, strict, kill or join\n", s)
			os.Exit(2)
		}
	}
	if c.dir == "" {
		d, err := os.MkdirTemp("", "ratebench-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "ratebench:", err)
			os.Exit(1)
		}
		c.dir = d
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "ratebench:", err)
		stop()
		os.Exit(1) //nolint:gocritic // stop() ran
	}
}

func run(ctx context.Context, c config) error {
	fmt.Printf("ratebench: %s, square=%d/s, %d jobs, %d shards, runs in %s\n", c.bin, c.rate, c.rate*c.seconds, c.shards, c.dir)
	results := map[string][]result{}
	for i := range c.runs {
		for _, s := range c.scenarios {
			dir := filepath.Join(c.dir, fmt.Sprintf("%s-%d", s, i+1))
			r, err := runOnce(ctx, c, s, dir)
			if err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("%s run %d: %w (logs in %s)", s, i+1, err, dir)
				}
				// One failed run does not stop the others; it is left
				// out of the summary and said so.
				fmt.Printf("RUN-FAILED %s %d: %v (logs in %s)\n", s, i+1, err, dir)
				continue
			}
			line, _ := json.Marshal(r)
			fmt.Printf("RUN %s\n", line)
			results[s] = append(results[s], r)
		}
	}
	fmt.Println()
	printSummary(os.Stdout, c, results)
	return nil
}

// result is one run's figures.
type result struct {
	Scenario  string  `json:"scenario"`
	Dir       string  `json:"dir"`
	Handouts  int     `json:"handouts"`
	Rate      float64 `json:"rate"`       // overall, hand-outs/s
	MaxWindow int     `json:"max_window"` // most hand-outs in any 1 s window
	MaxGapMS  float64 `json:"max_gap_ms"` // longest gap between hand-outs
	Missed    int64   `json:"missed"`     // events deleted before the tail read them
	EventNote string  `json:"event,omitempty"`
	// Incomplete says why the run ended before every job was done (its
	// figures cover the hand-outs until then).
	Incomplete string `json:"incomplete,omitempty"`
	// Kill: from the kill to the end of the longest gap in the 10 s after
	// it; the most hand-outs in a 1 s window from 5 s before to 10 s after.
	ResumeMS     float64 `json:"resume_ms,omitempty"`
	AroundWindow int     `json:"around_window,omitempty"`
	// KillGapStartMS is when that longest gap began, after the kill.
	KillGapStartMS float64 `json:"kill_gap_start_ms,omitempty"`
	// Join: the longest gap from the start of the new backend to 15 s after.
	JoinGapMS float64 `json:"join_gap_ms,omitempty"`
}

func runOnce(ctx context.Context, c config, scenario, dir string) (res result, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, err
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return res, err
	}
	res = result{Scenario: scenario, Dir: dir}
	ports := []int{c.portBase, c.portBase + 1, c.portBase + 2}
	seeds := make([]string, len(ports))
	for i, p := range ports {
		seeds[i] = "127.0.0.1:" + strconv.Itoa(p)
	}
	rate := fmt.Sprintf("--rate=square=%d/s", c.rate)
	if scenario == "strict" || ((scenario == "kill" || scenario == "join") && c.eventMode == "strict") {
		rate += ":strict"
	}
	common := []string{"--seeds=" + strings.Join(seeds, ","), "--shards=" + strconv.Itoa(c.shards)}
	backendArgs := func(p int) []string {
		return append([]string{strconv.Itoa(p)}, append(slices.Clone(common), rate, "--data", data)...)
	}
	var procs []*proc
	defer func() { stopAll(procs, 5*time.Second) }()
	start := func(name string, args ...string) (*proc, error) {
		p, err := startProc(dir, name, c.bin, args...)
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
		return p, nil
	}
	nBackends := 3
	if scenario == "join" {
		nBackends = 2
	}
	backends := map[int]*proc{}
	for _, p := range ports[:nBackends] {
		b, err := start(fmt.Sprintf("backend-%d", p), backendArgs(p)...)
		if err != nil {
			return res, err
		}
		backends[p] = b
	}
	for _, p := range ports[:nBackends] {
		if err := backends[p].waitLine(60*time.Second, "node started"); err != nil {
			return res, err
		}
	}
	front, err := start("frontend", append([]string{strconv.Itoa(c.frontPort)}, append(slices.Clone(common), "--produce=false")...)...)
	if err != nil {
		return res, err
	}
	for i := range 2 {
		if _, err := start(fmt.Sprintf("worker-%d", i+1), append([]string{"0"}, append(slices.Clone(common),
			"--workers", strconv.Itoa(c.workers), "--window", strconv.Itoa(c.window), "--delay", "0")...)...); err != nil {
			return res, err
		}
	}
	if err := front.waitLine(60*time.Second, "node started"); err != nil {
		return res, err
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", c.frontPort+5000)
	api, err := httpapi.NewClient(base)
	if err != nil {
		return res, err
	}
	if err := waitShards(ctx, api, c.shards, 60*time.Second); err != nil {
		return res, err
	}
	// Let the workers register with every shard before the backlog, so
	// the first second is not limited by registration.
	time.Sleep(2 * time.Second)

	tail, err := openTail(filepath.Join(data, node.JournalFile), c.shards)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, tail.close()) }()
	tailCtx, cancelTail := context.WithCancel(ctx)
	tailDone := make(chan error, 1)
	go func() { tailDone <- tail.follow(tailCtx, 100*time.Millisecond) }()
	stopped := false
	stopTail := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancelTail()
		if terr := <-tailDone; terr != nil && !errors.Is(terr, context.Canceled) {
			return terr
		}
		return nil
	}
	defer func() { err = errors.Join(err, stopTail()) }()

	total := c.rate * c.seconds
	if err := submitBacklog(ctx, base, total); err != nil {
		return res, err
	}
	first, err := tail.waitCount(ctx, 1, 30*time.Second)
	if err != nil {
		return res, err
	}
	var eventAt time.Time
	switch scenario {
	case "kill":
		if err := sleepUntil(ctx, first.Add(c.eventAt)); err != nil {
			return res, err
		}
		port, err := throttlerPort(ctx, api, ports)
		if err != nil {
			return res, err
		}
		eventAt = time.Now()
		backends[port].kill()
		res.EventNote = fmt.Sprintf("SIGKILL backend %d (the throttler's) at %.1f s", port, eventAt.Sub(first).Seconds())
	case "join":
		if err := sleepUntil(ctx, first.Add(c.eventAt)); err != nil {
			return res, err
		}
		eventAt = time.Now()
		b, err := start(fmt.Sprintf("backend-%d", ports[2]), backendArgs(ports[2])...)
		if err != nil {
			return res, err
		}
		if err := b.waitLine(60*time.Second, "node started"); err != nil {
			return res, err
		}
		res.EventNote = fmt.Sprintf("backend %d started at %.1f s, joined after %.1f s", ports[2], eventAt.Sub(first).Seconds(), time.Since(eventAt).Seconds())
	}
	// Wait for every job's hand-out (a re-hand-out after a failover counts
	// too, so at least total), but no longer than -limit times the
	// backlog's time: a run that falls that far behind is reported with
	// what it handed out, marked incomplete.
	limit := time.Duration(float64(c.seconds)*c.limit) * time.Second
	if _, err := tail.waitCount(ctx, total, time.Until(first.Add(limit))); err != nil {
		if ctx.Err() != nil {
			return res, err
		}
		res.Incomplete = err.Error()
	} else if err := waitDone(ctx, api, total, max(10*time.Second, time.Until(first.Add(limit)))); err != nil {
		// A job handed out again after a failover also counts, so the
		// count can reach total before the last first hand-outs: wait
		// until the shards report every job done, then read what is left.
		if ctx.Err() != nil {
			return res, err
		}
		res.Incomplete = err.Error()
	}
	time.Sleep(500 * time.Millisecond)
	if err := stopTail(); err != nil {
		return res, err
	}
	if err := tail.poll(context.WithoutCancel(ctx)); err != nil {
		return res, err
	}
	ts := tail.sorted()
	// Every hand-out time, for a closer look (one Unix nanosecond a line).
	var dump bytes.Buffer
	for _, t := range ts {
		fmt.Fprintln(&dump, t.UnixNano())
	}
	if err := os.WriteFile(filepath.Join(dir, "handouts.txt"), dump.Bytes(), 0o644); err != nil {
		return res, fmt.Errorf("ratebench: %w", err)
	}
	res.Handouts = len(ts)
	res.Missed = tail.missed
	res.Rate = overallRate(ts)
	res.MaxWindow, _ = mostInWindow(ts, time.Second)
	res.MaxGapMS = ms(longestGap(ts, time.Time{}, time.Time{}))
	switch scenario {
	case "kill":
		gap, end := longestGapEnd(ts, eventAt, eventAt.Add(10*time.Second))
		res.ResumeMS = ms(end.Sub(eventAt))
		// Where that gap began: near 0 when dispatch stopped at the kill;
		// later, when it went on and the longest pause came afterwards.
		res.KillGapStartMS = ms(end.Add(-gap).Sub(eventAt))
		res.AroundWindow, _ = mostInWindow(between(ts, eventAt.Add(-5*time.Second), eventAt.Add(10*time.Second)), time.Second)
	case "join":
		res.JoinGapMS = ms(longestGap(ts, eventAt, eventAt.Add(15*time.Second)))
	}
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}

// waitShards waits until GET /status shows every shard's master reachable.
func waitShards(ctx context.Context, api *httpapi.Client, shards int, d time.Duration) error {
	deadline := time.Now().Add(d)
	var last string
	for time.Now().Before(deadline) {
		st, err := api.Status(ctx)
		if err == nil {
			up := 0
			for _, s := range st.Shards {
				if s.Master.Reachable {
					up++
				}
			}
			if up == shards || (shards == 1 && st.Master.Reachable) {
				return nil
			}
			last = fmt.Sprintf("%d of %d shards answer", up, shards)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("the shards did not all answer within %v: %s", d, last)
}

// waitDone waits until GET /status counts total jobs done over the shards.
func waitDone(ctx context.Context, api *httpapi.Client, total int, d time.Duration) error {
	deadline := time.Now().Add(d)
	var last httpapi.QueueInfo
	for time.Now().Before(deadline) {
		if st, err := api.Status(ctx); err == nil {
			up := len(st.Shards) > 0
			for _, s := range st.Shards {
				up = up && s.Master.Reachable
			}
			last = st.Queue
			if up && st.Queue.Done >= int64(total) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return fmt.Errorf("not every job done within %v: %+v", d, last)
}

// throttlerPort asks GET /status where square's throttler runs and returns
// that backend's port.
func throttlerPort(ctx context.Context, api *httpapi.Client, ports []int) (int, error) {
	st, err := api.Status(ctx)
	if err != nil {
		return 0, fmt.Errorf("finding the throttler: %w", err)
	}
	for _, th := range st.Throttlers {
		if th.JobType != "square" {
			continue
		}
		for _, p := range ports {
			if strings.HasSuffix(th.Address, ":"+strconv.Itoa(p)) {
				return p, nil
			}
		}
		return 0, fmt.Errorf("square's throttler is at %q (%s), not on a backend", th.Address, th.Error)
	}
	return 0, fmt.Errorf("GET /status lists no throttler for square: %+v", st.Throttlers)
}

// submitBacklog submits n square jobs through POST /work/batch, 1000 a
// request, and checks every one was accepted.
func submitBacklog(ctx context.Context, base string, n int) error {
	const batch = 1000
	hc := &http.Client{Timeout: 60 * time.Second}
	tries := 0
	for from := 0; from < n; from += batch {
		var b bytes.Buffer
		b.WriteByte('[')
		for i := from; i < min(n, from+batch); i++ {
			if i > from {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":"r-%d","type":"square","payload":%d}`, i, i)
		}
		b.WriteByte(']')
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+httpapi.PathWorkBatch, &b)
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("submitting the backlog: %w", err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		var br httpapi.BatchResponse
		if err := json.Unmarshal(body, &br); err != nil || br.Rejected > 0 {
			// Ids make a retry safe; a batch the cluster could not take
			// at once (503 items) is sent again whole.
			if tries++; tries < 5 {
				from -= batch
				time.Sleep(time.Second)
				continue
			}
			return fmt.Errorf("submitting the backlog: %s: %.300s", resp.Status, body)
		}
		tries = 0
	}
	return nil
}
