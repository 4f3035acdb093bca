package frontend

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/trace"

	"github.com/foreman-actors/foreman/actors/frontend/core"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/tracing"
	"github.com/foreman-actors/foreman/messages"
)

// Client submits work to the master and asks it for status: the Go API that
// the HTTP front, the foreman binary and the Frontend actor share. It is safe
// for concurrent use.
type Client struct {
	sys    *actor.ActorSystem
	master route.Master
	cfg    config
	log    *slog.Logger
	// boxes holds registered reply addresses that got their one reply,
	// for the next asks (see replyBox); nil: every ask registers its own.
	boxes chan *replyBox
	// tracer starts the submissions' spans; nil: none (WithTracerProvider).
	tracer trace.Tracer
	// groups gathers each shard's single submissions into WorkBatch
	// messages (group.go); nil: every Submit attempt asks alone.
	groups []*shardGatherer
}

// replyBoxesKept bounds the reply addresses a Client keeps registered for
// reuse: about the asks it has in flight at once under load. They stay in
// the actor system's registry as long as the Client is used.
const replyBoxesKept = 256

// NewClient returns a client of the master reached through master. It reads
// WithAskTimeout, WithRetryBackoff, WithClock and WithLogger.
func NewClient(sys *actor.ActorSystem, master route.Master, opts ...Option) (*Client, error) {
	if sys == nil {
		return nil, fmt.Errorf("%w: nil actor system", ErrInvalidOption)
	}
	if err := master.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	log := cfg.logger
	if log == nil {
		log = sys.Logger()
	}
	c := &Client{sys: sys, master: master, cfg: cfg, log: log.With("component", "frontend_client"),
		boxes: make(chan *replyBox, replyBoxesKept), tracer: tracing.Tracer(cfg.tracerProvider)}
	c.groups = c.newShardGatherers(master.Shards(), cfg.submitGroups)
	return c, nil
}

// Submit sends w to the master until it is acknowledged (nil: the work is
// durable), the master rejects it for good (*RejectedError, matching
// ErrRejected), or ctx ends (an error matching ctx.Err() that also wraps the
// last attempt's error). Timeouts, an unreachable master and
// REJECT_CODE_UNAVAILABLE are retried with backoff; the master acknowledges
// an id it already accepted again, so retrying never runs a job twice.
// Submissions made at the same time travel to their master together
// (WithSubmitGroups); each still gets its own outcome.
//
// The work carries the trace context of ctx's span (Work.trace_parent),
// or, with WithTracerProvider, of a foreman.submit span under it: the
// master's and the worker's spans of the job join that trace.
func (c *Client) Submit(ctx context.Context, w *messages.Work) error {
	if c.tracer != nil || trace.SpanContextFromContext(ctx).IsValid() {
		return c.submitTraced(ctx, w)
	}
	return c.retry(ctx, submitWhat{w}, func() error { return c.submitAttempt(ctx, w) })
}

// submitWhat names a Submit's attempts in errors and logs; it is formatted
// only when one is written, not on every successful submission.
type submitWhat struct{ w *messages.Work }

func (s submitWhat) String() string { return fmt.Sprintf("submit %q", s.w.GetWorkId()) }

// whatText names attempts with a text made beforehand.
type whatText string

func (s whatText) String() string { return string(s) }

// retry calls attempt until it returns nil or an error not worth retrying,
// or ctx ends; what names the attempts in the error and the log. The
// decisions are the pure core's (core.Retry, which the simulator runs
// too): timeouts, a missing master and temporary rejections are retried
// with backoff; when the master's node just left, the next attempt goes at
// once (once: its successor is being found now). Once ctx ends the error
// matches ctx.Err() and wraps the last attempt's.
func (c *Client) retry(ctx context.Context, what fmt.Stringer, attempt func() error) error {
	policy := core.NewRetry(core.Backoff{Min: c.cfg.retryMin, Max: c.cfg.retryMax})
	for {
		err := attempt()
		if err == nil {
			return nil
		}
		d := policy.After(classify(err), ctx.Err() != nil)
		switch d.Action {
		case core.Again:
			c.log.Debug("master gone, trying again at once", "what", what.String(), "attempt", d.Attempt)
			continue
		case core.Stop:
			if ctx.Err() != nil {
				return fmt.Errorf("frontend: %s gave up after %d attempts (last: %w): %w", what, d.Attempt, err, ctx.Err())
			}
			return err
		}
		c.log.Debug("failed, retrying", "what", what.String(), "attempt", d.Attempt, "backoff", d.Wait, "error", err)
		t := c.cfg.clock.NewTimer(d.Wait)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("frontend: %s gave up after %d attempts (last: %w): %w", what, d.Attempt, err, ctx.Err())
		}
	}
}

// SubmitOnce makes one attempt: nil once the master acknowledged w, or
// ErrTimeout, route.ErrNoMaster, *RejectedError, ErrInvalidWork, ctx.Err().
func (c *Client) SubmitOnce(ctx context.Context, w *messages.Work) error {
	if w == nil {
		return fmt.Errorf("%w: nil work", ErrInvalidWork)
	}
	if w.GetWorkId() == "" {
		return fmt.Errorf("%w: the work id is empty; give every job a unique id", ErrInvalidWork)
	}
	res, err := c.askWork(ctx, w.GetWorkId(), w)
	if err != nil {
		return err
	}
	switch core.JudgeAnswer(w.GetWorkId(), res) {
	case core.Acked:
		if a := res.(*messages.Ack); a.GetDuplicateOf() != "" {
			return &DuplicateError{WorkID: w.GetWorkId(), Of: a.GetDuplicateOf(), Status: a.GetDuplicateStatus()}
		}
		return nil
	case core.Rejected, core.Unavailable:
		r := res.(*messages.WorkRejected)
		return &RejectedError{WorkID: w.GetWorkId(), Code: r.GetCode(), Reason: r.GetReason()}
	}
	if r, ok := res.(*messages.Ack); ok {
		return fmt.Errorf("%w: Ack for %q while submitting %q", ErrUnexpectedReply, r.GetWorkId(), w.GetWorkId())
	}
	return fmt.Errorf("%w: %T answering Work %q", ErrUnexpectedReply, res, w.GetWorkId())
}

// WorkStatus asks the master about one job (one attempt). A master still
// recovering answers a temporary *RejectedError (REJECT_CODE_UNAVAILABLE).
func (c *Client) WorkStatus(ctx context.Context, workID string) (*messages.WorkStatusReply, error) {
	res, err := c.askWork(ctx, workID, &messages.GetWorkStatus{WorkId: workID})
	if err != nil {
		return nil, err
	}
	switch r := res.(type) {
	case *messages.WorkStatusReply:
		return r, nil
	case *messages.WorkRejected: // the master is recovering: temporary
		return nil, &RejectedError{WorkID: workID, Code: r.GetCode(), Reason: r.GetReason()}
	default:
		return nil, fmt.Errorf("%w: %T answering GetWorkStatus", ErrUnexpectedReply, res)
	}
}

// MasterStatus asks the master for its overview (one attempt). With
// several shards it asks shard 0's master; ShardStatus asks them all.
func (c *Client) MasterStatus(ctx context.Context) (*messages.MasterStatus, error) {
	return c.shardStatus(ctx, 0)
}

// Shards returns how many shards (masters) the client's route spans.
func (c *Client) Shards() int { return c.master.Shards() }

// ShardStatus is one shard's answer to [Client.ShardStatus].
type ShardStatus struct {
	// Shard is the shard's number (0..N-1).
	Shard int
	// Status is its master's overview (where it runs, its queue, its
	// epoch); nil when Err is set.
	Status *messages.MasterStatus
	// Err says why the shard did not answer.
	Err error
}

// ShardStatus asks every shard's master for its overview, all at once
// (one attempt each), and returns them in shard order. A shard that does
// not answer has its Err set; the others are still reported.
func (c *Client) ShardStatus(ctx context.Context) []ShardStatus {
	out := make([]ShardStatus, c.master.Shards())
	var wg sync.WaitGroup
	for k := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := c.shardStatus(ctx, k)
			out[k] = ShardStatus{Shard: k, Status: st, Err: err}
		}()
	}
	wg.Wait()
	return out
}

func (c *Client) shardStatus(ctx context.Context, k int) (*messages.MasterStatus, error) {
	res, err := c.askTo(ctx, c.master.Shard(k), &messages.GetMasterStatus{}, c.cfg.askTimeout)
	if err != nil {
		return nil, err
	}
	r, ok := res.(*messages.MasterStatus)
	if !ok {
		return nil, fmt.Errorf("%w: %T answering GetMasterStatus", ErrUnexpectedReply, res)
	}
	return r, nil
}

// replyBox is the reply address of one ask: a process of our own with a
// one-slot channel, so nothing but the reply ever writes to it (completing
// protoactor's Future from our side, when the caller leaves, races with a
// reply arriving at that moment: the pinned protoactor writes a Future's
// result without a lock).
//
// Every question to the master gets one answer (or a DeadLetterResponse in
// its place), so a box whose ask received its answer gets nothing more and
// serves the Client's next ask (Client.boxes): registering and removing a
// process per ask was a quarter of the ask's CPU. A box whose ask ended
// without its answer (timeout, the caller left, the master's node left)
// may still receive it late, so it is removed, never reused.
//
// A box can be watched, as an actor can: the master watches the reader of
// a held feed read (ReadResults.watch_reader) and drops the read when the
// reader terminates. A box is told Terminated to its watchers when it is
// removed, which is when its ask ended (answered or not), so a watched box
// is never reused: its removal is what tells the master that the reader
// went (the caller's ctx ended) and frees the master's slot at once.
type replyBox struct {
	ch    chan any
	pid   *actor.PID
	timer *time.Timer // the ask timeout; stopped between asks
	sys   *actor.ActorSystem

	mu       sync.Mutex
	watchers []*actor.PID // told Terminated when the box is removed
	removed  bool
}

func (b *replyBox) SendUserMessage(_ *actor.PID, m any) {
	_, msg, _ := actor.UnwrapEnvelope(m)
	select {
	case b.ch <- msg:
	default: // only the first reply counts
	}
}

// SendSystemMessage keeps the box's watchers. A Watch that comes after the
// box was removed (a PID caches its process, so it can still reach the box)
// is answered Terminated at once, as the dead-letter process answers it.
func (b *replyBox) SendSystemMessage(_ *actor.PID, m any) {
	switch m := m.(type) {
	case *actor.Watch:
		b.mu.Lock()
		removed := b.removed
		if !removed {
			b.watchers = append(b.watchers, m.Watcher)
		}
		b.mu.Unlock()
		if removed {
			b.terminated(m.Watcher)
		}
	case *actor.Unwatch:
		b.mu.Lock()
		for i, w := range b.watchers {
			if w.Equal(m.Watcher) {
				b.watchers = append(b.watchers[:i], b.watchers[i+1:]...)
				break
			}
		}
		b.mu.Unlock()
	}
}

// watched reports whether something watches the box.
func (b *replyBox) watched() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.watchers) > 0
}

// remove unregisters the box and tells its watchers it is gone.
func (b *replyBox) remove() {
	b.sys.ProcessRegistry.Remove(b.pid)
	b.mu.Lock()
	ws := b.watchers
	b.watchers, b.removed = nil, true
	b.mu.Unlock()
	for _, w := range ws {
		b.terminated(w)
	}
}

// terminated tells watcher that the box is gone.
func (b *replyBox) terminated(watcher *actor.PID) {
	ref, _ := b.sys.ProcessRegistry.Get(watcher) // the dead-letter process when the watcher is gone
	ref.SendSystemMessage(watcher, &actor.Terminated{Who: b.pid, Why: actor.TerminatedReason_Stopped})
}

func (b *replyBox) Stop(*actor.PID) {}

// askWork sends msg about workID to the master of the work's shard and
// waits for the reply, at most the ask timeout and never past ctx.
func (c *Client) askWork(ctx context.Context, workID string, msg any) (any, error) {
	return c.askTo(ctx, c.master.ForWork(workID), msg, c.cfg.askTimeout)
}

// askTo sends msg to the master that route m reaches and waits for the
// reply, at most timeout (a held feed read waits longer) and never past
// ctx.
func (c *Client) askTo(ctx context.Context, m route.Master, msg any, timeout time.Duration) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pid, err := c.resolve(ctx, m)
	if err != nil {
		return nil, err
	}
	callersDeadline := false // the caller's ctx ends before the ask timeout
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left < timeout {
			if left <= 0 {
				return nil, context.DeadlineExceeded
			}
			timeout, callersDeadline = left, true
		}
	}
	box, err := c.takeBox()
	if err != nil {
		return nil, err
	}
	answered := false
	defer func() { c.putBox(box, answered) }()
	self := box.pid
	gone := make(chan struct{}, 1)
	stopGone := m.AfterGone(pid, func() {
		select {
		case gone <- struct{}{}:
		default:
		}
	})
	defer stopGone()
	c.sys.Root.RequestWithCustomSender(pid, msg, self)
	box.timer.Reset(timeout)
	defer box.timer.Stop() // before putBox, deferred earlier, hands the box on
	select {
	case res := <-box.ch:
		answered = true
		if _, dead := res.(*actor.DeadLetterResponse); dead {
			m.Forget(pid)
			return nil, fmt.Errorf("frontend: %w: %s is gone (dead letter)", route.ErrNoMaster, pid)
		}
		return res, nil
	case <-gone:
		return nil, fmt.Errorf("frontend: %w: %w (the node of %s left the cluster)", route.ErrNoMaster, errMasterGone, pid)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-box.timer.C:
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !callersDeadline {
			// The master did not answer within the ask timeout: the next
			// attempt looks it up again. (When the caller's shorter deadline
			// bounded the wait, that says nothing about the master.)
			m.Forget(pid)
		}
		return nil, fmt.Errorf("%w (ask timeout %v, master %s)", ErrTimeout, timeout, pid)
	}
}

// resolve finds the master of route m: at once when the route knows it
// (Master.Cached), else by Resolve bounded by the ask timeout. Errors are
// ctx's, or wrap route.ErrNoMaster.
func (c *Client) resolve(ctx context.Context, m route.Master) (*actor.PID, error) {
	if pid, ok := m.Cached(); ok {
		return pid, nil
	}
	rctx, cancel := context.WithTimeout(ctx, c.cfg.askTimeout)
	defer cancel()
	pid, err := m.Resolve(rctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("frontend: %w", err) // wraps route.ErrNoMaster
	}
	return pid, nil
}

// takeBox returns a registered reply address: a kept one, or a new one.
func (c *Client) takeBox() (*replyBox, error) {
	select {
	case b := <-c.boxes:
		select { // empty by the rule above; a stray message is no answer of this ask
		case <-b.ch:
		default:
		}
		return b, nil
	default:
	}
	b := &replyBox{ch: make(chan any, 1), timer: time.NewTimer(time.Hour), sys: c.sys}
	b.timer.Stop()
	reg := c.sys.ProcessRegistry
	pid, ok := reg.Add(b, "frontend-ask$"+reg.NextId())
	if !ok {
		return nil, fmt.Errorf("%w: could not register a reply address", ErrUnexpectedReply)
	}
	b.pid = pid
	return b, nil
}

// putBox keeps b for the next ask when its ask got its answer, nothing
// watches it and the Client keeps boxes, and removes it otherwise.
func (c *Client) putBox(b *replyBox, answered bool) {
	if answered && c.boxes != nil && !b.watched() {
		select {
		case c.boxes <- b:
			return
		default:
		}
	}
	b.remove()
}

// Submit is Client.Submit without keeping a client: it sends w to master
// until acknowledged, rejected for good, or ctx ends.
func Submit(ctx context.Context, sys *actor.ActorSystem, master route.Master, w *messages.Work, opts ...Option) error {
	c, err := NewClient(sys, master, opts...)
	if err != nil {
		return err
	}
	c.boxes = nil // a client for one call leaves no reply address behind
	return c.Submit(ctx, w)
}
