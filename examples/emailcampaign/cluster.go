package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/pulling"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/membership"
	"github.com/foreman-actors/foreman/cluster/pullcluster"
	"github.com/foreman-actors/foreman/messages"
)

// Limits and defaults of the campaign across processes.
const (
	MaxSenders         = 32
	DefaultConcurrency = 16
	// senderStopWait is how long a stopping coordinator waits for a sender
	// to exit after closing its stdin and sending SIGTERM, before SIGKILL.
	senderStopWait = 10 * time.Second
	// reportEvery is how often a sender reports its largest mailbox.
	reportEvery = 250 * time.Millisecond
	// pollEvery is how often the coordinator asks the master for progress.
	pollEvery = 100 * time.Millisecond
)

// Roles of the program's processes.
const (
	roleCoordinator = "coordinator"
	roleSender      = "sender"
	roleSink        = "sink"
)

// emailCodec carries emails to senders on other nodes.
var emailCodec = pulling.JSONCodec[*Email]()

// ClusterSummary is the outcome of a campaign across processes.
type ClusterSummary struct {
	Recipients     int
	Sent           int64 // messages the sink accepted
	Distinct       int   // distinct recipients the sink saw
	Duration       time.Duration
	Progress       *messages.PullingProgress // the master's last answer
	SendersStarted int
	SendersKilled  int
	LargestMailbox int64 // any actor of ours, in any process
	PeakRSS        int64 // the coordinator's, bytes; -1 unknown
}

// Duplicates is how many emails went to a recipient who had one already.
func (s ClusterSummary) Duplicates() int64 { return s.Sent - int64(s.Distinct) }

// Rate is distinct recipients served per second.
func (s ClusterSummary) Rate() float64 {
	if s.Duration <= 0 {
		return 0
	}
	return float64(s.Distinct) / s.Duration.Seconds()
}

// runCoordinator is the campaign across processes: this process holds the
// recipients (SQLite), the EmailCreator, the SMTP sink and, as a cluster
// member, the Epic's durable master; it starts cfg.Senders sender
// processes (this program with -role sender), which join as clients and
// pull. With KillSenderAfter it SIGKILLs the oldest sender once and starts
// a new one.
func runCoordinator(ctx context.Context, cfg Config, out io.Writer) (sum ClusterSummary, err error) {
	if err := cfg.validate(); err != nil {
		return sum, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	progress := func(format string, args ...any) { _, _ = fmt.Fprintf(out, format, args...) }
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	sum.Recipients, sum.PeakRSS = cfg.Recipients, -1

	dir, err := os.MkdirTemp("", "emailcampaign-")
	if err != nil {
		return sum, fmt.Errorf("emailcampaign: temp dir: %w", err)
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	dbPath := cfg.DB
	if dbPath == "" {
		dbPath = filepath.Join(dir, "recipients.db")
	}
	start := time.Now()
	db, err := openStore(ctx, dbPath, cfg.Recipients)
	if err != nil {
		return sum, err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	progress("recipients table ready: %d rows in %s (%s)\n", cfg.Recipients, time.Since(start).Round(time.Millisecond), dbPath)

	smtpAddr := cfg.SMTP
	var sink *Sink
	if smtpAddr == "" {
		sink, err = StartSinkWithLatency(cfg.SMTPLatency)
		if err != nil {
			return sum, err
		}
		defer func() {
			_ = sink.Close()
			sum.Sent, sum.Distinct = sink.Received(), sink.Distinct()
		}()
		smtpAddr = sink.Addr()
		progress("smtp sink listening on %s (latency %s)\n", smtpAddr, cfg.SMTPLatency)
	}

	jrnl, err := journal.OpenSQLite(filepath.Join(dir, "journal.db"), journal.WithLogger(logger))
	if err != nil {
		return sum, fmt.Errorf("emailcampaign: open the journal: %w", err)
	}
	defer func() { err = errors.Join(err, jrnl.Close()) }()

	prov, err := membership.New(membership.WithHTTPAddr("127.0.0.1:0"), membership.WithLogger(logger))
	if err != nil {
		return sum, err
	}
	hw := &highWater{}
	var creator *actor.PID // set before the Epic starts; the opener runs after
	var root *actor.RootContext
	open := func(ctx context.Context, _ string) (pulling.SeekEpic[*Email], error) {
		return newEmailEpic(ctx, db, root, creator)
	}
	master := pullcluster.EpicMaster(jrnl, open, pulling.WithCodec(emailCodec), pulling.WithBatchSize(cfg.Batch),
		pulling.WithLogger(logger))
	n, err := pullcluster.Join(ctx, pullcluster.Config{Provider: prov, Member: true, Master: master,
		MasterMailbox: hw.mailbox(), Logger: logger})
	if err != nil {
		return sum, err
	}
	defer func() { err = errors.Join(err, n.Stop(context.Background())) }()
	root = n.System().Root
	creatorProps, err := newEmailCreatorProps(DefaultTemplate)
	if err != nil {
		return sum, err
	}
	creator = root.Spawn(creatorProps.Configure(actor.WithMailbox(hw.mailbox())))

	epic := cfg.Epic
	started := time.Now()
	if _, err := n.Start(ctx, epic); err != nil {
		return sum, err
	}
	progress("epic %q started on %s; starting %d sender processes\n", epic, n.Address(), cfg.Senders)

	fleet := &senderFleet{cfg: cfg, seed: prov.HTTPAddr(), smtp: smtpAddr, hw: hw, out: out}
	defer func() {
		fleet.stopAll()
		sum.SendersStarted, sum.SendersKilled = fleet.started, fleet.killed
		sum.LargestMailbox = hw.Max()
		sum.PeakRSS = peakRSS()
	}()
	for range cfg.Senders {
		if err := fleet.start(); err != nil {
			return sum, err
		}
	}

	var kill <-chan time.Time
	if cfg.KillSenderAfter > 0 {
		t := time.NewTimer(cfg.KillSenderAfter)
		defer t.Stop()
		kill = t.C
	}
	// Poll often, so the campaign's end is seen soon after it happens (the
	// rate depends on it); print every cfg.Progress.
	tick := time.NewTicker(min(cfg.Progress, pollEvery))
	defer tick.Stop()
	var last uint64
	lastAt := started
	for {
		select {
		case <-ctx.Done():
			return sum, fmt.Errorf("emailcampaign: campaign: %w", ctx.Err())
		case <-kill:
			if err := fleet.killOne(); err != nil {
				return sum, err
			}
		case now := <-tick.C:
			p, err := n.Progress(ctx, epic)
			if err != nil {
				progress("progress unavailable: %v\n", err)
				continue
			}
			sum.Progress = p
			if p.GetDone() {
				sum.Duration = time.Since(started)
				if p.GetError() != "" {
					return sum, fmt.Errorf("emailcampaign: campaign failed: %s", p.GetError())
				}
				return sum, nil
			}
			if now.Sub(lastAt) < cfg.Progress {
				continue
			}
			rate := float64(p.GetFinished()-last) / now.Sub(lastAt).Seconds()
			last, lastAt = p.GetFinished(), now
			progress("sent %d / %d (%.0f/s), in flight %d, workers %d, redelivered %d, largest mailbox %d\n",
				p.GetFinished(), cfg.Recipients, rate, p.GetInFlight(), p.GetWorkers(), p.GetRedelivered(), hw.Max())
		}
	}
}

// senderFleet starts, kills and stops the sender processes.
type senderFleet struct {
	cfg  Config
	seed string // the coordinator's membership endpoint
	smtp string
	hw   *highWater
	out  io.Writer

	mu      sync.Mutex
	procs   []*senderProc // alive, oldest first
	started int
	killed  int
}

type senderProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed when the process was reaped
}

func (f *senderFleet) start() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("emailcampaign: find this program to start senders: %w", err)
	}
	cmd := exec.Command(exe, "-role", roleSender, "-seed", f.seed, "-smtp", f.smtp, "-epic", f.cfg.Epic,
		"-concurrency", strconv.Itoa(f.cfg.Concurrency), "-window", strconv.Itoa(f.cfg.Window))
	dieWithParent(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("emailcampaign: sender stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("emailcampaign: sender stdout: %w", err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("emailcampaign: start sender: %w", err)
	}
	p := &senderProc{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		// Reports: "mailbox N", the sender's largest mailbox so far.
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "mailbox "); ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					f.hw.observe(n)
				}
			}
		}
		_ = cmd.Wait() // reap; the exit status of a killed sender is expected
		close(p.done)
	}()
	f.mu.Lock()
	f.procs = append(f.procs, p)
	f.started++
	f.mu.Unlock()
	_, _ = fmt.Fprintf(f.out, "sender started: pid %d\n", cmd.Process.Pid)
	return nil
}

// killOne SIGKILLs the oldest sender, waits until it is reaped and starts a
// new one.
func (f *senderFleet) killOne() error {
	f.mu.Lock()
	if len(f.procs) == 0 {
		f.mu.Unlock()
		return nil
	}
	p := f.procs[0]
	f.procs = f.procs[1:]
	f.killed++
	f.mu.Unlock()
	_ = p.cmd.Process.Kill()
	<-p.done
	_, _ = fmt.Fprintf(f.out, "sender killed: pid %d (SIGKILL); starting a new one\n", p.cmd.Process.Pid)
	return f.start()
}

// stopAll asks every sender to stop (stdin closed, SIGTERM), SIGKILLs those
// still running after senderStopWait and reaps them all.
func (f *senderFleet) stopAll() {
	f.mu.Lock()
	procs := f.procs
	f.procs = nil
	f.mu.Unlock()
	for _, p := range procs {
		_ = p.stdin.Close()
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.NewTimer(senderStopWait)
	defer deadline.Stop()
	for _, p := range procs {
		select {
		case <-p.done:
		case <-deadline.C:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// runSender is a sender process: a client of the coordinator's cluster with
// cfg.Concurrency workers, each with its own EmailSender (one SMTP
// connection) and window cfg.Window. It reports its largest mailbox on
// stdout and exits when its stdin closes (the coordinator is done or gone)
// or on SIGTERM.
func runSender(ctx context.Context, cfg Config, stdin io.Reader, out io.Writer) error {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, stdin) // EOF: the coordinator closed it, or died
		cancel()
	}()
	prov, err := membership.New(membership.WithSeedHTTP(cfg.Seed), membership.WithHTTPAddr("127.0.0.1:0"),
		membership.WithLogger(logger))
	if err != nil {
		return err
	}
	n, err := pullcluster.Join(ctx, pullcluster.Config{Provider: prov, Logger: logger})
	if err != nil {
		return err
	}
	root := n.System().Root
	hw := &highWater{}
	var workers []*actor.PID
	for range cfg.Concurrency {
		sender := root.Spawn(newEmailSenderProps(cfg.SMTP).Configure(actor.WithMailbox(hw.mailbox())))
		do := func(_ context.Context, e *Email) error {
			res, err := root.RequestFuture(sender, e, stepTimeout).Result()
			if err != nil {
				return fmt.Errorf("emailcampaign: send email to %s: %w", e.To, err)
			}
			return res.(*sendResult).err
		}
		props, err := pullcluster.WorkerProps(n, cfg.Epic, do, pulling.WithCodec(emailCodec),
			pulling.WithWindow(cfg.Window), pulling.WithLogger(logger))
		if err != nil {
			n.Kill()
			return err
		}
		workers = append(workers, root.Spawn(props.Configure(actor.WithMailbox(hw.mailbox()))))
	}
	t := time.NewTicker(reportEvery)
	defer t.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-t.C:
			_, _ = fmt.Fprintf(out, "mailbox %d\n", hw.Max())
		}
	}
	_, _ = fmt.Fprintf(out, "mailbox %d\n", hw.Max())
	// Stopped workers tell the master nothing; it hands their items out
	// again when it sees them terminate.
	for _, w := range workers {
		_ = root.StopFuture(w).Wait()
	}
	return n.Stop(context.Background())
}

// emailEpic is the campaign's resumable Epic: it pages recipients by
// primary key (the cursor is the last id, 8 bytes) and has the
// EmailCreator write a page's emails in one request, so the items that
// travel to senders are finished emails.
type emailEpic struct {
	db        *sql.DB
	root      *actor.RootContext
	creator   *actor.PID
	lastID    int64 // owned by the master's fetch goroutine, never concurrent
	remaining int
}

func newEmailEpic(_ context.Context, db *sql.DB, root *actor.RootContext, creator *actor.PID) (*emailEpic, error) {
	if root == nil || creator == nil {
		return nil, errors.New("emailcampaign: the email creator is not running yet")
	}
	return &emailEpic{db: db, root: root, creator: creator}, nil
}

func (e *emailEpic) Seek(ctx context.Context, cursor []byte) error {
	e.lastID = 0
	if cursor != nil {
		if len(cursor) != 8 {
			return fmt.Errorf("emailcampaign: cursor of %d bytes, want 8", len(cursor))
		}
		e.lastID = int64(binary.BigEndian.Uint64(cursor))
	}
	if err := e.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM recipients WHERE id > ?`, e.lastID).Scan(&e.remaining); err != nil {
		return fmt.Errorf("emailcampaign: count recipients after id %d: %w", e.lastID, err)
	}
	return nil
}

func (e *emailEpic) Remaining() int { return e.remaining }

func (e *emailEpic) NextAt(ctx context.Context, limit int) ([]pulling.Positioned[*Email], error) {
	rs, err := e.page(ctx, limit)
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	res, err := e.root.RequestFuture(e.creator, &createBatch{recipients: rs}, stepTimeout).Result()
	if err != nil {
		return nil, fmt.Errorf("emailcampaign: create a page of emails: %w", err)
	}
	created := res.(*createBatchResult)
	if created.err != nil {
		return nil, created.err
	}
	out := make([]pulling.Positioned[*Email], len(rs))
	for i, r := range rs {
		out[i] = pulling.Positioned[*Email]{Item: created.emails[i], Cursor: binary.BigEndian.AppendUint64(nil, uint64(r.ID))}
	}
	e.lastID = rs[len(rs)-1].ID
	return out, nil
}

func (e *emailEpic) page(ctx context.Context, limit int) ([]Recipient, error) {
	rows, err := e.db.QueryContext(ctx,
		`SELECT id, name, email, city FROM recipients WHERE id > ? ORDER BY id LIMIT ?`, e.lastID, limit)
	if err != nil {
		return nil, fmt.Errorf("emailcampaign: page after id %d: %w", e.lastID, err)
	}
	defer func() { _ = rows.Close() }() // rows.Err reports read errors
	batch := make([]Recipient, 0, limit)
	for rows.Next() {
		var r Recipient
		if err := rows.Scan(&r.ID, &r.Name, &r.Email, &r.City); err != nil {
			return nil, err
		}
		batch = append(batch, r)
	}
	return batch, rows.Err()
}

// runSink runs the SMTP sink alone (with cfg.SMTPLatency), for a campaign
// whose coordinator should not hold the sink's memory (-smtp): it prints
// "sink listening on ADDR", then, when its stdin closes or it is signalled,
// "sink: received N, distinct D".
func runSink(ctx context.Context, cfg Config, stdin io.Reader, out io.Writer) error {
	sink, err := StartSinkWithLatency(cfg.SMTPLatency)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "sink listening on %s\n", sink.Addr())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		cancel()
	}()
	<-ctx.Done()
	err = sink.Close()
	_, _ = fmt.Fprintf(out, "sink: received %d, distinct %d\n", sink.Received(), sink.Distinct())
	return err
}
