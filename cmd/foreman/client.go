package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// Defaults of the client subcommands.
const (
	// defaultSubmitTimeout bounds `foreman submit`, 503 retries included
	// (and the wait for the result with --wait).
	defaultSubmitTimeout = 30 * time.Second
	// defaultStatusTimeout bounds `foreman status`.
	defaultStatusTimeout = 10 * time.Second
)

// clientFlags are the flags both client subcommands share.
type clientFlags struct {
	to        string
	timeout   time.Duration
	tokenFile string // --token-file
	cacert    string // --cacert
}

func (f *clientFlags) register(fs *flag.FlagSet, timeout time.Duration) {
	fs.StringVar(&f.to, "to", httpapi.DefaultClientAddr, "HTTP API of a frontend node, `host:port` or URL")
	fs.DurationVar(&f.timeout, "timeout", timeout, "give up after this long")
	fs.StringVar(&f.tokenFile, "token-file", "", "file whose first token (one per line, # comments) is sent as the bearer token")
	fs.StringVar(&f.cacert, "cacert", "", "CA certificate(s) (PEM) to verify an https:// API with; host:port then means https")
}

// parseInterleaved parses flags that may come after positional arguments
// (`foreman status ID --to ADDR`) and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// usageErr reports a bad command line and returns exit code 2.
func usageErr(stderr io.Writer, cmd string, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	printErr(stderr, "foreman %s: %v (run foreman %s -h for help)\n", cmd, err, cmd)
	return 2
}

// serverErr reports a failed request and returns exit code 1.
func serverErr(stderr io.Writer, cmd string, err error) int {
	printErr(stderr, "foreman %s: %s\n", cmd, strings.TrimPrefix(err.Error(), "httpapi: "))
	return 1
}

// runSubmit is `foreman submit --type T [--payload P] [--id X] [--to ADDR]
// [--wait] [--timeout D]`: it posts one job and prints `accepted work ID`
// once the job is durable. Exit 0 on success, 1 when the server refused or
// could not be reached, 2 for a bad command line.
func runSubmit(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("foreman submit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cf                 clientFlags
		jobType, id, input string
		wait               waitFlag
		beatTimeout        time.Duration
		bf                 batchFlags
		qf                 queueFlags
	)
	cf.register(fs, defaultSubmitTimeout)
	bf.register(fs)
	fs.StringVar(&jobType, "type", "", "job type, e.g. square (required)")
	fs.StringVar(&input, "payload", "", "job input: JSON (7, \"250ms\", {\"n\":1}); anything else is sent as a JSON string")
	fs.StringVar(&id, "id", "", "work id (default: a random one); the same id again runs the job once")
	var keys httpapi.SubmitRequest
	fs.StringVar(&keys.UniqueKey, "unique-key", "", "run the job only if no job with this key is pending, running or finished within --unique-for; otherwise print that job's id and status (docs/scheduling.md)")
	fs.StringVar(&keys.UniqueFor, "unique-for", "", "how long a finished job keeps its --unique-key, a duration such as 1h (default: only while pending or running)")
	fs.StringVar(&keys.ConcurrencyKey, "concurrency-key", "", "run at most the key's --concurrency-limit of the jobs with this key at once, cluster-wide")
	qf.register(fs)
	fs.DurationVar(&beatTimeout, "heartbeat-timeout", 0, "this job's heartbeat timeout `D` (e.g. 30s): once it heartbeats, it is retried when it stays silent for D, over its job type's (default: the type's)")
	fs.Var(&wait, "wait", "wait `D` (default: the --timeout) for the job's outcome and print it; the job runs only while you wait:\n"+
		"Ctrl-C cancels it (exit 130); when D ends first it goes on without you (exit 3)")
	fs.Usage = func() {
		printErr(stderr, "usage: foreman submit --type TYPE [--payload JSON] [--id ID] [--to ADDR] [--wait [D]] [--timeout D]\n"+
			"         [--run-at TIME | --delay D] [--priority 0-9] [--fairness-key KEY]\n"+
			"         [--unique-key K [--unique-for D]] [--concurrency-key K]\n"+
			"       foreman submit --file JOBS.ndjson|- [--batch N] [--to ADDR] [--timeout D]\n\n"+
			"Submits one job to a frontend node's HTTP API and prints its id once it is durable.\n\nflags:\n")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, waitArgs(args))
	switch {
	case err != nil:
		return usageErr(stderr, "submit", err)
	case len(pos) > 0:
		return usageErr(stderr, "submit", fmt.Errorf("unexpected argument %q; give the job input with --payload", pos[0]))
	case bf.file != "":
		return runSubmitFile(cf, bf, jobType != "" || id != "" || input != "" || wait.set, stdout, stderr)
	case jobType == "":
		return usageErr(stderr, "submit", errors.New("--type is required, e.g. --type square --payload 7"))
	case cf.timeout <= 0:
		return usageErr(stderr, "submit", fmt.Errorf("--timeout %v must be positive", cf.timeout))
	case beatTimeout < 0:
		return usageErr(stderr, "submit", fmt.Errorf("--heartbeat-timeout %v must be positive, e.g. --heartbeat-timeout 30s", beatTimeout))
	}
	req := keys
	req.ID, req.Type, req.Payload = id, jobType, payloadJSON(input)
	if beatTimeout > 0 {
		req.HeartbeatTimeout = beatTimeout.String()
	}
	c, err := cf.newClient()
	if err != nil {
		return usageErr(stderr, "submit", err)
	}
	defer c.CloseIdleConnections()
	if req.ID == "" {
		req.ID = httpapi.NewID()
	}
	id = req.ID
	ctx, cancel := context.WithTimeout(context.Background(), cf.timeout)
	defer cancel()
	req = qf.apply(req)
	if wait.set {
		return submitWait(ctx, c, req, wait.d, cf.timeout, stdout, stderr)
	}
	resp, err := c.SubmitResult(ctx, req)
	if err == nil {
		id = resp.ID // with several shards a keyed job's id may have a suffix
	}
	if err == nil && resp.DuplicateOf != "" {
		if _, err := fmt.Fprintf(stdout, "duplicate of work %s (%s)\n", resp.DuplicateOf, resp.Status); err != nil {
			return 1
		}
		return 0
	}
	if err != nil {
		if errors.Is(err, httpapi.ErrUnavailable) {
			err = fmt.Errorf("%w; nothing is lost by retrying with the same id (--id %s)", err, id)
		}
		return serverErr(stderr, "submit", err)
	}
	if _, err := fmt.Fprintf(stdout, "accepted work %s\n", id); err != nil {
		// The work is durable; say which, since stdout lost it.
		printErr(stderr, "foreman submit: accepted work %s, but writing the output failed: %v\n", id, err)
		return 1
	}
	return 0
}

// printOutcome prints a finished work's outcome: exit 0 when done, 1 when
// dead or cancelled.
func printOutcome(ctx context.Context, c *httpapi.Client, id string, info *httpapi.WorkInfo, stdout, stderr io.Writer) int {
	if info.Status == httpapi.StatusDead && info.Attempts == 0 {
		if full, err := c.Work(ctx, id); err == nil { // the outcome has no attempt count
			info = full
		}
	}
	if info.Status == httpapi.StatusCancelled {
		if _, err := fmt.Fprintf(stdout, "work %s cancelled: %s\n", id, info.LastError); err != nil {
			return outputFailed(stderr, "foreman submit", err)
		}
		return 1
	}
	if info.Status == httpapi.StatusDead {
		if _, err := fmt.Fprintf(stdout, "work %s dead after %d attempts: %s\n", id, info.Attempts, info.LastError); err != nil {
			return outputFailed(stderr, "foreman submit", err)
		}
		return 1
	}
	if _, err := fmt.Fprintf(stdout, "work %s done: %s\n", id, info.Result); err != nil {
		return outputFailed(stderr, "foreman submit", err)
	}
	return 0
}

// payloadJSON turns the --payload text into JSON: itself when it is JSON,
// a JSON string otherwise, nil when empty.
func payloadJSON(s string) json.RawMessage {
	switch {
	case strings.TrimSpace(s) == "":
		return nil
	case json.Valid([]byte(s)):
		return json.RawMessage(s)
	default:
		b, _ := json.Marshal(s) // cannot fail for a string
		return b
	}
}

// runStatus is `foreman status [ID...] [--to ADDR]`: without ids it prints
// the cluster overview (members, master, queue, workers); with ids, each
// work's state. Exit 0 on success, 1 when the server could not answer or a
// work is unknown, 2 for a bad command line.
func runStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("foreman status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clientFlags
	cf.register(fs, defaultStatusTimeout)
	fs.Usage = func() {
		printErr(stderr, "usage: foreman status [WORK_ID...] [--to ADDR] [--timeout D]\n\n"+
			"Without WORK_ID prints the cluster's members, where the master runs, its queue and workers;\n"+
			"with WORK_IDs prints each work's status and result.\n\nflags:\n")
		fs.PrintDefaults()
	}
	ids, err := parseInterleaved(fs, args)
	if err != nil {
		return usageErr(stderr, "status", err)
	}
	if cf.timeout <= 0 {
		return usageErr(stderr, "status", fmt.Errorf("--timeout %v must be positive", cf.timeout))
	}
	c, err := cf.newClient()
	if err != nil {
		return usageErr(stderr, "status", err)
	}
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), cf.timeout)
	defer cancel()
	if len(ids) > 0 {
		code := 0
		for i, id := range ids {
			info, err := c.Work(ctx, id)
			if err != nil {
				code = serverErr(stderr, "status", err)
				continue
			}
			sep := ""
			if i > 0 {
				sep = "\n"
			}
			if err := writeTable(stdout, sep+workTable(info)); err != nil {
				return outputFailed(stderr, "foreman status", err)
			}
		}
		return code
	}
	info, err := c.Status(ctx)
	if err != nil {
		return serverErr(stderr, "status", err)
	}
	if err := writeTable(stdout, statusTable(info)); err != nil {
		return outputFailed(stderr, "foreman status", err)
	}
	return 0
}

// writeTable writes rows of tab-separated cells to w with the columns
// aligned; a row without tabs ends a block of aligned rows.
func writeTable(w io.Writer, rows string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if _, err := io.WriteString(tw, rows); err != nil {
		return err
	}
	return tw.Flush()
}

// workTable is one work's state as rows for writeTable. (Writes to a
// strings.Builder cannot fail; only writeTable's can.)
func workTable(info *httpapi.WorkInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "work\t%s\n", info.ID)
	fmt.Fprintf(&b, "status\t%s\n", info.Status)
	fmt.Fprintf(&b, "type\t%s\n", info.Type)
	fmt.Fprintf(&b, "attempts\t%d\n", info.Attempts)
	fmt.Fprintf(&b, "result\t%s\n", info.Result)
	if info.LastError != "" {
		fmt.Fprintf(&b, "last error\t%s\n", info.LastError)
	}
	return b.String()
}

// statusTable is the cluster overview as rows for writeTable.
func statusTable(info *httpapi.StatusInfo) string {
	var b strings.Builder
	m := info.Master
	switch {
	case !m.Reachable:
		fmt.Fprintf(&b, "master\tNOT REACHABLE: %s\n", m.Error)
	case m.Member != "":
		fmt.Fprintf(&b, "master\trunning at %s (member %s)\n", m.Address, m.Member)
	default:
		fmt.Fprintf(&b, "master\trunning at %s\n", m.Address)
	}
	if m.Reachable {
		q := info.Queue
		fmt.Fprintf(&b, "queue\t%d pending, %d in progress, %d done, %d dead, %d accepted in total\n",
			q.Pending, q.InProgress, q.Done, q.Dead, q.AcceptedTotal)
		fmt.Fprintf(&b, "workers\t%d idle, %d busy\n", info.Workers.Idle, info.Workers.Busy)
	}
	if len(info.Shards) > 0 {
		fmt.Fprintln(&b)
		fmt.Fprintf(&b, "SHARD\tMASTER\tEPOCH\tPENDING\tIN PROGRESS\tDONE\tWORKERS\n")
		for _, sh := range info.Shards {
			if !sh.Master.Reachable {
				fmt.Fprintf(&b, "%d\tNOT REACHABLE: %s\t-\t-\t-\t-\t-\n", sh.Shard, sh.Master.Error)
				continue
			}
			fmt.Fprintf(&b, "%d\t%s\t%d\t%d\t%d\t%d\t%d\n", sh.Shard, sh.Master.Address, sh.Master.Epoch,
				sh.Queue.Pending, sh.Queue.InProgress, sh.Queue.Done, sh.Workers.Idle+sh.Workers.Busy)
		}
	}
	if len(info.Throttlers) > 0 {
		fmt.Fprintln(&b)
		fmt.Fprintf(&b, "RATE-LIMITED TYPE\tTHROTTLER\n")
		for _, th := range info.Throttlers {
			switch {
			case th.Error != "":
				fmt.Fprintf(&b, "%s\tNOT FOUND: %s\n", th.JobType, th.Error)
			case th.Member != "":
				fmt.Fprintf(&b, "%s\trunning at %s (member %s)\n", th.JobType, th.Address, th.Member)
			default:
				fmt.Fprintf(&b, "%s\trunning at %s\n", th.JobType, th.Address)
			}
		}
	}
	fmt.Fprintln(&b)
	fmt.Fprintf(&b, "MEMBER\tROLES\tADDRESS\tHTTP\tMASTER\n")
	for _, mb := range info.Members {
		id := mb.ID
		if mb.Self {
			id += " (answered)"
		}
		master := "-"
		if mb.Master {
			master = "yes"
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%s\n", id, strings.Join(mb.Roles, ","), mb.Address, orDash(mb.HTTP), master)
	}
	if len(info.Members) == 0 {
		fmt.Fprintf(&b, "(no members reported)\t\t\t\t\n")
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// waitFlag is --wait [D]: bare, it waits as long as --timeout allows.
type waitFlag struct {
	set bool
	d   time.Duration // 0: the --timeout
}

func (w *waitFlag) String() string {
	if w == nil || !w.set {
		return ""
	}
	return w.d.String()
}

func (w *waitFlag) Set(v string) error {
	w.set = true
	if v == "true" || v == "" {
		w.d = 0
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return fmt.Errorf("want a positive duration such as 30s")
	}
	w.d = d
	return nil
}

// IsBoolFlag lets --wait stand alone.
func (w *waitFlag) IsBoolFlag() bool { return true }

// waitArgs joins "--wait D" into "--wait=D" when D is a duration, since the
// flag package takes a flag that may stand alone only as --wait=D.
func waitArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if (a == "--wait" || a == "-wait") && i+1 < len(args) {
			if _, err := time.ParseDuration(args[i+1]); err == nil {
				out = append(out, a+"="+args[i+1])
				i++
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// submitWait is `foreman submit --wait [D]`: POST /work?wait=D with the
// command as the caller. Ctrl-C (or SIGTERM) abandons the request, so the
// server cancels the job: exit 130. When D ends first the job goes on:
// exit 3.
func submitWait(ctx context.Context, c *httpapi.Client, req httpapi.SubmitRequest, wait, timeout time.Duration, stdout, stderr io.Writer) int {
	if wait <= 0 {
		wait = timeout
	}
	sctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	info, done, err := c.SubmitWait(sctx, req, min(wait, httpapi.MaxWait))
	switch {
	case err != nil && sctx.Err() != nil && ctx.Err() == nil:
		printErr(stderr, "foreman submit: interrupted; work %s is cancelled (it does not start, or its run is stopped)\n", req.ID)
		return 130
	case err != nil:
		if errors.Is(err, httpapi.ErrUnavailable) {
			err = fmt.Errorf("%w; nothing is lost by retrying with the same id (--id %s)", err, req.ID)
		}
		return serverErr(stderr, "submit", err)
	}
	if _, err := fmt.Fprintf(stdout, "accepted work %s\n", info.ID); err != nil {
		printErr(stderr, "foreman submit: accepted work %s, but writing the output failed: %v\n", info.ID, err)
		return 1
	}
	if !done {
		if _, err := fmt.Fprintf(stdout, "work %s still %s after %v; it goes on: foreman status %s\n", info.ID, info.Status, wait, info.ID); err != nil {
			return outputFailed(stderr, "foreman submit", err)
		}
		return 3
	}
	return printOutcome(ctx, c, info.ID, info, stdout, stderr)
}
