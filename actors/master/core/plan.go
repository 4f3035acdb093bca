package core

import (
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

// The master's decisions that take more than one step, as pure functions
// of the state and the time: each applies the events it decides to the
// state and returns them, for Master to journal, with what to send.

// dispatchPlan is what planDispatch decides for one request for work.
type dispatchPlan struct {
	events []proto.Message  // already applied to the state; persist in order
	works  []*messages.Work // to send to the worker, in order
	wakeAt time.Time        // when to look again for idle workers; zero: no need
	short  bool             // fewer works than asked: the worker still wants work
	// keyed: a work with a concurrency key is among works; its hand-out
	// is sent once its WorkStarted is durable (keys.go).
	keyed bool
}

// start applies the hand-out of work id to workerID and records it: in the
// WorksStarted that the previous hand-out began or joined, so that the
// consecutive hand-outs of one request are one journal record; a lone one
// stays a WorkStarted.
func (p *dispatchPlan) start(s *WorkState, id, workerID string, at int64) {
	ev := &messages.WorkStarted{WorkId: id, WorkerId: workerID, AtUnixNano: at}
	if err := s.Apply(ev); err != nil {
		panic(err) // a WorkStarted always applies
	}
	if n := len(p.events); n > 0 {
		switch last := p.events[n-1].(type) {
		case *messages.WorksStarted:
			last.WorkIds = append(last.WorkIds, id)
			return
		case *messages.WorkStarted:
			p.events[n-1] = &messages.WorksStarted{WorkIds: []string{last.GetWorkId(), id}, WorkerId: workerID, AtUnixNano: at}
			return
		}
	}
	p.events = append(p.events, ev)
}

// planDispatch picks up to n ready works for worker workerID among the job
// types accepts allows, honouring the per-type limiters: expired work is
// made dead (WorkExpired), a throttled type is skipped until its limiter
// allows, each hand-out is a WorkStarted.
func planDispatch(s *WorkState, limiters map[string]DispatchLimiter, accepts func(string) bool,
	workerID string, n int, now time.Time) dispatchPlan {
	var p dispatchPlan
	wake := func(t time.Time) {
		if p.wakeAt.IsZero() || t.Before(p.wakeAt) {
			p.wakeAt = t
		}
	}
	apply := func(ev proto.Message) {
		if err := s.Apply(ev); err != nil {
			panic(err) // only events WorkState knows are planned
		}
		p.events = append(p.events, ev)
	}
	var throttled map[string]bool
	accept := func(jt string) bool { return (accepts == nil || accepts(jt)) && !throttled[jt] }
	s.beforeDispatch(now)
	for len(p.works) < n {
		work := s.nextReady(now, accept)
		if work == nil {
			break
		}
		if dl := work.deadline(); dl != 0 && dl <= now.UnixNano() {
			apply(&messages.WorkExpired{WorkId: work.id, AtUnixNano: now.UnixNano(), JobType: work.jobType,
				Reason: "deadline of the submitter passed before the work was started"})
			continue
		}
		if ok, at := s.mayStart(work, now); !ok {
			if !at.IsZero() {
				wake(at)
			}
			continue
		}
		if lim := limiters[work.jobType]; lim != nil {
			if ok, retry := lim.Reserve(now); !ok {
				if throttled == nil {
					throttled = make(map[string]bool)
				}
				throttled[work.jobType] = true
				wake(now.Add(max(retry, time.Millisecond)))
				continue
			}
		}
		p.start(s, work.id, workerID, now.UnixNano())
		// A new message (the entry keeps its fields), with the attempt
		// the start just counted.
		w := work.toWork()
		w.Attempt = work.attempts
		p.keyed = p.keyed || work.concurrencyKey() != ""
		p.works = append(p.works, w)
	}
	if len(s.keys.rateWait) > 0 {
		// A key freed a slot while its rate's window was full
		// (unparkFreed): look again when the window opens.
		if at := s.keys.nextRateOpen(now); !at.IsZero() {
			wake(at)
		}
	}
	p.short = len(p.works) < n
	if p.short {
		if at, ok := s.NextReadyAt(now); ok {
			wake(at)
		}
	}
	return p
}

// planTimeouts times out the overdue works (the events are WorkerTimedOut,
// retried or dead by policy).
func planTimeouts(s *WorkState, policy Policy, overdue []Running, now time.Time) (events []proto.Message) {
	for _, r := range overdue {
		if ev, ok := s.TimeoutEvent(policy, r.WorkID, r.WorkerID, now); ok {
			_ = s.Apply(ev) // a WorkerTimedOut always applies
			events = append(events, ev)
		}
	}
	return events
}

// planCleanup times out the overdue works (planTimeouts) and forgets
// finished work older than the retention, or the oldest beyond limit
// finished works (FinishedForgotten). early counts the works forgotten only
// for the limit.
func planCleanup(s *WorkState, policy Policy, overdue []Running, retention time.Duration, limit int, now time.Time) (events []proto.Message, early int) {
	events = planTimeouts(s, policy, overdue, now)
	before := now.Add(-retention).UnixNano()
	if cut, ok := s.limitCut(limit); ok && cut > before {
		// The event keeps its form (a time): replay forgets the same works,
		// and an older master reads it.
		finished := s.counts.Done + s.counts.Dead + s.counts.Cancelled
		ev := &messages.FinishedForgotten{BeforeUnixNano: cut}
		_ = s.Apply(ev)
		early = finished - (s.counts.Done + s.counts.Dead + s.counts.Cancelled)
		return append(events, ev), early
	}
	if at, ok := s.OldestFinishedAt(); ok && at < before {
		ev := &messages.FinishedForgotten{BeforeUnixNano: before}
		_ = s.Apply(ev)
		events = append(events, ev)
	}
	return events, 0
}
