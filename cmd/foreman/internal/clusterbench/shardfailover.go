package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/node"
)

// shardfailover measures issue 14's independent failover: with several
// shards, killing the backend that hosts shard k's master must pause only
// the shards whose masters were on it. Each round starts fresh processes
// (-backends backends on one journal, a frontend process, worker
// processes, all with --shards N), submits to every shard at a steady rate
// through the frontend's HTTP API, asks GET /status where shard k's master
// runs, SIGKILLs that backend and records every ack. Per shard it reports
// the largest ack gap of the shards that were not on the killed backend
// while k fails over (target: under 50 ms), the same figure over a window
// as long just before the kill (what the machine gives without a
// failover), and k's own pause.

// shardFailoverResult is one round: kill the backend hosting shard k.
type shardFailoverResult struct {
	shard  int
	killed int   // port of the killed backend
	moved  []int // the shards whose masters were on it (k among them)
	// pause is the largest ack gap of shard k around the kill.
	pause time.Duration
	// others is the largest ack gap over the shards not on the killed
	// backend, from the kill until k acked again plus -tail; before is the
	// same over a window as long just before the kill.
	others, before time.Duration
	// othersAt is when the others' largest gap started, from the kill.
	othersAt time.Duration
	window   time.Duration
	// movedMax is the largest pause of the other shards that moved with k.
	movedMax time.Duration
}

func runShardFailover(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("clusterbench shardfailover", flag.ContinueOnError)
	var c common
	c.register(fs)
	fs.IntVar(&c.shards, "shards", 4, "masters the work is sharded over (foreman --shards of every node)")
	backends := fs.Int("backends", 3, "backend processes (2-9), all on one journal")
	rounds := fs.Int("rounds", 3, "rounds per shard: each kills the backend hosting that shard's master, in fresh processes; shards interleave")
	rate := fs.Int("rate", 200, "jobs submitted per second to each shard (open loop, through the frontend process's HTTP API)")
	procs := fs.Int("worker-procs", 2, "worker processes")
	workers := fs.Int("workers", 2, "workers per worker process")
	settle := fs.Duration("settle", 3*time.Second, "steady load before the kill")
	tail := fs.Duration("tail", time.Second, "how long the measurement goes on after shard k acks again")
	level := fs.String("log-level", "info", "log level of the foreman processes")
	only := fs.Int("shard", -1, "measure only this shard (default: every shard)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	switch {
	case c.shards < 2 || c.shards > node.MaxShards:
		return fmt.Errorf("-shards %d: must be 2 to %d", c.shards, node.MaxShards)
	case *backends < 2 || *backends > 9:
		return fmt.Errorf("-backends %d: must be 2 to 9", *backends)
	case *rounds < 1 || *rate <= 0 || *procs < 1 || *workers < 1:
		return errors.New("-rounds, -rate, -worker-procs and -workers must be positive")
	case *only >= c.shards:
		return fmt.Errorf("-shard %d: the run has shards 0-%d", *only, c.shards-1)
	}
	if c.base+*backends-1 > node.BackendPortMax {
		return fmt.Errorf("-base %d: %d backends need ports up to %d", c.base, *backends, node.BackendPortMax)
	}
	fmt.Printf("shardfailover: %d shards, %d backends (one journal), a frontend process, %d worker processes x %d workers; %d jobs/s to each shard over HTTP; %d rounds per shard\n",
		c.shards, *backends, *procs, *workers, *rate, *rounds)
	fmt.Printf("%5s %5s %6s %8s %9s %10s %10s %10s %10s %10s\n", "round", "shard", "killed", "moved", "pause_ms", "others_ms", "others_at", "before_ms", "window_ms", "comoved_ms")
	var all []shardFailoverResult
	for r := 1; r <= *rounds; r++ {
		for k := range c.shards {
			if *only >= 0 && k != *only {
				continue
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			res, err := shardFailoverOnce(ctx, &c, k, *backends, *rate, *procs, *workers, *settle, *tail, *level)
			if err != nil {
				return fmt.Errorf("round %d, shard %d: %w", r, k, err)
			}
			all = append(all, res)
			co := "-"
			if len(res.moved) > 1 {
				co = fmt.Sprintf("%.0f", ms(res.movedMax))
			}
			fmt.Printf("%5d %5d %6d %8s %9.0f %10.1f %10.0f %10.1f %10.0f %10s\n", r, k, res.killed, joinInts(res.moved),
				ms(res.pause), ms(res.others), ms(res.othersAt), ms(res.before), ms(res.window), co)
		}
	}
	fmt.Println("per shard k, over its rounds: median (min-max) in ms")
	fmt.Printf("%5s %28s %28s %28s\n", "shard", "k's pause", "others' largest gap", "same window before the kill")
	var pause, others, before []float64
	for k := range c.shards {
		var p, o, b []float64
		for _, r := range all {
			if r.shard == k {
				p, o, b = append(p, ms(r.pause)), append(o, ms(r.others)), append(b, ms(r.before))
			}
		}
		if len(p) == 0 {
			continue
		}
		pause, others, before = append(pause, p...), append(others, o...), append(before, b...)
		fmt.Printf("%5d %28s %28s %28s\n", k, medMinMax(p), medMinMax(o), medMinMax(b))
	}
	fmt.Printf("%5s %28s %28s %28s\n", "all", medMinMax(pause), medMinMax(others), medMinMax(before))
	return nil
}

// ms converts d to milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// medMinMax formats "median (min-max)" of xs.
func medMinMax(xs []float64) string {
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return fmt.Sprintf("%.1f (%.1f-%.1f)", med, s[0], s[len(s)-1])
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// shardIDs makes work ids of one shard: id(prefix, s) is a fresh id that
// route.ShardOf puts on shard s of n.
type shardIDs struct {
	n    int
	mu   sync.Mutex
	next []int // per shard: the candidate counter
}

func newShardIDs(n int) *shardIDs { return &shardIDs{n: n, next: make([]int, n)} }

// id returns a fresh work id on shard s with the given prefix.
func (g *shardIDs) id(prefix string, s int) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		g.next[s]++
		id := prefix + "-" + strconv.Itoa(s) + "-" + strconv.Itoa(g.next[s])
		if route.ShardOf(id, g.n) == s {
			return id
		}
	}
}

// ackLog records, per shard, when each of its jobs was sent and acked.
type ackLog struct {
	mu   sync.Mutex
	acks [][]time.Time // by shard, in the order recorded
	sent [][]time.Time // by shard: when each acked job was sent
}

func (a *ackLog) add(shard int, sent, at time.Time) {
	a.mu.Lock()
	a.acks[shard] = append(a.acks[shard], at)
	a.sent[shard] = append(a.sent[shard], sent)
	a.mu.Unlock()
}

// ackedSentAfter returns the first ack of a job of shard sent after t.
func (a *ackLog) ackedSentAfter(shard int, t time.Time) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var first time.Time
	for i, s := range a.sent[shard] {
		if s.After(t) && (first.IsZero() || a.acks[shard][i].Before(first)) {
			first = a.acks[shard][i]
		}
	}
	return first, !first.IsZero()
}

// largestGap returns the longest stretch of [from, to] in which shard
// acked nothing (the stretch from the last ack before from counts from
// from; the one after the last ack runs to to).
func (a *ackLog) largestGap(shard int, from, to time.Time) time.Duration {
	gap, _ := a.largestGapAt(shard, from, to)
	return gap
}

// largestGapAt is largestGap and where that stretch starts.
func (a *ackLog) largestGapAt(shard int, from, to time.Time) (time.Duration, time.Time) {
	a.mu.Lock()
	ts := slices.Clone(a.acks[shard])
	a.mu.Unlock()
	slices.SortFunc(ts, func(x, y time.Time) int { return x.Compare(y) })
	var gap time.Duration
	at, prev := from, from
	for _, t := range ts {
		if !t.After(from) {
			continue
		}
		if t.After(to) {
			break
		}
		if t.Sub(prev) > gap {
			gap, at = t.Sub(prev), prev
		}
		prev = t
	}
	if to.Sub(prev) > gap {
		gap, at = to.Sub(prev), prev
	}
	return gap, at
}

// shardFailoverOnce runs one round in fresh processes: kill the backend
// hosting shard k's master.
func shardFailoverOnce(ctx context.Context, c *common, k, backends, rate, procs, workers int, settle, tail time.Duration, level string) (shardFailoverResult, error) {
	res := shardFailoverResult{shard: k}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	rc := *c
	if rc.dir != "" {
		// Every round its own journal and logs.
		rc.dir = filepath.Join(rc.dir, fmt.Sprintf("shard-%d-%d", k, time.Now().UnixMilli()))
	}
	dir, cleanup, err := rc.workdir()
	if err != nil {
		return res, err
	}
	defer cleanup()
	jarg, dropJournal, err := c.prepareJournal(ctx, dir)
	if err != nil {
		return res, err
	}
	defer dropJournal()
	seeds := make([]string, backends)
	for i := range seeds {
		seeds[i] = "127.0.0.1:" + strconv.Itoa(c.base+i)
	}
	member := []string{"--seeds", strings.Join(seeds, ",")}
	if m, _ := node.ParseMembership(c.membership); m.IsEtcd() {
		member = []string{"--membership", m.String()}
	}
	shardArgs := []string{"--shards", strconv.Itoa(c.shards), "--log-level", level}

	var ps []*proc
	defer func() { stopAll(ps, 10*time.Second) }()
	byPort := map[int]*proc{}
	for i := range backends {
		port := c.base + i
		p, err := startProc(dir, fmt.Sprintf("backend-%d", port), c.foreman,
			append(append([]string{strconv.Itoa(port), "--data", filepath.Join(dir, "data"), jarg}, member...), shardArgs...)...)
		if err != nil {
			return res, err
		}
		ps, byPort[port] = append(ps, p), p
	}
	for _, p := range ps {
		if err := p.waitLine("node started", time.Minute); err != nil {
			return res, err
		}
	}
	for i := range procs {
		p, err := startProc(dir, fmt.Sprintf("worker-%d", i), c.foreman,
			append(append([]string{"0", "--workers", strconv.Itoa(workers), "--delay", "0"}, member...), shardArgs...)...)
		if err != nil {
			return res, err
		}
		ps = append(ps, p)
	}
	fport := c.base + 1001
	front, err := startProc(dir, fmt.Sprintf("frontend-%d", fport), c.foreman,
		append(append([]string{strconv.Itoa(fport), "--produce=false"}, member...), shardArgs...)...)
	if err != nil {
		return res, err
	}
	ps = append(ps, front)
	tr := &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512}
	hc, err := httpapi.NewClient(fmt.Sprintf("http://127.0.0.1:%d", fport+5000),
		httpapi.WithHTTPClient(&http.Client{Transport: tr, Timeout: time.Minute}))
	if err != nil {
		return res, err
	}
	defer tr.CloseIdleConnections()

	// Every backend a member and every shard's master up.
	if _, err := waitShardMasters(ctx, hc, c.shards, backends, time.Minute); err != nil {
		return res, err
	}

	// Steady load on every shard.
	ids := newShardIDs(c.shards)
	acks := &ackLog{acks: make([][]time.Time, c.shards), sent: make([][]time.Time, c.shards)}
	lctx, lcancel := context.WithCancel(ctx)
	var lwg sync.WaitGroup
	var failMu sync.Mutex
	var failed error
	for s := range c.shards {
		lwg.Add(1)
		go func() {
			defer lwg.Done()
			t := time.NewTicker(time.Second / time.Duration(rate))
			defer t.Stop()
			for {
				select {
				case <-lctx.Done():
					return
				case <-t.C:
				}
				id := ids.id("j", s)
				lwg.Add(1)
				go func() {
					defer lwg.Done()
					sent := time.Now()
					sctx, scancel := context.WithTimeout(lctx, time.Minute)
					defer scancel()
					if _, err := hc.Submit(sctx, httpapi.SubmitRequest{ID: id, Type: "square", Payload: []byte("7")}); err != nil {
						if lctx.Err() == nil {
							failMu.Lock()
							failed = errors.Join(failed, fmt.Errorf("submit %s: %w", id, err))
							failMu.Unlock()
						}
						return
					}
					acks.add(s, sent, time.Now())
				}()
			}
		}()
	}
	stopLoad := func() { lcancel(); lwg.Wait() }
	defer stopLoad()
	if err := sleepCtx(ctx, settle); err != nil {
		return res, err
	}

	// Where the masters are now (the view at the kill); kill shard k's host.
	masters, err := waitShardMasters(ctx, hc, c.shards, backends, 10*time.Second)
	if err != nil {
		return res, err
	}
	host := masters[k]
	for s, a := range masters {
		if a == host {
			res.moved = append(res.moved, s)
		}
	}
	_, portStr, _ := strings.Cut(host, ":")
	res.killed, _ = strconv.Atoi(portStr)
	victim := byPort[res.killed]
	if victim == nil {
		return res, fmt.Errorf("shard %d's master is at %s, not one of this run's backends", k, host)
	}
	t0 := time.Now()
	victim.kill()
	if c.keep {
		fmt.Fprintf(os.Stderr, "killed %s (masters of shards %s) at %s; logs in %s\n", victim.name, joinInts(res.moved), t0.UTC().Format("15:04:05.000"), dir)
	}

	// Until shard k acks a job sent after the kill, then -tail more.
	deadline := time.Now().Add(60 * time.Second)
	var back time.Time
	for {
		if at, ok := acks.ackedSentAfter(k, t0); ok {
			back = at
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("shard %d acked nothing sent after the kill within 60 s (logs in %s with -keep)", k, dir)
		}
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return res, err
		}
	}
	end := back.Add(tail)
	if err := sleepCtx(ctx, time.Until(end)+50*time.Millisecond); err != nil {
		return res, err
	}
	stopLoad()
	failMu.Lock()
	defer failMu.Unlock()
	if failed != nil {
		return res, failed
	}
	res.window = end.Sub(t0)
	bfrom := t0.Add(-min(res.window, settle-500*time.Millisecond))
	res.pause = acks.largestGap(k, t0.Add(-time.Second), end)
	for s := range c.shards {
		if slices.Contains(res.moved, s) {
			if s != k {
				res.movedMax = max(res.movedMax, acks.largestGap(s, t0.Add(-time.Second), end))
			}
			continue
		}
		if g, at := acks.largestGapAt(s, t0, end); g > res.others {
			res.others, res.othersAt = g, at.Sub(t0)
		}
		res.before = max(res.before, acks.largestGap(s, bfrom, t0))
	}
	return res, nil
}

// waitShardMasters asks GET /status until every shard's master answers and
// every one of the run's backends is a member, and returns each shard's
// master's address.
func waitShardMasters(ctx context.Context, hc *httpapi.Client, shards, backends int, within time.Duration) ([]string, error) {
	deadline := time.Now().Add(within)
	var last string
	for {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		info, err := hc.Status(sctx)
		cancel()
		if err == nil && countBackends(info) < backends {
			last = fmt.Sprintf("%d of %d backends are members", countBackends(info), backends)
		} else if err == nil && len(info.Shards) == shards {
			addrs := make([]string, shards)
			ok := true
			for _, s := range info.Shards {
				if !s.Master.Reachable || s.Master.Address == "" || s.Shard < 0 || s.Shard >= shards {
					ok = false
					last = fmt.Sprintf("shard %d: %s", s.Shard, s.Master.Error)
					break
				}
				addrs[s.Shard] = s.Master.Address
			}
			if ok {
				return addrs, nil
			}
		} else if err != nil {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("not every shard's master answered GET /status within %v (last: %s)", within, last)
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// countBackends counts the backend members in info.
func countBackends(info *httpapi.StatusInfo) int {
	n := 0
	for _, m := range info.Members {
		if slices.Contains(m.Roles, httpapi.RoleBackend) {
			n++
		}
	}
	return n
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
