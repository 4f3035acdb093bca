package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/pulling"
)

// Limits and defaults of the campaign.
const (
	DefaultRecipients = 100_000
	MaxRecipients     = 10_000_000
	DefaultWorkers    = 8
	MaxWorkers        = 256
	DefaultBatch      = 1000
	DefaultTimeout    = 10 * time.Minute
	DefaultProgress   = time.Second
	stepTimeout       = 30 * time.Second
)

// Config is the campaign's configuration (the command-line flags).
type Config struct {
	Recipients int           // rows in the recipients table
	Workers    int           // pulling workers, each with its own EmailSender
	Window     int           // items a worker holds at once
	Batch      int           // rows per Epic page
	SMTP       string        // host:port of the SMTP server; "" starts a sink
	DB         string        // SQLite file; "" uses a temporary one
	Timeout    time.Duration // the whole campaign
	Progress   time.Duration // between progress lines
	Logger     *slog.Logger  // for the actors; nil discards

	// The campaign across processes (Senders > 0, see runCoordinator).
	Senders         int           // sender processes
	Concurrency     int           // workers (and SMTP connections) per sender process
	KillSenderAfter time.Duration // SIGKILL one sender after this long and start another (0: never)
	SMTPLatency     time.Duration // the built-in sink's delay per email
	Epic            string        // the Epic's name
	Seed            string        // sender role: the coordinator's membership endpoint
}

func (c Config) validate() error {
	switch {
	case c.Recipients < 0 || c.Recipients > MaxRecipients:
		return fmt.Errorf("emailcampaign: -recipients %d: want 0..%d", c.Recipients, MaxRecipients)
	case c.Senders < 0 || c.Senders > MaxSenders:
		return fmt.Errorf("emailcampaign: -senders %d: want 0..%d", c.Senders, MaxSenders)
	case c.Senders > 0 && (c.Concurrency < 1 || c.Concurrency > MaxWorkers):
		return fmt.Errorf("emailcampaign: -concurrency %d: want 1..%d", c.Concurrency, MaxWorkers)
	case c.Senders > 0 && c.Epic == "":
		return fmt.Errorf("emailcampaign: -epic: want a name")
	case c.KillSenderAfter < 0 || c.SMTPLatency < 0:
		return fmt.Errorf("emailcampaign: -kill-sender-after and -smtp-latency must not be negative")
	case c.KillSenderAfter > 0 && c.Senders == 0:
		return fmt.Errorf("emailcampaign: -kill-sender-after needs sender processes: set -senders")
	case c.Workers < 1 || c.Workers > MaxWorkers:
		return fmt.Errorf("emailcampaign: -workers %d: want 1..%d", c.Workers, MaxWorkers)
	case c.Window < 1 || c.Window > pulling.DefaultMaxWindow:
		return fmt.Errorf("emailcampaign: -window %d: want 1..%d", c.Window, pulling.DefaultMaxWindow)
	case c.Batch < 1:
		return fmt.Errorf("emailcampaign: -batch %d: want at least 1", c.Batch)
	case c.Timeout <= 0 || c.Progress <= 0:
		return fmt.Errorf("emailcampaign: -timeout and -progress must be positive")
	}
	return nil
}

// Summary is the outcome of a campaign.
type Summary struct {
	Stats    pulling.Stats
	Duration time.Duration
	// SinkReceived and SinkDistinct count what the built-in sink accepted
	// (-1 when an external SMTP server was used).
	SinkReceived int64
	SinkDistinct int
}

// runCampaign fills the database, starts the actors and sends one email per
// recipient, printing progress lines to out.
func runCampaign(ctx context.Context, cfg Config, out io.Writer) (sum Summary, err error) {
	if err := cfg.validate(); err != nil {
		return sum, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// Progress lines are best effort, like logs: one that cannot be written
	// is dropped and the campaign goes on.
	progress := func(format string, args ...any) { _, _ = fmt.Fprintf(out, format, args...) }

	dbPath := cfg.DB
	if dbPath == "" {
		dir, mkErr := os.MkdirTemp("", "emailcampaign-")
		if mkErr != nil {
			return sum, fmt.Errorf("emailcampaign: temp dir: %w", mkErr)
		}
		defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
		dbPath = filepath.Join(dir, "recipients.db")
	}
	start := time.Now()
	db, err := openStore(ctx, dbPath, cfg.Recipients)
	if err != nil {
		return sum, err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	progress("recipients table ready: %d rows in %s (%s)\n", cfg.Recipients, time.Since(start).Round(time.Millisecond), dbPath)
	epic, err := newRecipientEpic(ctx, db)
	if err != nil {
		return sum, err
	}

	smtpAddr := cfg.SMTP
	sum.SinkReceived = -1
	if smtpAddr == "" {
		sink, err := StartSink()
		if err != nil {
			return sum, err
		}
		defer func() {
			_ = sink.Close()
			sum.SinkReceived, sum.SinkDistinct = sink.Received(), sink.Distinct()
		}()
		smtpAddr = sink.Addr()
		progress("smtp sink listening on %s\n", smtpAddr)
	}

	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(s *actor.ActorSystem) *slog.Logger {
		return logger.With("system", s.ID)
	}))
	defer sys.Shutdown()
	root := sys.Root

	masterProps, err := pulling.MasterProps[Recipient](pulling.WithBatchSize(cfg.Batch),
		pulling.WithCodec(pulling.JSONCodec[Recipient]()), pulling.WithLogger(logger))
	if err != nil {
		return sum, err
	}
	coordinator, err := root.SpawnNamed(masterProps, "campaign-coordinator")
	if err != nil {
		return sum, fmt.Errorf("emailcampaign: spawn coordinator: %w", err)
	}
	creatorProps, err := newEmailCreatorProps(DefaultTemplate)
	if err != nil {
		return sum, err
	}
	creator := root.Spawn(creatorProps)
	for range cfg.Workers {
		sender := root.Spawn(newEmailSenderProps(smtpAddr))
		// The seed's doWork: creator ? context, then sender ? email.
		doWork := func(_ context.Context, r Recipient) error {
			res, err := root.RequestFuture(creator, &r, stepTimeout).Result()
			if err != nil {
				return fmt.Errorf("emailcampaign: create email for %s: %w", r.Email, err)
			}
			created := res.(*createResult)
			if created.err != nil {
				return created.err
			}
			res, err = root.RequestFuture(sender, created.email, stepTimeout).Result()
			if err != nil {
				return fmt.Errorf("emailcampaign: send email to %s: %w", r.Email, err)
			}
			return res.(*sendResult).err
		}
		workerProps, err := pulling.WorkerProps(coordinator, doWork,
			pulling.WithWindow(cfg.Window), pulling.WithLogger(logger))
		if err != nil {
			return sum, err
		}
		root.Spawn(workerProps)
	}

	type result struct {
		st  pulling.Stats
		err error
	}
	done := make(chan result, 1)
	started := time.Now()
	go func() {
		st, err := pulling.Run(ctx, root, coordinator, pulling.Epic[Recipient](epic))
		done <- result{st, err}
	}()
	tick := time.NewTicker(cfg.Progress)
	defer tick.Stop()
	var last uint64
	lastAt := started
	for {
		select {
		case r := <-done:
			sum.Stats, sum.Duration = r.st, time.Since(started)
			if r.err != nil {
				return sum, fmt.Errorf("emailcampaign: campaign: %w", r.err)
			}
			return sum, nil
		case now := <-tick.C:
			st, err := pulling.Progress(ctx, root, coordinator)
			if err != nil {
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					continue // the campaign's result reports it
				}
				progress("progress unavailable: %v\n", err)
				continue
			}
			rate := float64(st.Confirmed-last) / now.Sub(lastAt).Seconds()
			last, lastAt = st.Confirmed, now
			progress("sent %d / %d (%.0f/s), in flight %d, redelivered %d, failed %d\n",
				st.Confirmed, cfg.Recipients, rate, st.InFlight, st.Redelivered, st.Failed)
		}
	}
}
