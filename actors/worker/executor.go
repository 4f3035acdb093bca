package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/foreman-actors/foreman/messages"
)

// maxStack bounds the stack trace a PanicError carries.
const maxStack = 2048

// PanicError is the failure of a job function that panicked: the panic
// value and a trimmed stack trace. It matches ErrJobPanicked with errors.Is.
type PanicError struct {
	// Value is what the job passed to panic.
	Value any
	// Stack is the goroutine's stack at the panic, trimmed to 2 KiB.
	Stack string
}

// Error returns the panic value and the stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("%v: %v\n%s", ErrJobPanicked, e.Value, e.Stack)
}

// Unwrap returns ErrJobPanicked.
func (e *PanicError) Unwrap() error { return ErrJobPanicked }

// doWork asks a WorkExecutor to run one job. ctx is the job's ctx, derived
// from the worker's lifetime context: the worker cancels it with a cause,
// ErrCallerGone when the caller leaves or ErrWorkerStopping when the worker
// stops. Never nil.
type doWork struct {
	work *messages.Work
	ctx  context.Context //nolint:containedctx // the message is the executor's call: it carries the job's ctx to fn(ctx, payload) and is dropped when the job returns
}

// runRef is the ctx of the job a slot's executor runs, for passage seq.
type runRef struct {
	seq    uint64
	cancel context.CancelCauseFunc
}

// execResult is a WorkExecutor's answer to doWork (a panic is reported
// through supervision instead, see workerActor.HandleFailure).
type execResult struct {
	slot   int
	workID string
	result []byte
	err    error
}

// executor is the WorkExecutor: a child of the worker that runs one job at a
// time, so the worker stays responsive while the job runs. A job that panics
// panics the executor with a *PanicError; the worker's supervision reports
// WorkFailed and restarts it.
type executor struct {
	slot   int
	reg    *Registry
	tracer trace.Tracer // nil: jobs are not traced
}

func (e *executor) run(ctx context.Context, w *messages.Work) (res []byte, err error) {
	fn, ok := e.reg.Lookup(w.GetJobType())
	if !ok {
		return nil, e.reg.unknownTypeError(w.GetJobType())
	}
	// The worker stopped before the job began: hand it back unstarted.
	if err := ctx.Err(); err != nil && errors.Is(context.Cause(ctx), ErrWorkerStopping) {
		return nil, fmt.Errorf("%w: %w", ErrWorkerStopping, err)
	}
	defer func() {
		// A job cancelled because its caller left reports why.
		if cause := context.Cause(ctx); err != nil && errors.Is(cause, ErrCallerGone) && !errors.Is(err, ErrCallerGone) {
			err = fmt.Errorf("%w (job returned: %w)", cause, err)
		}
	}()
	if dl := w.GetDeadlineUnixNano(); dl > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Unix(0, dl))
		defer cancel()
	}
	var span trace.Span
	if e.tracer != nil && w.GetTraceParent() != "" {
		ctx, span = e.startSpan(ctx, w)
		defer func() { endSpan(span, err) }()
	}
	defer func() {
		if r := recover(); r != nil {
			stack := debug.Stack()
			if len(stack) > maxStack {
				stack = stack[:maxStack]
			}
			pe := &PanicError{Value: r, Stack: string(stack)}
			endSpan(span, pe)
			panic(pe)
		}
	}()
	return fn(ctx, w.GetPayload())
}
