package adaptive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Job is one unit of work for the Scheduler. Run must return soon after ctx
// is cancelled (the scheduler cancels it when it stops, and waits for it).
type Job struct {
	// ID names the job in events and logs.
	ID string
	// Run does the work.
	Run func(ctx context.Context) error
}

// Batch is the message that hands jobs to the Scheduler. They go into the
// scheduler's own queue, not its mailbox, in order.
type Batch struct {
	// Jobs to queue.
	Jobs []Job
}

// GetStatus asks the Scheduler for its Status (reply with c.Respond).
type GetStatus struct{}

// Status is a snapshot of the Scheduler.
type Status struct {
	// Queue is the number of jobs waiting.
	Queue int
	// InFlight is the number of jobs running.
	InFlight int
	// Parallelism is the current limit.
	Parallelism int
	// Completed counts finished jobs, failed ones included.
	Completed uint64
	// Failed counts jobs whose Run returned an error or panicked.
	Failed uint64
}

// String formats the status as the seed logs it.
func (s Status) String() string {
	return fmt.Sprintf("Queue: %d, In Flight: %d, Parallelism: %d", s.Queue, s.InFlight, s.Parallelism)
}

// BatchQueued is sent to the listener when a batch is queued.
type BatchQueued struct {
	// Size is the number of jobs in the batch.
	Size int
	// At is when it was queued.
	At time.Time
	// Status is the scheduler after queueing and starting what fits.
	Status Status
}

// JobStarted is sent to the listener when a job leaves the queue and starts
// (the seed's "Started batch B job J").
type JobStarted struct {
	// ID is the job's ID.
	ID string
	// Arrival is when the job was queued, Started when it started.
	Arrival, Started time.Time
}

// JobCompleted is sent to the listener when a job finishes.
type JobCompleted struct {
	// ID is the job's ID.
	ID string
	// Err is the job's error, nil on success.
	Err error
	// Arrival, Started and Finished time the job: Finished-Arrival is the
	// end-to-end time, Finished-Started the run time.
	Arrival, Started, Finished time.Time
	// Status is the scheduler after the completion.
	Status Status
}

// jobDone is the message a job's goroutine sends back to the scheduler.
type jobDone struct {
	owner *Scheduler // the incarnation that started the job
	start Start[Job]
	err   error
}

// Job errors.
var (
	// ErrNoRun reports a Job without a Run function.
	ErrNoRun = errors.New("adaptive: job has no Run function")
	// ErrJobPanicked reports a Job whose Run panicked; the scheduler keeps going.
	ErrJobPanicked = errors.New("adaptive: job panicked")
)

// Scheduler is the actor that runs jobs with a self-tuned concurrency: jobs
// arrive in batches into its queue, at most Parallelism run at once, and the
// policy picks the next Parallelism on every completion. Create it with Props.
type Scheduler struct {
	opts      options
	core      *Core[Job]
	logger    *slog.Logger
	self      *actor.PID
	root      *actor.RootContext
	ctx       context.Context //nolint:containedctx // the actor's lifetime: cancelled when it stops, passed to jobs
	cancel    context.CancelFunc
	jobs      sync.WaitGroup // running job goroutines; Done is called by them, Wait by the actor
	failed    uint64
	lastLimit int
}

// Props returns the props of a Scheduler, or an error when an option is
// invalid. Each incarnation starts with a fresh built-in policy.
func Props(opts ...Option) (*actor.Props, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("adaptive: scheduler props: %w", err)
	}
	return actor.PropsFromProducer(func() actor.Actor {
		p := o.newPolicy()
		return &Scheduler{opts: o, core: NewCore[Job](p), lastLimit: p.Limit()}
	}), nil
}

// Receive implements actor.Actor.
func (s *Scheduler) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		s.self, s.root = c.Self(), c.ActorSystem().Root
		s.logger = s.opts.logger.With("component", "adaptive.scheduler", "pid", c.Self().String())
		s.ctx, s.cancel = context.WithCancel(context.Background())
	case *actor.Stopping, *actor.Restarting:
		s.stop()
	case *Batch:
		s.push(c, m.Jobs)
	case Batch:
		s.push(c, m.Jobs)
	case *jobDone:
		if m.owner == s { // a job of a previous incarnation says nothing to this one
			s.done(c, m)
		}
	case *GetStatus, GetStatus:
		c.Respond(s.status())
	}
}

func (s *Scheduler) stop() {
	if s.cancel != nil {
		s.cancel()
	}
	s.jobs.Wait()
}

func (s *Scheduler) status() Status {
	st := s.core.Stats()
	return Status{Queue: st.Queue, InFlight: st.InFlight, Parallelism: st.Limit, Completed: st.Completed, Failed: s.failed}
}

func (s *Scheduler) push(c actor.Context, jobs []Job) {
	now := s.opts.clock.Now()
	started := s.core.PushBatch(now, jobs)
	s.run(started)
	st := s.status()
	s.logStatus(st, "batch", len(jobs))
	if s.opts.listener != nil {
		c.Send(s.opts.listener, &BatchQueued{Size: len(jobs), At: now, Status: st})
		s.announce(c, started)
	}
}

func (s *Scheduler) done(c actor.Context, m *jobDone) {
	now := s.opts.clock.Now()
	if m.err != nil {
		s.failed++
		s.logger.Debug("job failed", "job_id", m.start.Job.ID, "error", m.err)
	}
	started := s.core.Done(now, m.start.Ticket, s.opts.readCPU())
	s.run(started)
	st := s.status()
	s.logStatus(st, "completed", 1)
	if s.opts.listener != nil {
		c.Send(s.opts.listener, &JobCompleted{
			ID: m.start.Job.ID, Err: m.err, Arrival: m.start.Ticket.Arrival,
			Started: m.start.Ticket.Started, Finished: now, Status: st,
		})
		s.announce(c, started)
	}
}

// announce tells the listener which jobs started. It follows the event that
// started them (BatchQueued, JobCompleted), so the listener reads "queued" or
// "completed" before the starts it caused, as the seed's log does.
func (s *Scheduler) announce(c actor.Context, started []Start[Job]) {
	for _, st := range started {
		c.Send(s.opts.listener, &JobStarted{ID: st.Job.ID, Arrival: st.Ticket.Arrival, Started: st.Ticket.Started})
	}
}

func (s *Scheduler) logStatus(st Status, event string, n int) {
	if st.Parallelism != s.lastLimit {
		s.logger.Debug("parallelism changed", "old", s.lastLimit, "new", st.Parallelism)
		s.lastLimit = st.Parallelism
	}
	s.logger.Debug(st.String(), "event", event, "jobs", n,
		"queue", st.Queue, "in_flight", st.InFlight, "parallelism", st.Parallelism)
}

// run starts each job in its own goroutine; the goroutine touches no field
// of the actor and reports back with a message.
func (s *Scheduler) run(started []Start[Job]) {
	ctx, root, self := s.ctx, s.root, s.self
	for _, st := range started {
		s.jobs.Add(1)
		go func() {
			defer s.jobs.Done()
			err := runJob(ctx, st.Job)
			root.Send(self, &jobDone{owner: s, start: st, err: err})
		}()
	}
}

func runJob(ctx context.Context, j Job) (err error) {
	if j.Run == nil {
		return fmt.Errorf("run job %q: %w", j.ID, ErrNoRun)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("run job %q: %w: %v\n%s", j.ID, ErrJobPanicked, r, debug.Stack())
		}
	}()
	return j.Run(ctx)
}
