// Command emailcampaign is the email campaign of seed 000, built on the work
// pulling pattern (actors/pulling): a CampaignCoordinator (the pulling
// master) whose Epic pages recipients from a SQLite table, workers whose
// doWork asks an EmailCreator (text/template) for the email and an
// EmailSender (net/smtp) to send it. Without -smtp it starts a small SMTP
// sink on 127.0.0.1, so it runs on its own:
//
//	go run ./examples/emailcampaign -recipients 100000 -workers 8
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	cfg := Config{}
	flag.IntVar(&cfg.Recipients, "recipients", DefaultRecipients, "rows in the recipients table (0..10000000)")
	flag.IntVar(&cfg.Workers, "workers", DefaultWorkers, "pulling workers, each with its own SMTP connection")
	flag.IntVar(&cfg.Window, "window", 1, "items each worker holds at once")
	flag.IntVar(&cfg.Batch, "batch", DefaultBatch, "recipients fetched from SQLite per page")
	flag.StringVar(&cfg.SMTP, "smtp", "", "SMTP server host:port (default: a sink on 127.0.0.1)")
	flag.StringVar(&cfg.DB, "db", "", "SQLite file (default: a temporary file)")
	flag.DurationVar(&cfg.Timeout, "timeout", DefaultTimeout, "give up after this long")
	flag.DurationVar(&cfg.Progress, "progress", DefaultProgress, "interval between progress lines")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sum, err := runCampaign(ctx, cfg, os.Stdout)
	printSummary(sum, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func printSummary(sum Summary, cfg Config) {
	st := sum.Stats
	rate := 0.0
	if s := sum.Duration.Seconds(); s > 0 {
		rate = float64(st.Confirmed) / s
	}
	fmt.Printf("summary: %d of %d emails sent in %s (%.0f/s), %d workers, redelivered %d, failed %d\n",
		st.Confirmed, cfg.Recipients, sum.Duration.Round(1e6), rate, cfg.Workers, st.Redelivered, st.Failed)
	if sum.SinkReceived >= 0 {
		fmt.Printf("smtp sink: %d messages received, %d distinct recipients\n", sum.SinkReceived, sum.SinkDistinct)
	}
}
