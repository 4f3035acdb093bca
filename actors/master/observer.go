package master

import (
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/master/core"
)

// Observer is told the master's durable facts, for metrics. Its methods run
// on the master's goroutine, so they must be quick and must not block; they
// are never called concurrently for one master. Embed NopObserver to
// implement only some of them.
type Observer interface {
	// Recovered: the master of stream serves, with this journal epoch
	// (once per activation, and after each re-sync).
	Recovered(stream string, epoch int64)
	// Durable: ev (a journal event such as *messages.WorkAccepted or
	// *messages.WorkerFailed) of a work of jobType is durable.
	Durable(stream string, ev proto.Message, jobType string)
	// Counts: the master's counts and its idle and busy workers, after each
	// group commit, recovery and worker (de)registration.
	Counts(stream string, c Counts, idle, busy int)
	// Permit: a dispatch limiter (WithDispatchLimiter) of jobType granted a
	// hand-out, or refused one (the work waits in the queue).
	Permit(jobType string, granted bool)
	// Stopped: the master of stream stopped on this node (a handover, a
	// shutdown); its counts no longer belong to this node.
	Stopped(stream string)
}

// NopObserver ignores everything; embed it in partial Observers.
type NopObserver struct{}

// Recovered implements Observer.
func (NopObserver) Recovered(string, int64) {}

// Durable implements Observer.
func (NopObserver) Durable(string, proto.Message, string) {}

// Counts implements Observer.
func (NopObserver) Counts(string, Counts, int, int) {}

// Stopped implements Observer.
func (NopObserver) Stopped(string) {}

// Permit implements Observer.
func (NopObserver) Permit(string, bool) {}

// WithObserver reports the master's durable facts to o (nil: none).
func WithObserver(o Observer) Option { return func(c *config) { c.observer = o } }

// observeDurable reads the job types of events as they are written (a
// finished work may be forgotten by the time they are durable) and returns
// what reports them to the observer once durable: nil without an observer.
func (a *masterActor) observeDurable(events []proto.Message) func() {
	if a.cfg.observer == nil {
		return nil
	}
	events = core.ExpandGroups(events)
	types := make([]string, len(events))
	for i, ev := range events {
		types[i] = a.core.State().JobTypeOf(ev)
	}
	return func() {
		for i, ev := range events {
			a.cfg.observer.Durable(a.cfg.stream, ev, types[i])
		}
	}
}

// observeCounts reports the counts and the workers' idleness.
func (a *masterActor) observeCounts() {
	if a.cfg.observer == nil || !a.rt.Recovered() {
		return
	}
	idle, busy := a.core.WorkerLoad()
	a.cfg.observer.Counts(a.cfg.stream, a.core.State().Counts(), idle, busy)
}

// observeRecovered reports a recovery and the counts it restored.
func (a *masterActor) observeRecovered() {
	if a.cfg.observer == nil {
		return
	}
	a.cfg.observer.Recovered(a.cfg.stream, a.rt.Epoch())
	a.observeCounts()
}

// observedLimiter tells the observer each of a dispatch limiter's answers.
type observedLimiter struct {
	jobType string
	lim     DispatchLimiter
	obs     Observer
}

func (l observedLimiter) Reserve(now time.Time) (bool, time.Duration) {
	ok, wait := l.lim.Reserve(now)
	l.obs.Permit(l.jobType, ok)
	return ok, wait
}

// observeLimiters wraps the dispatch limiters so that the observer sees their
// answers; Props calls it once the options are applied.
func (c *config) observeLimiters() {
	if c.observer == nil {
		return
	}
	for jt, lim := range c.limiters {
		c.limiters[jt] = observedLimiter{jobType: jt, lim: lim, obs: c.observer}
	}
}
