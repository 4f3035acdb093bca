package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/metrics"
	"github.com/foreman-actors/foreman/cluster/node"
)

// journalEnv names the environment variable that gives --journal's default.
const journalEnv = "FOREMAN_JOURNAL"

// errUsage marks a command line that cannot be run; main exits 2 on it.
var errUsage = errors.New("usage error")

// nodeArgs is the parsed command line of a node: `foreman [PORT] [flags]`.
type nodeArgs struct {
	otlp otlpArgs // tracing.go
	// drainTimeout bounds a worker node's graceful drain (--drain-timeout).
	drainTimeout time.Duration
	port         int
	role         node.Role
	host         string
	seeds        []string
	workers      int
	shards       int
	data         string
	// journal is the journal URL (--journal, else FOREMAN_JOURNAL; empty:
	// SQLite under data); journalFromEnv says it came from the environment.
	journal        string
	journalFromEnv bool
	// membership is the membership URL (--membership, else
	// FOREMAN_MEMBERSHIP; see membership_args.go).
	membership string
	http       string
	jobs       int
	delay      time.Duration
	delaySet   bool
	logLevel   string
	produce    bool
	rate       string
	// changeRate is --change-rate: a backend records its --rate in the
	// journal even when the journal records other limits.
	changeRate bool
	// resultsPubSub is --results-pubsub: a backend publishes every result
	// on the results topic (issue 39: false when every frontend reads the
	// durable feed, which every `foreman` frontend does).
	resultsPubSub bool
	adaptive      string
	window        int
	// prefetch is --prefetch; -1 (unset): as many as the window.
	prefetch int
	// resultHold is --result-hold.
	resultHold time.Duration
	sec        securityArgs
	// metrics is --metrics ADDR (empty: off); actorMetrics adds
	// protoactor's own actor metrics.
	metrics string
	// pprof is --pprof ADDR (empty: off): Go's runtime profiles on a
	// listener of their own.
	pprof        string
	actorMetrics bool
	// memoryLimit is --memory-limit in bytes (0: Go's own, see memlimit.go).
	memoryLimit int64
	// gcHeadroom is --gc-headroom in bytes (0: Go's own pacing; gcpace.go).
	gcHeadroom int64
	// doneRetention and doneLimit bound the finished works a master keeps
	// (--done-retention, --done-limit).
	doneRetention time.Duration
	doneLimit     int
	// concurrency are the limits per concurrency key
	// (--concurrency-limit, docs/scheduling.md).
	concurrency master.ConcurrencyLimits
	// keyRates are the hand-out rates per concurrency key (--key-rate).
	keyRates master.KeyRates
	// priorityAging and fairWeights tune the hand-out order of the
	// masters (--priority-aging, --fair-weight; docs/scheduling.md).
	priorityAging time.Duration
	fairWeights   map[string]int
}

// splitPort takes the optional leading port argument off args: the flag
// package stops at the first non-flag, so `foreman 2551 --seeds x` needs it.
func splitPort(args []string) (portArg string, rest []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "", args
}

// parseNodeArgs parses a node's command line; getenv reads the environment
// (os.Getenv, or a map in tests).
func parseNodeArgs(args []string, getenv func(string) string, stderr io.Writer) (nodeArgs, error) {
	a := nodeArgs{role: node.RoleAll}
	portArg, rest := splitPort(args)
	if portArg != "" {
		port, role, err := node.ParsePort(portArg)
		if err != nil {
			return a, fmt.Errorf("%w: %w", errUsage, err)
		}
		a.port, a.role = port, role
	}
	fs := flag.NewFlagSet("foreman", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seeds := fs.String("seeds", "127.0.0.1:2551,127.0.0.1:2552", "backend nodes to join, `host:port,...`")
	fs.StringVar(&a.host, "host", "127.0.0.1", "interface to bind and advertise (cluster nodes)")
	fs.IntVar(&a.workers, "workers", 2, "number of workers this node runs (worker and all-in-one nodes; each pulls from every shard)")
	fs.IntVar(&a.shards, "shards", 1, "number of masters work is sharded over, by a hash of the work id (cluster nodes; the same on every node; fixed once the journal records it)")
	fs.StringVar(&a.data, "data", "./foreman-data", "directory of the journal (backend and all-in-one nodes)")
	fs.StringVar(&a.journal, "journal", "", "where the journal lives: sqlite:PATH or postgres://user[:password]@host[:port]/db (backend and all-in-one nodes; default: $"+journalEnv+", else sqlite:DATA/"+node.JournalFile+")")
	fs.StringVar(&a.membership, "membership", node.MembershipSeeds, "how cluster nodes find each other: "+node.MembershipHelp+" (default: $"+membershipEnv+", else seeds)")
	fs.StringVar(&a.http, "http", "", "HTTP API address: frontend nodes default to 127.0.0.1:PORT+5000; the all-in-one node serves it only when this is set")
	fs.IntVar(&a.jobs, "jobs", 0, "submit this many jobs as fast as they are acked, then exit once all results are consumed (0: simulated clients, run until stopped)")
	fs.Func("delay", "simulated work time of the square job, a duration like 1.5s (default: random 1-2 s; 0 for none)", func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("not a duration (examples: 0, 250ms, 1.5s): %w", err)
		}
		if d < 0 {
			return errors.New("must not be negative")
		}
		a.delay, a.delaySet = d, true
		return nil
	})
	fs.StringVar(&a.rate, "rate", "", "rate limits per job type where the masters hand work out, across the cluster, e.g. square=10/s,factorize=100/m:strict (backend and all-in-one nodes; the journal records the first backend's, and a backend given others refuses to start: see --change-rate)")
	fs.BoolVar(&a.changeRate, "change-rate", false, "record this backend's --rate in the journal as the cluster's rate limits, replacing the ones it records (without it a backend whose --rate differs from the journal's refuses to start); then restart every other backend with the same --rate (backend nodes)")
	fs.StringVar(&a.adaptive, "adaptive", "off", "size the node's worker pool itself: default, seed, vegas or off (worker and all-in-one nodes)")
	fs.IntVar(&a.window, "window", 1, "jobs each worker may hold at once (worker and all-in-one nodes)")
	a.prefetch = -1
	fs.Func("prefetch", "most works each worker holds beyond its window while its jobs are short against a request's round trip to the master, so that its executors do not idle; 0 = never (worker and all-in-one nodes; default: as many as --window)", func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 4096 {
			return errors.New("must be a whole number from 0 to 4096")
		}
		a.prefetch = n
		return nil
	})
	a.resultHold = worker.DefaultResultHold
	fs.Func("result-hold", fmt.Sprintf("how long a finished job's result may wait, while the worker's other jobs still run, for more results to reach the master in one message and one journal write; 0 = each at once (worker and all-in-one nodes; at most %v; default %v)", worker.MaxResultHold, worker.DefaultResultHold), func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("not a duration (examples: 500us, 2ms, 0): %w", err)
		}
		if d < 0 || d > worker.MaxResultHold {
			return fmt.Errorf("must be from 0 to %v", worker.MaxResultHold)
		}
		a.resultHold = d
		return nil
	})
	a.drainTimeout = node.DefaultDrainTimeout
	fs.Func("drain-timeout", fmt.Sprintf("on SIGTERM or Ctrl-C, how long a worker node's running jobs may finish before they are cancelled and handed back to run elsewhere; it asks for no work meanwhile; 0 = hand them back at once (worker nodes and the all-in-one node; default %v, below Kubernetes' 30 s grace period)", node.DefaultDrainTimeout), func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("not a duration (examples: 25s, 2m, 0): %w", err)
		}
		if d < 0 {
			return errors.New("must not be negative")
		}
		a.drainTimeout = d
		return nil
	})
	fs.BoolVar(&a.produce, "produce", true, "run the simulated clients of the Akka sample (frontend and all-in-one nodes; --produce=false: only the HTTP API submits work)")
	fs.StringVar(&a.metrics, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics on any node, e.g. 9100 (loopback) or 0.0.0.0:9100 (needs TLS or --insecure); HTTPS with the node's TLS, a bearer token with --api-token-file, as the HTTP API; frontends also serve them on their HTTP API (default off)")
	fs.StringVar(&a.pprof, "pprof", "", "serve Go's runtime profiles (CPU, heap, allocs, goroutines, trace) at http://ADDR/debug/pprof/ on any node, e.g. 6060 (loopback); another host needs --insecure (default off)")
	fs.Func("memory-limit", "soft limit of the node's Go memory, e.g. 900MiB or 1GiB: the collector runs sooner near it and returns freed memory to the OS at once (see the README's \"Memory of a backend\"; default off, or GOMEMLIMIT from the environment)", func(s string) error {
		v, err := parseMemoryLimit(s)
		a.memoryLimit = v
		return err
	})
	a.gcHeadroom = defaultGCHeadroom
	fs.Func("gc-headroom", "let the garbage collector's heap grow by at least this much past what is live before it collects, e.g. 64MiB; fewer collections of a small heap under load, no change for a large one (0 or off: Go's own pacing; default 128MiB)", func(s string) error {
		v, err := parseMemoryLimit(s)
		a.gcHeadroom = v
		return err
	})
	a.doneRetention, a.doneLimit = master.DefaultDoneRetention, master.DefaultDoneLimit
	fs.Func("done-retention", fmt.Sprintf("how long a master keeps finished jobs' ids and results: a job re-submitted with the id of one it still keeps is not run again (backend and all-in-one nodes; default %v)", master.DefaultDoneRetention), func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("not a duration (examples: 10m, 1h): %w", err)
		}
		if d <= 0 {
			return errors.New("must be positive")
		}
		a.doneRetention = d
		return nil
	})
	fs.Func("done-limit", fmt.Sprintf("how many finished jobs a master keeps at most, whatever --done-retention says: past it the oldest are forgotten early, which bounds memory at any throughput (about 250 bytes plus the result each; backend and all-in-one nodes; default %d)", master.DefaultDoneLimit), func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("not a whole number: %w", err)
		}
		if n < 1 {
			return errors.New("must be at least 1")
		}
		a.doneLimit = n
		return nil
	})
	a.concurrency.Default = 1
	fs.Func("concurrency-limit", "how many jobs of one concurrency_key run at once in the whole cluster: KEY=N for one key (e.g. tenant-a=2), N for every other key (default 1); comma-separated or repeated; every backend node needs the same (backend and all-in-one nodes)", func(s string) error {
		return master.ParseConcurrencyLimit(s, &a.concurrency)
	})
	fs.Func("key-rate", "hand out at most N jobs of one concurrency_key per PERIOD, in every sliding window, in the whole cluster: KEY=N/PERIOD for one key (e.g. tenant-a=10/s), N/PERIOD for every other key (default: no rate); comma-separated or repeated; combines with --concurrency-limit; every backend node needs the same (backend and all-in-one nodes)", func(s string) error {
		return master.ParseKeyRates(s, &a.keyRates)
	})
	fs.DurationVar(&a.priorityAging, "priority-aging", 0, "a waiting job's priority counts one more per this much waiting, so a low priority waits at most (9-p) times it behind later jobs (backend and all-in-one nodes; default 0: strict priorities)")
	fs.Func("fair-weight", "KEY=N: fairness key KEY gets N hand-outs per turn of its job type's rotation over keys (repeatable; default 1 each)", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 1 {
			return errors.New("want KEY=N with N at least 1, e.g. --fair-weight acme=3")
		}
		if a.fairWeights == nil {
			a.fairWeights = make(map[string]int)
		}
		a.fairWeights[k] = n
		return nil
	})
	fs.BoolVar(&a.resultsPubSub, "results-pubsub", true, "backend: also publish every result on the cluster's pub-sub topic \"results\" (--results-pubsub=false when every frontend reads the durable result feed, as every foreman frontend does, and nothing else subscribes: saves the backend CPU per job; callers waiting for an outcome are unaffected)")
	fs.BoolVar(&a.actorMetrics, "actor-metrics", false, "also export protoactor's actor metrics (receive time, spawns, dead letters, ...) in the node's metrics")
	fs.StringVar(&a.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	a.sec.register(fs)
	a.otlp.register(fs)
	fs.Usage = func() {
		printErr(stderr, "usage: foreman [PORT] [flags]\n       foreman bench|submit|status|queue|schedule|rate|certs|sim [flags]\n\nPORT is %s.\n\nflags:\n", node.PortHelp)
		fs.PrintDefaults()
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return a, err
		}
		return a, fmt.Errorf("%w: %w", errUsage, err)
	}
	if err := a.resolveJournal(fs, getenv); err != nil {
		return a, err
	}
	if err := a.resolveMembership(fs, getenv); err != nil {
		return a, err
	}
	if fs.NArg() > 0 {
		return a, fmt.Errorf("%w: unexpected argument %q; expected %s", errUsage, fs.Arg(0), node.PortHelp)
	}
	if a.shards < 1 || a.shards > node.MaxShards {
		return a, fmt.Errorf("%w: --shards %d: must be 1 to %d", errUsage, a.shards, node.MaxShards)
	}
	if a.shards > 1 && a.role == node.RoleAll {
		return a, fmt.Errorf("%w: --shards %d: the all-in-one node runs one master; shard a cluster of backend, frontend and worker nodes", errUsage, a.shards)
	}
	if a.workers < 0 {
		return a, fmt.Errorf("%w: --workers %d: must be 0 or more", errUsage, a.workers)
	}
	if a.window < 1 {
		return a, fmt.Errorf("%w: --window %d: must be 1 or more", errUsage, a.window)
	}
	if _, err := node.ParseRateLimits(a.rate); err != nil {
		return a, fmt.Errorf("%w: --rate: %w", errUsage, err)
	}
	if lim, err := node.NewAdaptivePool(a.adaptive, 1); err != nil {
		return a, fmt.Errorf("%w: --adaptive: %w", errUsage, err)
	} else if lim != nil {
		lim.Close()
	}
	if a.metrics != "" {
		if _, err := metrics.ListenAddr(a.metrics); err != nil {
			return a, fmt.Errorf("%w: --metrics: %w", errUsage, err)
		}
	}
	if _, err := pprofAddr(a); err != nil {
		return a, err
	}
	if a.jobs < 0 {
		return a, fmt.Errorf("%w: --jobs %d: must be 0 or more", errUsage, a.jobs)
	}
	if a.changeRate && a.role != node.RoleBackend {
		return a, fmt.Errorf("%w: --change-rate: only backend nodes (2000-2999) record rate limits in a journal; pass it to a backend", errUsage)
	}
	if !a.resultsPubSub && a.role != node.RoleBackend {
		return a, fmt.Errorf("%w: --results-pubsub=false: only backend nodes (2000-2999) publish results; pass it to a backend", errUsage)
	}
	if a.jobs > 0 && !a.produce {
		// --jobs N is carried out by the simulated clients: without them
		// the node would wait forever for N results nobody submits.
		return a, fmt.Errorf("%w: --jobs %d submits its jobs through the simulated clients, which --produce=false turns off; drop one of the two", errUsage, a.jobs)
	}
	if _, err := parseLevel(a.logLevel); err != nil {
		return a, fmt.Errorf("%w: --log-level: %w", errUsage, err)
	}
	for _, s := range strings.Split(*seeds, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, ":") {
			return a, fmt.Errorf("%w: --seeds: %q is not host:port", errUsage, s)
		}
		a.seeds = append(a.seeds, s)
	}
	if _, err := checkSecurity(a); err != nil {
		return a, err
	}
	return a, nil
}

// resolveJournal settles the journal URL: --journal wins over
// FOREMAN_JOURNAL, and either is checked here, so a bad URL is a usage
// error (exit 2) before anything starts. Frontend and worker nodes have no
// journal: --journal on one is a usage error (the URL meant for a backend
// went to the wrong node), while FOREMAN_JOURNAL is only warned about when
// the node starts, since one environment is often shared by every node of
// a host.
func (a *nodeArgs) resolveJournal(fs *flag.FlagSet, getenv func(string) string) error {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "journal" })
	name := "--journal"
	if !given {
		a.journal, a.journalFromEnv, name = getenv(journalEnv), true, journalEnv
		if a.journal == "" {
			a.journalFromEnv = false
			return nil
		}
	}
	hasJournal := a.role == node.RoleAll || a.role == node.RoleBackend
	if !hasJournal && given {
		return fmt.Errorf("%w: --journal: a %s node has no journal; pass --journal to backend (2000-2999) and all-in-one nodes only", errUsage, a.role)
	}
	if _, err := journal.ParseURL(a.journal); err != nil {
		return fmt.Errorf("%w: %s: %w", errUsage, name, err)
	}
	return nil
}
