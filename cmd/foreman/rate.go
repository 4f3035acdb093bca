package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// defaultRateTimeout bounds `foreman rate`.
const defaultRateTimeout = 10 * time.Second

// rateUsage is the synopsis of `foreman rate`.
const rateUsage = "usage: foreman rate set TYPE=COUNT/PERIOD [--strict] [--to ADDR] [--token-file F] [--cacert F] [--timeout D]\n" +
	"       foreman rate list [--to ADDR] [--token-file F] [--cacert F] [--timeout D]\n\n" +
	"set changes a job type's rate limit at run time, cluster-wide and durably (PUT /rates/TYPE):\n" +
	"a restart or a failover keeps it. COUNT/PERIOD is e.g. 20/s, 100/m, 1000/h or 5/500ms;\n" +
	"--strict bounds every window of PERIOD (else the throttler's timer periods).\n" +
	"list prints each throttler: its rate, mode, node, queue length, permits granted and refused (GET /rates).\n\nflags:\n"

// runRate is `foreman rate set TYPE=RATE [--strict]` and `foreman rate
// list`, through a frontend node's HTTP API. Exit 0 on success, 1 when the
// server refused or could not be reached, 2 for a bad command line.
func runRate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("foreman rate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cf     clientFlags
		strict bool
	)
	cf.register(fs, defaultRateTimeout)
	fs.BoolVar(&strict, "strict", false, "set: bound every window of the period, wherever it starts (the sliding window), not only the throttler's timer periods")
	fs.Usage = func() {
		printErr(stderr, "%s", rateUsage)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return usageErr(stderr, "rate", err)
	}
	if len(pos) == 0 {
		return usageErr(stderr, "rate", errors.New("want set or list, e.g. foreman rate set square=20/s or foreman rate list"))
	}
	if cf.timeout <= 0 {
		return usageErr(stderr, "rate", fmt.Errorf("--timeout %v must be positive", cf.timeout))
	}
	var req httpapi.RateRequest
	var jobType string
	switch pos[0] {
	case "list":
		if len(pos) > 1 {
			return usageErr(stderr, "rate list", fmt.Errorf("unexpected argument %q; list takes none", pos[1]))
		}
		if strict {
			return usageErr(stderr, "rate list", errors.New("--strict belongs to set: foreman rate set square=20/s --strict"))
		}
	case "set":
		if len(pos) != 2 {
			return usageErr(stderr, "rate set", fmt.Errorf("want one TYPE=COUNT/PERIOD, e.g. foreman rate set square=20/s, got %d", len(pos)-1))
		}
		var ok bool
		jobType, req.Rate, ok = strings.Cut(pos[1], "=")
		if !ok || jobType == "" {
			return usageErr(stderr, "rate set", fmt.Errorf("%q: want TYPE=COUNT/PERIOD, e.g. square=20/s", pos[1]))
		}
		// Checked here too, so a typo is a usage error before any request.
		if _, err := httpapi.ParseRate(req.Rate); err != nil {
			return usageErr(stderr, "rate set", errors.New(strings.TrimPrefix(err.Error(), httpapi.ErrInvalid.Error()+": ")))
		}
		req.Mode = httpapi.RateModeTimer
		if strict {
			req.Mode = httpapi.RateModeStrict
		}
	default:
		return usageErr(stderr, "rate", fmt.Errorf("unknown subcommand %q: want set or list", pos[0]))
	}
	c, err := cf.newClient()
	if err != nil {
		return usageErr(stderr, "rate", err)
	}
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), cf.timeout)
	defer cancel()
	if pos[0] == "set" {
		info, err := c.SetRate(ctx, jobType, req)
		if err != nil {
			return serverErr(stderr, "rate set", err)
		}
		if _, err := fmt.Fprintf(stdout, "rate of %s set to %s (%s)\n", info.Type, info.Rate, info.Mode); err != nil {
			return outputFailed(stderr, "foreman rate set", err)
		}
		return 0
	}
	rates, err := c.Rates(ctx)
	if err != nil {
		return serverErr(stderr, "rate list", err)
	}
	if err := writeTable(stdout, rateTable(rates)); err != nil {
		return outputFailed(stderr, "foreman rate list", err)
	}
	return 0
}

// rateTable is GET /rates as rows for writeTable.
func rateTable(rates []httpapi.RateInfo) string {
	if len(rates) == 0 {
		return "no rate limits (start the backends with --rate, e.g. --rate square=20/s)\n"
	}
	var b strings.Builder
	b.WriteString("TYPE\tRATE\tMODE\tNODE\tQUEUED\tGRANTED\tREFUSED\n")
	for _, r := range rates {
		if r.Error != "" {
			fmt.Fprintf(&b, "%s\t-\t-\t-\t-\t-\t-\t%s\n", r.Type, r.Error)
			continue
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%d\t%d\t%d\n", r.Type, r.Rate, r.Mode, r.Node, r.Queued, r.Granted, r.Refused)
	}
	return b.String()
}
