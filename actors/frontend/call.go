package frontend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/foreman-actors/foreman/actors/frontend/core"
	"github.com/foreman-actors/foreman/actors/pids"
	"github.com/foreman-actors/foreman/actors/waiter"
	"github.com/foreman-actors/foreman/messages"
)

// callPollInterval is how often a waiting Call also asks the master for the
// work's status: the outcome message to the waiter is sent once and may be
// lost with a connection, and a master keeps a bounded number of waiters
// per work (a Call with the id of an unfinished work adds its own).
const callPollInterval = core.DefaultPollInterval

// Call is one work submitted with its caller's interest (seed 003 across
// the cluster): the Work's waiter is a waiter.Interest living as long as the
// call's ctx, so a worker anywhere asks it before starting the job. When
// ctx ends before the job starts, the job is not started; when it ends while
// the job runs, the job's ctx is cancelled; either way the work ends
// CANCELLED, unless another Call (or POST /work?wait=) of the same work id
// still waits: a work is skipped only once every caller waiting for it has
// gone. The master sends the interest the outcome once durable.
//
// Make one with Client.NewCall and Start, or Client.Call; read the outcome
// with Done, Wait or Poll; end it with Close (or Detach to let the job go
// on without a waiter). A Call is safe for concurrent use.
type Call struct {
	c        *Client
	gone     <-chan struct{} // the call's ctx's Done: the caller left
	work     *messages.Work
	interest *waiter.Interest

	once     sync.Once
	released sync.Once            // Detach released the interest: Close leaves it
	detached bool                 // set inside released
	res      *messages.WorkResult // set once the outcome is known
	done     chan struct{}        // closed when res is set
}

// NewCall prepares the call of w bound to ctx: the returned Call's Work is a
// copy of w whose waiter is the call's interest. Nothing is sent until
// Start.
func (c *Client) NewCall(ctx context.Context, w *messages.Work) *Call {
	in := waiter.NewInterest(ctx, c.sys)
	work := messages.CloneWork(w)
	if work == nil {
		work = &messages.Work{}
	}
	work.Waiter = pids.Wire(in.PID())
	call := &Call{c: c, gone: ctx.Done(), work: work, interest: in, done: make(chan struct{})}
	go call.watch()
	return call
}

// Call submits w with its caller's interest (NewCall then Start); ctx is
// the caller's: see Call. The returned Call must be closed.
func (c *Client) Call(ctx context.Context, w *messages.Work) (*Call, error) {
	call := c.NewCall(ctx, w)
	if err := call.Start(ctx); err != nil {
		call.Close()
		return nil, err
	}
	return call, nil
}

// Do submits w, waits for its outcome and returns it: the seed's
// doTheWork(work)(timeout): Future[Result] across the cluster. ctx is the
// caller's interest: when it ends first, Do returns its error and the job is
// not started, or its ctx is cancelled (the work ends CANCELLED). A DEAD
// work returns its outcome and an error wrapping ErrWorkDead; a CANCELLED
// one, ErrWorkCancelled.
func (c *Client) Do(ctx context.Context, w *messages.Work) (*messages.WorkResult, error) {
	call, err := c.Call(ctx, w)
	if err != nil {
		return nil, err
	}
	defer call.Close()
	return call.Wait(ctx)
}

// Work returns the submitted work, with its waiter set.
func (call *Call) Work() *messages.Work { return call.work }

// Start submits the call's work (Client.Submit: until acknowledged,
// rejected for good, or ctx ends).
func (call *Call) Start(ctx context.Context) error {
	if call.work.GetWorkId() == "" {
		return fmt.Errorf("%w: the work id is empty; give every job a unique id", ErrInvalidWork)
	}
	if err := call.c.Submit(ctx, call.work); !errors.Is(err, ErrDuplicate) {
		return err
	}
	// A duplicate by unique key: the master made the call's waiter one of
	// the holder's callers, so the call gets the holder's outcome.
	return nil
}

// watch hands the interest's outcome to the call.
func (call *Call) watch() {
	select {
	case r := <-call.interest.Result():
		call.set(r)
	case <-call.done:
	}
}

func (call *Call) set(r *messages.WorkResult) {
	call.once.Do(func() {
		call.res = r
		close(call.done)
	})
}

// Done is closed once the outcome is known (see Poll).
func (call *Call) Done() <-chan struct{} { return call.done }

// Poll returns the outcome if it is known.
func (call *Call) Poll() (*messages.WorkResult, bool) {
	select {
	case <-call.done:
		return call.res, true
	default:
		return nil, false
	}
}

// Wait waits for the outcome until ctx ends (ctx may be shorter than the
// call's own: the call goes on). It returns the outcome, with an error
// wrapping ErrWorkDead or ErrWorkCancelled when the work did not complete,
// or ctx's error. Every callPollInterval it also asks the master for the
// work's status, in case the outcome message was lost.
func (call *Call) Wait(ctx context.Context) (*messages.WorkResult, error) {
	t := time.NewTicker(callPollInterval)
	defer t.Stop()
	for {
		select {
		case <-call.done:
			return call.res, call.outcomeErr(ctx)
		case <-ctx.Done():
			if r, ok := call.Poll(); ok { // the outcome won the race
				return r, call.outcomeErr(ctx)
			}
			return nil, ctx.Err()
		case <-t.C:
			call.pollStatus(ctx)
		}
	}
}

// outcomeErr is the known outcome's error for a Wait with ctx. A work
// CANCELLED once ctx has ended was most likely cancelled because of it (Do
// waits with the call's own ctx), and on a busy machine the outcome can
// arrive before the waiting goroutine sees ctx end: the error then wraps
// ctx's too, so that errors.Is(err, context.Canceled) holds either way.
func (call *Call) outcomeErr(ctx context.Context) error {
	err := outcomeErr(call.res)
	if call.res.GetStatus() != messages.WorkStatus_WORK_STATUS_CANCELLED {
		return err
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%w (%w)", err, ctxErr)
	}
	return err
}

// pollStatus asks the master for the work's status once and settles the
// call if it finished.
func (call *Call) pollStatus(ctx context.Context) {
	st, err := call.c.WorkStatus(ctx, call.work.GetWorkId())
	if err != nil {
		return
	}
	if r, final := core.FinalResult(st); final {
		call.set(r)
	}
}

// Detach lets the job go on without its caller: the interest keeps saying
// yes (waiter.Interest.Release) and the master forgets the work's waiter
// (DetachWaiter), so workers no longer ask. Call Close afterwards as usual.
func (call *Call) Detach(ctx context.Context) error {
	call.released.Do(func() {
		call.detached = true
		call.interest.Release()
	})
	res, err := call.c.askWork(ctx, call.work.GetWorkId(), &messages.DetachWaiter{WorkId: call.work.GetWorkId()})
	if err != nil {
		return fmt.Errorf("frontend: detach the waiter of %q: %w", call.work.GetWorkId(), err)
	}
	switch r := res.(type) {
	case *messages.Ack:
		return nil
	case *messages.WorkRejected:
		return &RejectedError{WorkID: call.work.GetWorkId(), Code: r.GetCode(), Reason: r.GetReason()}
	default:
		return fmt.Errorf("%w: %T answering DetachWaiter %q", ErrUnexpectedReply, res, call.work.GetWorkId())
	}
}

// Close ends the call. While the call's ctx is live (the caller got what it
// wanted, or detached) the interest stops at once; once ctx has ended it is
// left alone: it is telling the workers that the caller left, and stops by
// itself after its linger.
func (call *Call) Close() {
	call.released.Do(func() {}) // after this, detached no longer changes
	if !call.callerGone() && !call.detached {
		call.interest.Close()
	}
	call.once.Do(func() { close(call.done) }) // ends watch; res stays nil
}

// callerGone reports whether the call's ctx has ended.
func (call *Call) callerGone() bool {
	select {
	case <-call.gone:
		return true
	default:
		return false
	}
}

// outcomeErr is the error of an outcome that is not DONE.
func outcomeErr(r *messages.WorkResult) error {
	switch r.GetStatus() {
	case messages.WorkStatus_WORK_STATUS_DEAD:
		return fmt.Errorf("%w: work %q: %s", ErrWorkDead, r.GetWorkId(), r.GetError())
	case messages.WorkStatus_WORK_STATUS_CANCELLED:
		return fmt.Errorf("%w: work %q: %s", ErrWorkCancelled, r.GetWorkId(), r.GetError())
	case messages.WorkStatus_WORK_STATUS_DONE:
		return nil
	}
	if r == nil {
		return errors.New("frontend: the call was closed before its outcome")
	}
	return nil
}
