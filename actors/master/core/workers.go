package core

import (
	"sort"
	"time"

	"github.com/foreman-actors/foreman/messages"
)

// workerInfo is what the master knows of a registered worker. It is not
// journaled: workers re-register after a master restarts.
type workerInfo struct {
	id       string
	pid      *messages.PID
	types    map[string]struct{} // nil: any job type
	lastSeen time.Time
	// wanting is set when the worker asked for more work than it got; it
	// is told WorkIsReady (once) when work becomes ready.
	wanting bool
}

func (w *workerInfo) accepts(jobType string) bool {
	if w.types == nil {
		return true
	}
	_, ok := w.types[jobType]
	return ok
}

// workerRegistry holds the registered workers. Pure: time is an argument.
type workerRegistry struct {
	byID    map[string]*workerInfo
	wanting map[string]*workerInfo // the workers with wanting set
}

func newWorkerRegistry() *workerRegistry {
	return &workerRegistry{byID: make(map[string]*workerInfo), wanting: make(map[string]*workerInfo)}
}

// setWanting sets w.wanting and keeps the wanting set in step.
func (r *workerRegistry) setWanting(w *workerInfo, wanting bool) {
	w.wanting = wanting
	if wanting {
		r.wanting[w.id] = w
	} else {
		delete(r.wanting, w.id)
	}
}

// register records a RegisterWorker; it reports whether the worker is new.
func (r *workerRegistry) register(id string, pid *messages.PID, types []string, now time.Time) (*workerInfo, bool) {
	w, ok := r.byID[id]
	if !ok {
		w = &workerInfo{id: id}
		r.byID[id] = w
	}
	if pid != nil {
		w.pid = pid
	}
	w.types = nil
	if len(types) > 0 {
		w.types = make(map[string]struct{}, len(types))
		for _, t := range types {
			w.types[t] = struct{}{}
		}
	}
	w.lastSeen = now
	return w, !ok
}

func (r *workerRegistry) get(id string) *workerInfo { return r.byID[id] }

func (r *workerRegistry) remove(id string) {
	delete(r.byID, id)
	delete(r.wanting, id)
}

// stale returns the ids of workers not heard from since now-deadAfter for
// which busy reports false, sorted.
func (r *workerRegistry) stale(now time.Time, deadAfter time.Duration, busy func(id string) bool) []string {
	var out []string
	limit := now.Add(-deadAfter)
	for id, w := range r.byID {
		if w.lastSeen.Before(limit) && !busy(id) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// readyToTell returns the wanting workers that can run a ready job at now,
// marked as no longer wanting (each is told WorkIsReady once, and again
// after its next unmet request), and when to look again for the rest (zero:
// no need).
func (r *workerRegistry) readyToTell(s *WorkState, now time.Time) (told []*workerInfo, wakeAt time.Time) {
	if len(r.wanting) == 0 {
		return nil, time.Time{}
	}
	for _, w := range r.wanting {
		if w.pid != nil && s.nextReady(now, w.accepts) != nil {
			told = append(told, w)
		}
	}
	// In id order: a simulated run sends the same messages each time.
	sort.Slice(told, func(i, j int) bool { return told[i].id < told[j].id })
	for _, w := range told {
		r.setWanting(w, false)
	}
	if len(r.wanting) > 0 {
		if at, ok := s.NextReadyAt(now); ok {
			wakeAt = at
		}
	}
	return told, wakeAt
}

// registered decides what a (re-)registration of w means: a new worker, one
// that wanted work, or an idle one is told WorkIsReady at once when work is
// ready (true), or marked as wanting work.
func (r *workerRegistry) registered(w *workerInfo, isNew bool, s *WorkState, now time.Time) (tell bool) {
	if !isNew && !w.wanting && s.RunningCount(w.id) > 0 {
		return false
	}
	tell = s.nextReady(now, w.accepts) != nil
	r.setWanting(w, !tell)
	return tell
}
