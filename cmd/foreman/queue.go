package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// queueFlags are `foreman submit`'s queueing flags (issue 37). The server
// checks them (a 400 naming the field); the CLI passes them as given.
type queueFlags struct {
	runAt, delay, fairnessKey string
	priority                  int
}

func (f *queueFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.runAt, "run-at", "", "hand the job out no earlier than this RFC 3339 `time`, e.g. 2026-11-28T10:00:00Z")
	fs.StringVar(&f.delay, "delay", "", "hand the job out no earlier than this Go `duration` from now, e.g. 90s or 1h30m")
	fs.IntVar(&f.priority, "priority", -1, "priority 0 (lowest) to 9 (highest); default: the server's 5")
	fs.StringVar(&f.fairnessKey, "fairness-key", "", "tenant or customer `key`: the hand-out rotates over the keys with waiting jobs")
}

// apply sets the queueing fields of req.
func (f *queueFlags) apply(req httpapi.SubmitRequest) httpapi.SubmitRequest {
	req.RunAt, req.Delay, req.FairnessKey = f.runAt, f.delay, f.fairnessKey
	if f.priority != -1 {
		p := f.priority
		req.Priority = &p
	}
	return req
}

// runQueue is `foreman queue list|pause TYPE|resume TYPE`: the state of
// each job type's queue, and pausing one (it keeps accepting jobs and
// hands none out until resumed; the pause survives failover).
func runQueue(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("foreman queue", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clientFlags
	cf.register(fs, defaultStatusTimeout)
	fs.Usage = func() {
		printErr(stderr, "usage: foreman queue list [--to ADDR]\n"+
			"       foreman queue pause TYPE [--to ADDR]\n"+
			"       foreman queue resume TYPE [--to ADDR]\n\n"+
			"Shows each job type's queue (paused, pending, delayed, running), or pauses or resumes\n"+
			"a job type: a paused type accepts and keeps jobs and hands none out.\n\nflags:\n")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return usageErr(stderr, "queue", err)
	}
	if len(pos) == 0 {
		return usageErr(stderr, "queue", errors.New("say what to do: list, pause TYPE or resume TYPE"))
	}
	verb := pos[0]
	switch {
	case verb == "list" && len(pos) == 1:
	case (verb == "pause" || verb == "resume") && len(pos) == 2:
	case verb == "pause" || verb == "resume":
		return usageErr(stderr, "queue", fmt.Errorf("%s takes one job type, e.g. foreman queue %s square", verb, verb))
	default:
		return usageErr(stderr, "queue", fmt.Errorf("unknown %q; use list, pause TYPE or resume TYPE", verb))
	}
	if cf.timeout <= 0 {
		return usageErr(stderr, "queue", fmt.Errorf("--timeout %v must be positive", cf.timeout))
	}
	c, err := cf.newClient()
	if err != nil {
		return usageErr(stderr, "queue", err)
	}
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), cf.timeout)
	defer cancel()
	var qs *httpapi.QueuesResponse
	switch verb {
	case "list":
		qs, err = c.Queues(ctx)
	case "pause":
		qs, err = c.PauseQueue(ctx, pos[1])
	default:
		qs, err = c.ResumeQueue(ctx, pos[1])
	}
	if err != nil {
		return serverErr(stderr, "queue", err)
	}
	if verb != "list" {
		if _, err := fmt.Fprintf(stdout, "%sd %s\n", verb, pos[1]); err != nil {
			return outputFailed(stderr, "foreman queue", err)
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "TYPE\tSTATE\tPENDING\tDELAYED\tRUNNING")
	for _, q := range qs.Queues {
		state := "active"
		if q.Paused {
			state = "paused"
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", q.Type, state, q.Pending, q.Delayed, q.Running)
	}
	if err := tw.Flush(); err != nil {
		return outputFailed(stderr, "foreman queue", err)
	}
	return 0
}
