package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// defaultScheduleTimeout bounds each `foreman schedule` command.
const defaultScheduleTimeout = 10 * time.Second

const scheduleUsage = `usage: foreman schedule add NAME --spec SPEC --type TYPE [--payload JSON] [--tz ZONE] [--missed once|skip|catch_up] [--catch-up-max N] [--paused]
       foreman schedule list
       foreman schedule rm NAME
       foreman schedule pause NAME
       foreman schedule resume NAME
  (each takes --to ADDR, --timeout D, --token-file F, --cacert F)

Periodic jobs. SPEC is a cron expression with seconds ("0 30 2 * * *"), without
("*/15 * * * *"), "@every 10s", or @hourly/@daily/@weekly/@monthly/@yearly, with an
optional "TZ=Europe/Berlin " prefix. Each tick submits one job whose id is
sched:NAME:UNIX_SECOND, so a tick runs once even across failovers.
`

// runSchedule is `foreman schedule add|list|rm|pause|resume`. Exit 0 on
// success, 1 when the server refused or could not be reached, 2 for a bad
// command line.
func runSchedule(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printErr(stderr, "%s", scheduleUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	sub := args[0]
	fs := flag.NewFlagSet("foreman schedule "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cf                               clientFlags
		spec, jobType, input, tz, missed string
		catchUp                          int
		paused                           bool
	)
	cf.register(fs, defaultScheduleTimeout)
	if sub == "add" {
		fs.StringVar(&spec, "spec", "", `cron expression, e.g. "@every 10s" or "TZ=Europe/Berlin 0 30 2 * * *" (required)`)
		fs.StringVar(&jobType, "type", "", "job type of each tick's job, e.g. square (required)")
		fs.StringVar(&input, "payload", "", "job input: JSON; anything else is sent as a JSON string")
		fs.StringVar(&tz, "tz", "", "IANA time zone of --spec (default UTC, or the spec's TZ= prefix)")
		fs.StringVar(&missed, "missed", "", "ticks missed while the cluster was down: once (default), skip or catch_up")
		fs.IntVar(&catchUp, "catch-up-max", 0, "with --missed catch_up, run at most this many of the latest missed ticks (default 10)")
		fs.BoolVar(&paused, "paused", false, "add the schedule paused")
	}
	fs.Usage = func() {
		printErr(stderr, "%s\nflags:\n", scheduleUsage)
		fs.PrintDefaults()
	}
	cmd := "schedule " + sub
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return usageErr(stderr, cmd, err)
	}
	wantName := sub != "list"
	switch {
	case sub != "add" && sub != "list" && sub != "rm" && sub != "pause" && sub != "resume":
		return usageErr(stderr, "schedule", fmt.Errorf("unknown subcommand %q; use add, list, rm, pause or resume", sub))
	case wantName && len(pos) != 1:
		return usageErr(stderr, cmd, fmt.Errorf("give one schedule NAME, e.g. foreman schedule %s nightly-report", sub))
	case !wantName && len(pos) != 0:
		return usageErr(stderr, cmd, fmt.Errorf("unexpected argument %q", pos[0]))
	case sub == "add" && (spec == "" || jobType == ""):
		return usageErr(stderr, cmd, errors.New(`--spec and --type are required, e.g. --spec "@every 10s" --type square --payload 3`))
	case cf.timeout <= 0:
		return usageErr(stderr, cmd, fmt.Errorf("--timeout %v must be positive", cf.timeout))
	}
	c, err := cf.newClient()
	if err != nil {
		return usageErr(stderr, cmd, err)
	}
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), cf.timeout)
	defer cancel()

	var infos []httpapi.ScheduleInfo
	switch sub {
	case "add":
		info, err := c.AddSchedule(ctx, httpapi.ScheduleRequest{Name: pos[0], Spec: spec, TimeZone: tz, Type: jobType,
			Payload: payloadJSON(input), Missed: missed, CatchUpMax: int32(min(max(catchUp, -1), 1<<20)), Paused: paused}) //nolint:gosec // bounded above
		if err != nil {
			return serverErr(stderr, cmd, err)
		}
		infos = []httpapi.ScheduleInfo{*info}
	case "list":
		if infos, err = c.Schedules(ctx); err != nil {
			return serverErr(stderr, cmd, err)
		}
	case "rm":
		if err := c.RemoveSchedule(ctx, pos[0]); err != nil {
			return serverErr(stderr, cmd, err)
		}
		if _, err := fmt.Fprintf(stdout, "removed schedule %s\n", pos[0]); err != nil {
			return outputFailed(stderr, "foreman "+cmd, err)
		}
		return 0
	case "pause", "resume":
		info, err := c.PauseSchedule(ctx, pos[0], sub == "pause")
		if err != nil {
			return serverErr(stderr, cmd, err)
		}
		infos = []httpapi.ScheduleInfo{*info}
	}
	if err := printSchedules(stdout, infos); err != nil {
		return outputFailed(stderr, "foreman "+cmd, err)
	}
	return 0
}

// printSchedules prints one line per schedule.
func printSchedules(w io.Writer, infos []httpapi.ScheduleInfo) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if _, err := fmt.Fprintln(tw, "NAME\tSPEC\tTYPE\tMISSED\tSTATE\tNEXT TICK\tLAST TICK\tFIRED\tSKIPPED"); err != nil {
		return err
	}
	for _, s := range infos {
		state := "active"
		if s.Paused {
			state = "paused"
		}
		next, last := "-", "-"
		if s.NextTick != nil && !s.Paused {
			next = s.NextTick.Format(time.RFC3339)
		}
		if s.LastTick != nil {
			last = s.LastTick.Format(time.RFC3339)
		}
		spec := s.Spec
		if s.TimeZone != "" {
			spec += " (" + s.TimeZone + ")"
		}
		if _, err := fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", s.Name, spec, s.Type, s.Missed, state, next, last, s.Fired, s.Skipped); err != nil {
			return err
		}
	}
	return tw.Flush()
}
