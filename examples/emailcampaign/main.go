// Command emailcampaign is the email campaign of seed 000, built on the work
// pulling pattern (actors/pulling): a CampaignCoordinator (the pulling
// master) whose Epic pages recipients from a SQLite table, workers whose
// doWork asks an EmailCreator (text/template) for the email and an
// EmailSender (net/smtp) to send it. Without -smtp it starts a small SMTP
// sink on 127.0.0.1, so it runs on its own:
//
//	go run ./examples/emailcampaign -recipients 100000 -workers 8
//
// With -senders N the campaign runs across processes (cluster/pullcluster):
// this process is the coordinator (recipients, EmailCreator, sink, and the
// Epic's durable master as a cluster member) and starts N sender processes
// of this program (-role sender) that join through membership and pull:
//
//	go run ./examples/emailcampaign -recipients 100000 -senders 3
//	go run ./examples/emailcampaign -recipients 100000 -senders 3 -kill-sender-after 2s
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	cfg := Config{}
	var role, logLevel string
	flag.IntVar(&cfg.Recipients, "recipients", DefaultRecipients, "rows in the recipients table (0..10000000)")
	flag.IntVar(&cfg.Workers, "workers", DefaultWorkers, "pulling workers, each with its own SMTP connection (one process)")
	flag.IntVar(&cfg.Window, "window", 1, "items each worker holds at once")
	flag.IntVar(&cfg.Batch, "batch", DefaultBatch, "recipients fetched from SQLite per page")
	flag.StringVar(&cfg.SMTP, "smtp", "", "SMTP server host:port (default: a sink on 127.0.0.1)")
	flag.StringVar(&cfg.DB, "db", "", "SQLite file (default: a temporary file)")
	flag.DurationVar(&cfg.Timeout, "timeout", DefaultTimeout, "give up after this long")
	flag.DurationVar(&cfg.Progress, "progress", DefaultProgress, "interval between progress lines")
	flag.IntVar(&cfg.Senders, "senders", 0, "sender processes (0: run in this process with -workers)")
	flag.IntVar(&cfg.Concurrency, "concurrency", DefaultConcurrency, "workers (SMTP connections) per sender process")
	flag.DurationVar(&cfg.KillSenderAfter, "kill-sender-after", 0, "SIGKILL one sender after this long and start another (0: never)")
	flag.DurationVar(&cfg.SMTPLatency, "smtp-latency", 0, "the built-in sink's delay per email")
	flag.StringVar(&cfg.Epic, "epic", "campaign", "the Epic's name")
	flag.StringVar(&role, "role", roleCoordinator, "coordinator; sender (started by the coordinator); or sink (the SMTP sink alone, until stdin closes)")
	flag.StringVar(&cfg.Seed, "seed", "", "sender role: the coordinator's membership endpoint host:port")
	flag.StringVar(&logLevel, "log", "", "log level of the actors (debug, info, warn, error; default none)")
	flag.Parse()
	if logLevel != "" {
		var level slog.Level
		if err := level.UnmarshalText([]byte(logLevel)); err != nil {
			fmt.Fprintf(os.Stderr, "emailcampaign: -log %q: %v\n", logLevel, err)
			os.Exit(2)
		}
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch {
	case role == roleSender:
		if cfg.Seed == "" || cfg.SMTP == "" {
			fmt.Fprintln(os.Stderr, "emailcampaign: -role sender needs -seed and -smtp (the coordinator passes them)")
			os.Exit(2)
		}
		if err := runSender(ctx, cfg, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "sender:", err)
			os.Exit(1)
		}
	case role == roleSink:
		if err := runSink(ctx, cfg, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "sink:", err)
			os.Exit(1)
		}
	case role != roleCoordinator:
		fmt.Fprintf(os.Stderr, "emailcampaign: -role %q: want coordinator, sender or sink\n", role)
		os.Exit(2)
	case cfg.Senders > 0:
		sum, err := runCoordinator(ctx, cfg, os.Stdout)
		printClusterSummary(sum, cfg)
		if err == nil && sum.Distinct != cfg.Recipients && cfg.SMTP == "" {
			err = fmt.Errorf("emailcampaign: %d of %d recipients got an email", sum.Distinct, cfg.Recipients)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	default:
		sum, err := runCampaign(ctx, cfg, os.Stdout)
		printSummary(sum, cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
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

func printClusterSummary(sum ClusterSummary, cfg Config) {
	if cfg.SMTP != "" {
		fin := uint64(0)
		if sum.Progress != nil {
			fin = sum.Progress.GetFinished()
		}
		rate := 0.0
		if sum.Duration > 0 {
			rate = float64(fin) / sum.Duration.Seconds()
		}
		fmt.Printf("summary: recipients %d, confirmed %d in %s (%.0f/s); sent and duplicates: see the SMTP server %s\n",
			sum.Recipients, fin, sum.Duration.Round(1e6), rate, cfg.SMTP)
	} else {
		fmt.Printf("summary: recipients %d, sent %d, distinct %d, duplicates %d, in %s (%.0f/s)\n",
			sum.Recipients, sum.Sent, sum.Distinct, sum.Duplicates(), sum.Duration.Round(1e6), sum.Rate())
	}
	fmt.Printf("senders: %d started, %d killed, %d workers each (window %d)\n",
		sum.SendersStarted, sum.SendersKilled, cfg.Concurrency, cfg.Window)
	if p := sum.Progress; p != nil {
		fmt.Printf("master: finished %d, redelivered %d (this activation), failed %d\n",
			p.GetFinished(), p.GetRedelivered(), p.GetFailed())
	}
	rss := "unknown"
	if sum.PeakRSS >= 0 {
		rss = fmt.Sprintf("%.1f MiB", float64(sum.PeakRSS)/(1<<20))
	}
	fmt.Printf("largest mailbox: %d; coordinator peak RSS: %s\n", sum.LargestMailbox, rss)
}
