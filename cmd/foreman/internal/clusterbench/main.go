// Command clusterbench measures a Foreman cluster of real processes on
// loopback (issue 4): the failover time of the singleton master and the
// end-to-end throughput of durable jobs through the actor API.
//
// It starts foreman processes (backends, workers) from a built binary, joins
// the cluster itself as a frontend client (cluster/node with the seed
// membership, the same code as `foreman 3001`), and stops every process it
// started, by PID.
//
//	go build -o /tmp/foreman ./cmd/foreman
//	go run ./cmd/foreman/internal/clusterbench failover -foreman /tmp/foreman -runs 7
//	go run ./cmd/foreman/internal/clusterbench throughput -foreman /tmp/foreman -jobs 100000 -worker-procs 2 -workers 4 -window 32
//	go run ./cmd/foreman/internal/clusterbench throughput -foreman /tmp/foreman -jobs 10000 -shards 4 -skew 0.8 -window 8
//	go run ./cmd/foreman/internal/clusterbench pauses -foreman /tmp/foreman -pauses 30 -pause 100ms
//	go run ./cmd/foreman/internal/clusterbench shardfailover -foreman /tmp/foreman -shards 4 -backends 3 -rounds 3
//
// Worker processes are `foreman 0 --workers K --window N --delay 0`.
//
// Throughput's -skew F (issue 14 item 2) skews the ids over the shards:
// job i (1..count) of a phase is made to land on shard 0 (an id that
// route.ShardOf puts there, see shardIDs) when floor(i*F) > floor((i-1)*F),
// which picks floor(count*F) jobs spread evenly through the phase; every
// other job keeps the usual id prefix-i, which the hash spreads uniformly
// over all N shards (shard 0 included). Shard 0 thus gets about
// F + (1-F)/N of the jobs and each other shard (1-F)/N. F = 0 is the
// uniform run. The run prints, per shard, the jobs its master accepted
// and completed during the measured phase, and the work handed out to
// workers (in_progress summed over the shards, sampled every 100 ms): with
// skew, workers should stay as busy as without, pulling from shard 0
// while the others are empty.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/cluster"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/messages"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "failover":
		err = runFailover(ctx, os.Args[2:])
	case "failover-once":
		err = runFailoverOnce(ctx, os.Args[2:])
	case "throughput":
		err = runThroughput(ctx, os.Args[2:])
	case "pauses":
		err = runPauses(ctx, os.Args[2:])
	case "shardfailover":
		err = runShardFailover(ctx, os.Args[2:])
	default:
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "clusterbench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: clusterbench failover|throughput|pauses|shardfailover [flags] (see -h of each)")
}

// common are the flags of every mode.
type common struct {
	foreman string
	base    int
	keep    bool
	dir     string
	// journal is sqlite or a postgres:// URL (services.go).
	journal string
	// membership is seeds or etcd://host:port[,host:port].
	membership string
	// shards is the number of masters (throughput mode's -shards; 1
	// elsewhere).
	shards int
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.foreman, "foreman", "", "path of a built foreman binary (required): go build -o /tmp/foreman ./cmd/foreman")
	fs.IntVar(&c.base, "base", 2850, "port of the first backend (2000-2998); the second is base+1, this program's frontend base+1000; membership uses port+4000")
	fs.BoolVar(&c.keep, "keep", false, "keep the logs and journal directory")
	fs.StringVar(&c.dir, "dir", "", "directory for logs and the journal (default: a new temporary directory)")
	fs.StringVar(&c.journal, "journal", "sqlite", "journal of the backends: sqlite (a file in the run's directory) or postgres://... of a server where this program may create a database (each run gets a fresh one, dropped after)")
	fs.StringVar(&c.membership, "membership", node.MembershipSeeds, "membership of every node: seeds, or etcd://host:port[,host:port] (an etcd the runs share)")
}

func (c *common) check() error {
	if c.foreman == "" {
		return errors.New("-foreman is required: build the binary with go build -o /tmp/foreman ./cmd/foreman and pass -foreman /tmp/foreman")
	}
	if _, err := os.Stat(c.foreman); err != nil {
		return fmt.Errorf("-foreman %s: %w", c.foreman, err)
	}
	if c.base < node.BackendPortMin || c.base+1 > node.BackendPortMax {
		return fmt.Errorf("-base %d: backends need ports in %d-%d", c.base, node.BackendPortMin, node.BackendPortMax)
	}
	return c.checkServices()
}

func (c *common) seeds() string {
	return fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", c.base, c.base+1)
}

// workdir makes the run's directory; the returned func removes it unless
// -keep.
func (c *common) workdir() (string, func(), error) {
	if c.dir != "" {
		return c.dir, func() {}, os.MkdirAll(c.dir, 0o755)
	}
	d, err := os.MkdirTemp("", "clusterbench-*")
	if err != nil {
		return "", nil, err
	}
	return d, func() {
		if c.keep {
			fmt.Fprintln(os.Stderr, "logs kept in", d)
			return
		}
		if err := os.RemoveAll(d); err != nil {
			fmt.Fprintln(os.Stderr, "clusterbench: removing the log directory:", err)
		}
	}, nil
}

// startClient joins the cluster as a frontend client node on port.
func startClient(ctx context.Context, dir string, port int, c *common, level string, onResult func(*messages.WorkResult), sec *benchTLS) (*node.ClusterNode, func(), error) {
	f, err := os.Create(filepath.Join(dir, "client.log"))
	if err != nil {
		return nil, nil, err
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("-log-level %q: use debug, info, warn or error", level), f.Close())
	}
	log := slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: l}))
	prov, err := node.NewMembership(c.membership, strings.Split(c.seeds(), ","), "127.0.0.1", log, sec.material())
	if err != nil {
		return nil, nil, errors.Join(err, f.Close())
	}
	n, err := node.StartCluster(ctx, node.ClusterConfig{
		Role: node.RoleFrontend, Port: port, Provider: prov, Logger: log, OnResult: onResult, TLS: sec.material(), Shards: c.shards,
	})
	if err != nil {
		return nil, nil, errors.Join(err, f.Close())
	}
	return n, func() {
		n.Kill()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "clusterbench: client log:", err)
		}
	}, nil
}

// ---------------------------------------------------------------- failover

// failoverResult is one failover measurement; durations in milliseconds,
// all measured from the SIGKILL.
type failoverResult struct {
	// FirstAck is when the first job submitted to the cluster was acked by
	// the new master (the old one's process is gone by then).
	FirstAck float64 `json:"first_ack_ms"`
	// FirstFreshAck is the first ack of a job first sent after the kill.
	FirstFreshAck float64 `json:"first_fresh_ack_ms"`
	// NextAck is the ack of the first job sent after the kill (within 1/rate
	// of it): what a client that submits one job after another sees, the
	// failover time as issue 12 measures it (SIGKILL to the first 201 of a
	// submission started after it).
	NextAck float64 `json:"next_ack_ms"`
	// Detect is when this client's topology dropped the killed member.
	Detect float64 `json:"detect_ms"`
	// Recovered is when the new master logged "master recovered".
	Recovered float64 `json:"recovered_ms"`
	// RecoveryTook is the recovery time the new master logged (journal load).
	RecoveryTook float64 `json:"recovery_took_ms"`
	// InFlightMax is when the last job that was in flight at the kill was
	// acked (those requests wait for the ask timeout, then retry).
	InFlightMax float64 `json:"in_flight_max_ms"`
	// InFlight is how many jobs were in flight at the kill.
	InFlight int `json:"in_flight"`
	// Killed is the port of the backend that hosted the master.
	Killed int `json:"killed_port"`
	// Events is the journal's length at the kill (the prefill and the jobs
	// since, as the new master's recovered seq).
	Events int `json:"journal_seq"`
}

func runFailover(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("clusterbench failover", flag.ContinueOnError)
	var c common
	c.register(fs)
	runs := fs.Int("runs", 5, "measurements (each in a fresh set of processes)")
	prefill := fs.Int("prefill", 2000, "jobs accepted before the kill (no workers run, so the new master recovers them all as pending)")
	rate := fs.Int("rate", 100, "jobs submitted per second during the measurement (open loop, each with the frontend client's default retries)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("failover: %d runs, 2 backends, prefill %d jobs, %d jobs/s offered, default settings\n", *runs, *prefill, *rate)
	fmt.Printf("%4s %6s %10s %12s %10s %12s %12s %11s %10s %12s\n", "run", "killed", "detect_ms", "recovered_ms", "took_ms", "first_ack_ms", "fresh_ack_ms", "next_ack_ms", "in_flight", "inflight_max")
	var all []failoverResult
	for i := 1; i <= *runs && ctx.Err() == nil; i++ {
		cmdArgs := []string{"failover-once", "-foreman", c.foreman, "-base", strconv.Itoa(c.base),
			"-prefill", strconv.Itoa(*prefill), "-rate", strconv.Itoa(*rate), "-journal", c.journal, "-membership", c.membership}
		if c.keep {
			cmdArgs = append(cmdArgs, "-keep")
		}
		cmd := exec.CommandContext(ctx, self, cmdArgs...)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("run %d: %w", i, err)
		}
		var r failoverResult
		if err := json.Unmarshal(out, &r); err != nil {
			return fmt.Errorf("run %d: reading %q: %w", i, out, err)
		}
		all = append(all, r)
		fmt.Printf("%4d %6d %10.0f %12.0f %10.0f %12.0f %12.0f %11.0f %10d %12.0f\n", i, r.Killed, r.Detect, r.Recovered, r.RecoveryTook, r.FirstAck, r.FirstFreshAck, r.NextAck, r.InFlight, r.InFlightMax)
	}
	pick := func(f func(failoverResult) float64) string {
		var xs []float64
		for _, r := range all {
			if v := f(r); v > 0 {
				xs = append(xs, v)
			}
		}
		return summary(xs)
	}
	fmt.Printf("detect (client drops the member):   %s\n", pick(func(r failoverResult) float64 { return r.Detect }))
	fmt.Printf("new master recovered:               %s\n", pick(func(r failoverResult) float64 { return r.Recovered }))
	fmt.Printf("  of which journal recovery:        %s\n", pick(func(r failoverResult) float64 { return r.RecoveryTook }))
	fmt.Printf("first ack from the new master:      %s\n", pick(func(r failoverResult) float64 { return r.FirstAck }))
	fmt.Printf("first ack of a job sent after kill: %s\n", pick(func(r failoverResult) float64 { return r.FirstFreshAck }))
	fmt.Printf("ack of the first job sent after kill (issue 12's failover): %s\n", pick(func(r failoverResult) float64 { return r.NextAck }))
	fmt.Printf("last ack of the in-flight jobs (runs with any): %s\n", pick(func(r failoverResult) float64 { return r.InFlightMax }))
	return nil
}

// summary formats median (min-max) in ms.
func summary(xs []float64) string {
	if len(xs) == 0 {
		return "no data"
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return fmt.Sprintf("median %.0f ms (min %.0f, max %.0f, n=%d)", med, s[0], s[len(s)-1], len(s))
}

// submission is one job of the failover run.
type submission struct {
	sent, acked time.Time
}

func runFailoverOnce(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("clusterbench failover-once", flag.ContinueOnError)
	var c common
	c.register(fs)
	prefill := fs.Int("prefill", 2000, "")
	rate := fs.Int("rate", 100, "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	if *rate <= 0 {
		return errors.New("-rate must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	dir, cleanup, err := c.workdir()
	if err != nil {
		return err
	}
	defer cleanup()
	jarg, dropJournal, err := c.prepareJournal(ctx, dir)
	if err != nil {
		return err
	}
	defer dropJournal()

	// Two backends on one journal; remember every "master recovered".
	type recovery struct {
		at    time.Time
		p     *proc
		epoch int
		took  time.Duration
		seq   int
	}
	var (
		mu         sync.Mutex
		recoveries []recovery
	)
	var backends []*proc
	defer func() { stopAll(backends, 10*time.Second) }()
	for i := range 2 {
		port := c.base + i
		p, err := startProc(dir, fmt.Sprintf("backend-%d", port), c.foreman, strconv.Itoa(port),
			c.memberFlag(), c.memberValue(), "--data", filepath.Join(dir, "data"), jarg, "--log-level", "info")
		if err != nil {
			return err
		}
		var lastTook time.Duration // of the persistence runtime's "recovered", logged just before
		p.watch(func(at time.Time, line string) {
			if strings.Contains(line, "msg=recovered ") {
				lastTook, _ = time.ParseDuration(stringField(line, "took"))
			}
			if e, ok := epochOf(line); ok {
				took := lastTook
				seq, _ := intField(line, "seq")
				mu.Lock()
				recoveries = append(recoveries, recovery{at: at, p: p, epoch: e, took: took, seq: seq})
				mu.Unlock()
			}
		})
		backends = append(backends, p)
	}
	for _, p := range backends {
		if err := p.waitLine("node started", time.Minute); err != nil {
			return err
		}
	}
	n, stopClient, err := startClient(ctx, dir, c.base+1000, &c, "warn", nil, nil)
	if err != nil {
		return err
	}
	defer stopClient()
	client := n.Client()

	var (
		killAt    atomic.Int64 // unix nanos of the SIGKILL, 0 before
		detectAt  atomic.Int64
		subsMu    sync.Mutex
		subs      []*submission
		submitted atomic.Int64
	)
	n.System().EventStream.Subscribe(func(evt any) {
		if t, ok := evt.(*cluster.ClusterTopology); ok && len(t.Left) > 0 && killAt.Load() != 0 {
			detectAt.CompareAndSwap(0, time.Now().UnixNano())
		}
	})
	submit := func(id string, s *submission) error {
		w := &messages.Work{WorkId: id, JobType: "square", Payload: []byte("7")}
		sctx, scancel := context.WithTimeout(ctx, time.Minute)
		defer scancel()
		err := client.Submit(sctx, w)
		if err == nil && s != nil {
			subsMu.Lock()
			s.acked = time.Now()
			subsMu.Unlock()
		}
		return err
	}

	// Prefill: the journal the new master recovers.
	var wg sync.WaitGroup
	var prefillErr atomic.Value
	next := atomic.Int64{}
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(*prefill) {
					return
				}
				if err := submit(fmt.Sprintf("pre-%d", i), nil); err != nil {
					prefillErr.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if e, ok := prefillErr.Load().(error); ok {
		return fmt.Errorf("prefill: %w", e)
	}

	// Open-loop load: a new job every 1/rate, each retried by the client.
	lctx, lcancel := context.WithCancel(ctx)
	var lwg sync.WaitGroup
	lwg.Add(1)
	go func() {
		defer lwg.Done()
		t := time.NewTicker(time.Second / time.Duration(*rate))
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-lctx.Done():
				return
			case <-t.C:
			}
			s := &submission{sent: time.Now()}
			subsMu.Lock()
			subs = append(subs, s)
			subsMu.Unlock()
			submitted.Add(1)
			lwg.Add(1)
			go func() {
				defer lwg.Done()
				_ = submit(fmt.Sprintf("load-%d", i), s)
			}()
		}
	}()
	defer func() { lcancel(); lwg.Wait() }()
	time.Sleep(2 * time.Second) // steady load before the kill

	// Kill the backend hosting the master: the one with the highest epoch.
	mu.Lock()
	var host recovery
	for _, r := range recoveries {
		if r.epoch > host.epoch {
			host = r
		}
	}
	mu.Unlock()
	if host.p == nil {
		return errors.New("no backend logged \"master recovered\"")
	}
	t0 := time.Now()
	killAt.Store(t0.UnixNano())
	host.p.kill()
	dead := time.Now()
	killedPort, _ := strconv.Atoi(host.p.cmd.Args[1])

	// Wait for an ack after the process is gone and a new recovery.
	deadline := time.Now().Add(60 * time.Second)
	var res failoverResult
	res.Killed = killedPort
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		subsMu.Lock()
		var first, fresh, inflightMax time.Time
		var next *submission
		inflight, pendingInflight := 0, 0
		for _, s := range subs {
			if s.sent.After(t0) && (next == nil || s.sent.Before(next.sent)) {
				next = s
			}
			if s.sent.Before(t0) && (s.acked.IsZero() || s.acked.After(t0)) {
				inflight++
				if s.acked.IsZero() {
					pendingInflight++
				} else if s.acked.After(inflightMax) {
					inflightMax = s.acked
				}
			}
			if s.acked.IsZero() || !s.acked.After(dead) {
				continue
			}
			if first.IsZero() || s.acked.Before(first) {
				first = s.acked
			}
			if s.sent.After(t0) && (fresh.IsZero() || s.acked.Before(fresh)) {
				fresh = s.acked
			}
		}
		var nextAcked time.Time
		if next != nil {
			nextAcked = next.acked
		}
		subsMu.Unlock()
		mu.Lock()
		var rec recovery
		for _, r := range recoveries {
			if r.epoch > host.epoch && r.at.After(t0) {
				rec = r
				break
			}
		}
		mu.Unlock()
		if first.IsZero() || fresh.IsZero() || rec.p == nil || pendingInflight > 0 || nextAcked.IsZero() {
			continue
		}
		res.NextAck = float64(nextAcked.Sub(t0).Microseconds()) / 1000
		ms := func(t time.Time) float64 { return float64(t.Sub(t0).Microseconds()) / 1000 }
		res.FirstAck, res.FirstFreshAck, res.Recovered = ms(first), ms(fresh), ms(rec.at)
		res.RecoveryTook = float64(rec.took.Microseconds()) / 1000
		res.Events = rec.seq
		res.InFlight = inflight
		if inflight > 0 {
			res.InFlightMax = ms(inflightMax)
		}
		if d := detectAt.Load(); d != 0 {
			res.Detect = float64(time.Duration(d-t0.UnixNano()).Microseconds()) / 1000
		}
		return json.NewEncoder(os.Stdout).Encode(res)
	}
	return fmt.Errorf("no ack from a new master within 60 s of the kill (logs in %s; use -keep)", dir)
}

// -------------------------------------------------------------- throughput

// errResultsLost: every job of a phase was acked, but not every result
// notification arrived.
var errResultsLost = errors.New("results lost")

func runThroughput(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("clusterbench throughput", flag.ContinueOnError)
	var c common
	c.register(fs)
	jobs := fs.Int("jobs", 50000, "jobs to submit and complete")
	submitters := fs.Int("submitters", 256, "concurrent submissions of this program's frontend client")
	procs := fs.Int("worker-procs", 2, "worker processes")
	workers := fs.Int("workers", 4, "workers per worker process")
	window := fs.Int("window", 1, "jobs each worker holds at once (foreman --window of the worker processes)")
	backends := fs.Int("backends", 1, "backend processes (1 or 2)")
	level := fs.String("log-level", "warn", "log level of the foreman processes")
	viaHTTP := fs.Bool("http", false, "submit through the HTTP API of a frontend process (foreman base+1001, HTTP on its port+5000) instead of this program's actor client")
	clientLevel := fs.String("client-log-level", "warn", "log level of this program's frontend client (client.log)")
	useTLS := fs.Bool("tls", false, "mutual TLS between all nodes (a CA and certificate made for the run), and HTTPS with a bearer token for -http")
	fs.IntVar(&c.shards, "shards", 1, "masters the work is sharded over (foreman --shards of every node)")
	skew := fs.Float64("skew", 0, "fraction F (0 <= F < 1) of each phase's jobs given ids that route.ShardOf puts on shard 0 (job i when floor(i*F) > floor((i-1)*F)); the other jobs keep uniform ids spread over all shards, so shard 0 gets about F + (1-F)/N of the jobs; 0: all uniform")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.shards < 1 || c.shards > node.MaxShards {
		return fmt.Errorf("-shards %d: must be 1 to %d", c.shards, node.MaxShards)
	}
	if !(*skew >= 0 && *skew < 1) {
		return fmt.Errorf("-skew %v: must be 0 <= F < 1", *skew)
	}
	shardArgs := []string{"--shards", strconv.Itoa(c.shards)}
	if err := c.check(); err != nil {
		return err
	}
	if *jobs <= 0 || *submitters <= 0 || *procs <= 0 || *workers <= 0 || *window <= 0 || *backends < 1 || *backends > 2 {
		return errors.New("-jobs, -submitters, -worker-procs, -workers and -window must be positive, -backends 1 or 2")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	dir, cleanup, err := c.workdir()
	if err != nil {
		return err
	}
	defer cleanup()
	jarg, dropJournal, err := c.prepareJournal(ctx, dir)
	if err != nil {
		return err
	}
	defer dropJournal()
	var sec *benchTLS
	if *useTLS {
		if m, _ := node.ParseMembership(c.membership); m.IsEtcd() {
			// The run's own CA cannot have signed the certificate of an
			// etcd the user started: its nodes could not verify it.
			return fmt.Errorf("-tls with -membership %s: the run makes its own CA, which cannot have signed that etcd's certificate; measure TLS with seeds membership", c.membership)
		}
		if sec, err = newBenchTLS(dir); err != nil {
			return err
		}
	}

	var ps []*proc
	defer func() { stopAll(ps, 15*time.Second) }()
	for i := range *backends {
		port := c.base + i
		p, err := startProc(dir, fmt.Sprintf("backend-%d", port), c.foreman,
			append(append([]string{strconv.Itoa(port), c.memberFlag(), c.memberValue(), "--data", filepath.Join(dir, "data"), jarg, "--log-level", *level}, shardArgs...), sec.nodeArgs()...)...)
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	for i := range *procs {
		p, err := startProc(dir, fmt.Sprintf("worker-%d", i), c.foreman,
			append(append([]string{"0", c.memberFlag(), c.memberValue(), "--workers", strconv.Itoa(*workers), "--window", strconv.Itoa(*window), "--delay", "0", "--log-level", *level}, shardArgs...), sec.nodeArgs()...)...)
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}

	var hc *httpapi.Client
	if *viaHTTP {
		port := c.base + 1001
		p, err := startProc(dir, fmt.Sprintf("frontend-%d", port), c.foreman,
			append(append([]string{strconv.Itoa(port), c.memberFlag(), c.memberValue(), "--produce=false", "--log-level", *level}, shardArgs...), sec.frontendArgs()...)...)
		if err != nil {
			return err
		}
		ps = append(ps, p)
		tr := &http.Transport{MaxIdleConns: *submitters, MaxIdleConnsPerHost: *submitters}
		api, hopts := fmt.Sprintf("http://127.0.0.1:%d", port+5000), []httpapi.ClientOption{}
		if sec != nil {
			tr.TLSClientConfig = sec.apiTLS()
			api, hopts = fmt.Sprintf("https://127.0.0.1:%d", port+5000), append(hopts, httpapi.WithToken(sec.token))
		}
		hc, err = httpapi.NewClient(api, append(hopts, httpapi.WithHTTPClient(&http.Client{Transport: tr, Timeout: time.Minute}))...)
		if err != nil {
			return err
		}
		deadline := time.Now().Add(time.Minute)
		for hc.Healthz(ctx) != nil {
			if time.Now().After(deadline) {
				return fmt.Errorf("the HTTP API of %s did not answer within a minute (see its log with -keep)", p.name)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Results: count the distinct ids of each phase.
	var (
		rmu      sync.Mutex
		seen     = map[string]bool{}
		want     = map[string]int{}
		reached  = map[string]chan struct{}{}
		resultsN = map[string]int{}
	)
	expect := func(prefix string, n int) <-chan struct{} {
		rmu.Lock()
		defer rmu.Unlock()
		want[prefix], reached[prefix] = n, make(chan struct{})
		return reached[prefix]
	}
	onResult := func(r *messages.WorkResult) {
		id := r.GetWorkId()
		prefix, _, ok := strings.Cut(id, "-")
		if !ok {
			return
		}
		rmu.Lock()
		defer rmu.Unlock()
		if seen[id] {
			return
		}
		seen[id] = true
		resultsN[prefix]++
		if resultsN[prefix] == want[prefix] {
			close(reached[prefix])
		}
	}
	n, stopClient, err := startClient(ctx, dir, c.base+1000, &c, *clientLevel, onResult, sec)
	if err != nil {
		return err
	}
	defer stopClient()
	client := n.Client()

	lostResults := map[string]int{} // by phase: results pub-sub did not deliver (the masters' counts ended the phase)
	skewIDs := newShardIDs(c.shards)
	samples := map[string]*busySamples{} // by phase
	phase := func(prefix string, count int) (acked, done time.Duration, err error) {
		all := expect(prefix, count)
		ids := phaseIDs(prefix, count, *skew, skewIDs)
		bs := &busySamples{}
		samples[prefix] = bs
		sampleCtx, stopSampling := context.WithCancel(ctx)
		sampled := make(chan struct{})
		go func() { defer close(sampled); bs.run(sampleCtx, client) }()
		defer func() { stopSampling(); <-sampled }()
		start := time.Now()
		var wg sync.WaitGroup
		next := atomic.Int64{}
		var firstErr atomic.Value
		for range *submitters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1)
					if i > int64(count) {
						return
					}
					w := &messages.Work{WorkId: ids[i-1], JobType: "square", Payload: strconv.AppendInt(nil, i, 10)}
					sctx, scancel := context.WithTimeout(ctx, 2*time.Minute)
					var err error
					if hc != nil {
						_, err = hc.Submit(sctx, httpapi.SubmitRequest{ID: w.GetWorkId(), Type: w.GetJobType(), Payload: w.GetPayload()})
					} else {
						err = client.Submit(sctx, w)
					}
					scancel()
					if err != nil {
						firstErr.Store(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		acked = time.Since(start)
		if e, ok := firstErr.Load().(error); ok {
			return acked, 0, e
		}
		// Wait for the results while they keep coming (30 s without one
		// is a failure). Pub-sub is at-most-once and loses results under
		// load: the phase also ends when every shard's master reports
		// nothing pending or in progress, every job done (checked once
		// results stall).
		last, lastAt := -1, time.Now()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-all:
				return acked, time.Since(start), nil
			case <-ctx.Done():
				return acked, 0, ctx.Err()
			case <-tick.C:
			}
			rmu.Lock()
			got := resultsN[prefix]
			rmu.Unlock()
			if got != last {
				last, lastAt = got, time.Now()
			} else if time.Since(lastAt) > 200*time.Millisecond {
				sctx, scancel := context.WithTimeout(ctx, time.Second)
				idle := allIdle(client.ShardStatus(sctx))
				scancel()
				if idle {
					lostResults[prefix] = count - got
					return acked, time.Since(start), nil
				}
			}
			if time.Since(lastAt) > 30*time.Second {
				return acked, 0, fmt.Errorf("%w: only %d of %d results consumed, none for 30 s (pub-sub is at-most-once; see the logs with -keep)", errResultsLost, got, count)
			}
		}
	}

	// The frontend node subscribes to results at start and every 2 s until
	// it works; pub-sub is at-most-once, so results published before are
	// lost to it. Submit probes until one's result comes back.
	probed := expect("probe", 1)
	for i := 1; ; i++ {
		if i > 30 {
			return errors.New("no result of 30 probe jobs came back: the results subscription does not work (see the logs with -keep)")
		}
		w := &messages.Work{WorkId: "probe-" + strconv.Itoa(i), JobType: "square", Payload: []byte("2")}
		if err := client.Submit(ctx, w); err != nil {
			return fmt.Errorf("probe: %w", err)
		}
		select {
		case <-probed:
		case <-time.After(2 * time.Second):
			continue
		}
		break
	}
	// Warm up: connections, registrations, the journal's first pages.
	if _, _, err := phase("warm", 2000); err != nil && !errors.Is(err, errResultsLost) {
		return fmt.Errorf("warm-up: %w", err)
	}
	before := client.ShardStatus(ctx)
	acked, done, err := phase("run", *jobs)
	if err != nil {
		if errors.Is(err, errResultsLost) {
			// Every job was acked (durable): that figure stands even when
			// result notifications were lost (pub-sub is at-most-once).
			fmt.Printf("  acked (durable):  %8.0f jobs/s (%v); no end-to-end figure:\n", float64(*jobs)/acked.Seconds(), acked.Round(time.Millisecond))
		}
		return err
	}
	after := client.ShardStatus(ctx)
	via := "the actor API (this program's frontend client)"
	if hc != nil {
		via = "HTTP (POST /work to a frontend process)"
	}
	security := "plain"
	if sec != nil {
		security = "mutual TLS between nodes"
		if hc != nil {
			security += ", HTTPS + bearer token"
		}
	}
	fmt.Printf("throughput via %s (%s): %d jobs, %d submitters, %d backend(s), %d worker processes x %d workers x window %d, %d shard(s), skew %g, %s, %s membership, loopback, 2 cores\n",
		via, security, *jobs, *submitters, *backends, *procs, *workers, *window, c.shards, *skew, c.journalName(), c.membershipName())
	fmt.Printf("  acked (durable):  %8.0f jobs/s (%v)\n", float64(*jobs)/acked.Seconds(), acked.Round(time.Millisecond))
	if lost := lostResults["run"]; lost > 0 {
		fmt.Printf("  end to end:       %8.0f jobs/s (%v, until the master reported every job done; pub-sub did not deliver %d results to the client)\n", float64(*jobs)/done.Seconds(), done.Round(time.Millisecond), lost)
	} else {
		fmt.Printf("  end to end:       %8.0f jobs/s (%v, all results consumed by the client)\n", float64(*jobs)/done.Seconds(), done.Round(time.Millisecond))
	}
	printShards(before, after, *jobs)
	if bs := samples["run"]; bs != nil {
		fmt.Printf("  %s; for scale, %d workers x window %d run %d at once (a worker also holds work queued beyond its window and results awaiting acks)\n", bs.summary(), *procs**workers, *window, *procs**workers**window)
	}
	return nil
}

// phaseIDs returns the work ids of a phase of count jobs: job i (1-based)
// gets an id on shard 0 (from g) when floor(i*skew) > floor((i-1)*skew),
// else the uniform id prefix-i. Both start with prefix + "-" (the result
// counting keys on it); a shard-0 id has a second dash, so they never
// collide.
func phaseIDs(prefix string, count int, skew float64, g *shardIDs) []string {
	ids := make([]string, count)
	for i := 1; i <= count; i++ {
		if math.Floor(float64(i)*skew) > math.Floor(float64(i-1)*skew) {
			ids[i-1] = g.id(prefix, 0)
		} else {
			ids[i-1] = prefix + "-" + strconv.Itoa(i)
		}
	}
	return ids
}

// allIdle reports whether every shard answered with nothing pending or in
// progress.
func allIdle(sts []frontend.ShardStatus) bool {
	for _, s := range sts {
		if s.Err != nil || s.Status.GetPending() != 0 || s.Status.GetInProgress() != 0 {
			return false
		}
	}
	return len(sts) > 0
}

// printShards prints, per shard, what its master accepted and completed
// between the two status snapshots (the measured phase) and its totals.
func printShards(before, after []frontend.ShardStatus, jobs int) {
	for k, a := range after {
		if a.Err != nil {
			fmt.Printf("  shard %d: no status: %v\n", k, a.Err)
			continue
		}
		st := a.Status
		var b0 *messages.MasterStatus // nil if shard k did not answer before: deltas are totals
		if k < len(before) && before[k].Err == nil {
			b0 = before[k].Status
		}
		acc := st.GetAcceptedTotal() - b0.GetAcceptedTotal()
		done := st.GetDone() - b0.GetDone()
		fmt.Printf("  shard %d: run accepted %6d (%5.1f%%) done %6d; totals accepted=%d done=%d pending=%d in_progress=%d dead=%d\n",
			k, acc, 100*float64(acc)/float64(jobs), done, st.GetAcceptedTotal(), st.GetDone(), st.GetPending(), st.GetInProgress(), st.GetDead())
	}
}

// busySamples samples every shard's status during a phase: how much work
// is handed out to workers (in_progress summed over the shards) and how
// often shard 0 had a queue while every other shard had none.
type busySamples struct {
	n        int
	handed   int64 // sum over samples of the summed in_progress
	zeroOnly int   // samples with shard 0 pending > 0 and the others 0
	shards   int
}

func (b *busySamples) run(ctx context.Context, client *frontend.Client) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		sts := client.ShardStatus(sctx)
		cancel()
		var handed int64
		zeroOnly := len(sts) > 1
		ok := true
		for k, s := range sts {
			if s.Err != nil {
				ok = false
				break
			}
			handed += s.Status.GetInProgress()
			if (k == 0) != (s.Status.GetPending() > 0) {
				zeroOnly = false
			}
		}
		if !ok {
			continue
		}
		b.n++
		b.handed += handed
		b.shards = len(sts)
		if zeroOnly {
			b.zeroOnly++
		}
	}
}

func (b *busySamples) summary() string {
	if b.n == 0 {
		return "workers: no status samples"
	}
	s := fmt.Sprintf("workers: %.1f jobs handed out on average (in_progress summed over the shards, %d samples every 100 ms)", float64(b.handed)/float64(b.n), b.n)
	if b.shards > 1 {
		s += fmt.Sprintf("; shard 0 alone had a queue in %d of them", b.zeroOnly)
	}
	return s
}
