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

// limitUsage is the synopsis of `foreman limit`.
const limitUsage = "usage: foreman limit set KEY [--concurrency N] [--rate COUNT/PERIOD] [--to ADDR] [--timeout D]\n" +
	"       foreman limit list [--to ADDR] [--timeout D]\n" +
	"       foreman limit rm KEY [--to ADDR] [--timeout D]\n\n" +
	"set gives a concurrency key limits at run time (PUT /limits/KEY): at most N of its jobs\n" +
	"running at once and at most COUNT hand-outs per PERIOD (e.g. 10/s, 100/m, 5/500ms), journaled\n" +
	"by the master of the key's shard, so a restart or failover keeps them. They win over the\n" +
	"nodes' --concurrency-limit and --key-rate; a part left out is the flags'. Lowering a limit\n" +
	"stops no running job: new ones wait until the key is under it.\n" +
	"list prints the effective limits and where each comes from (GET /limits); rm goes back to\n" +
	"the flags' (DELETE /limits/KEY).\n\nflags:\n"

// runLimit is `foreman limit set|list|rm`, through a frontend node's HTTP
// API. Exit 0 on success, 1 when the server refused or could not be
// reached, 2 for a bad command line.
func runLimit(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("foreman limit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cf  clientFlags
		req httpapi.LimitRequest
	)
	cf.register(fs, defaultStatusTimeout)
	fs.IntVar(&req.Concurrency, "concurrency", 0, "set: at most `N` of the key's jobs running at once (0: the flags')")
	fs.StringVar(&req.Rate, "rate", "", "set: at most COUNT hand-outs of the key's jobs per PERIOD, e.g. 10/s (empty: the flags')")
	fs.Usage = func() {
		printErr(stderr, "%s", limitUsage)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return usageErr(stderr, "limit", err)
	}
	if len(pos) == 0 {
		return usageErr(stderr, "limit", errors.New("say what to do: set KEY, list or rm KEY, e.g. foreman limit set tenant-a --concurrency 10 --rate 10/s"))
	}
	verb := pos[0]
	switch {
	case verb == "list" && len(pos) == 1:
	case (verb == "set" || verb == "rm") && len(pos) == 2:
	case verb == "set" || verb == "rm":
		return usageErr(stderr, "limit", fmt.Errorf("%s takes one key, e.g. foreman limit %s tenant-a", verb, verb))
	default:
		return usageErr(stderr, "limit", fmt.Errorf("unknown %q; use set KEY, list or rm KEY", verb))
	}
	if verb == "set" && req.Concurrency == 0 && req.Rate == "" {
		return usageErr(stderr, "limit", errors.New("set needs --concurrency N or --rate COUNT/PERIOD, e.g. foreman limit set tenant-a --concurrency 10 (to remove a key's limits: foreman limit rm KEY)"))
	}
	if verb != "set" && (req.Concurrency != 0 || req.Rate != "") {
		return usageErr(stderr, "limit", fmt.Errorf("--concurrency and --rate belong to set, not %s", verb))
	}
	if cf.timeout <= 0 {
		return usageErr(stderr, "limit", fmt.Errorf("--timeout %v must be positive", cf.timeout))
	}
	c, err := cf.newClient()
	if err != nil {
		return usageErr(stderr, "limit", err)
	}
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), cf.timeout)
	defer cancel()
	var ls *httpapi.LimitsResponse
	switch verb {
	case "list":
		ls, err = c.Limits(ctx)
	case "set":
		ls, err = c.SetLimit(ctx, pos[1], req)
	default:
		ls, err = c.RemoveLimit(ctx, pos[1])
	}
	if err != nil {
		return serverErr(stderr, "limit", err)
	}
	if verb != "list" {
		done := map[string]string{"set": "set limits of", "rm": "removed the run-time limits of"}[verb]
		if _, err := fmt.Fprintf(stdout, "%s %s\n", done, pos[1]); err != nil {
			return outputFailed(stderr, "foreman limit", err)
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "KEY\tCONCURRENCY\tFROM\tRATE\tFROM")
	for _, l := range ls.Limits {
		key, rate, from := l.Key, l.Rate, l.RateSource
		if key == "" {
			key = "(default)"
		}
		if rate == "" {
			rate, from = "-", "-"
		}
		_, _ = fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", key, l.Concurrency, l.ConcurrencySource, rate, from)
	}
	if err := tw.Flush(); err != nil {
		return outputFailed(stderr, "foreman limit", err)
	}
	return 0
}
